//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestDTAStoresSurviveKill9 runs serve as a separate process, writes Key-Writes and
// Key-Increments into its stores over UDP, kills it with SIGKILL once it has processed them,
// and reads every key back from the store directory (intake query --store): the stores live
// in mapped files, so a kill loses at most the writes in flight (docs/dta.md), and these were not.
func TestDTAStoresSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	s := startServeChild(t, dir, "")

	const n = 300
	send := collectortest.ReportSender(t, s.udp, wire.DefaultConfig())
	for i := 0; i < n; i++ {
		kw := collectortest.DTAReport(telemetry.DTAKeyWrite)
		kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = 2, 4, 4
		binary.BigEndian.PutUint32(kw.DTA.Key[:], uint32(1000+i))
		binary.BigEndian.PutUint32(kw.DTA.Data[:], uint32(0xabc00000+i))
		ki := collectortest.DTAReport(telemetry.DTAKeyIncrement)
		ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 2, 4, uint64(i+1)
		binary.BigEndian.PutUint32(ki.DTA.Key[:], 77)
		send(kw)
		send(ki)
		if i%50 == 49 {
			time.Sleep(5 * time.Millisecond) // stay well below the socket's buffer
		}
	}
	s.waitDecoded(t, 2*n)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited

	lost := 0
	for i := 0; i < n; i++ {
		m := queryJSON(t, "kw", "--store", dir, fmt.Sprint(1000+i))
		if m["status"] != "found" || m["value"] != fmt.Sprintf("0x%08x", 0xabc00000+i) {
			lost++
			if lost <= 3 {
				t.Errorf("key %d after kill -9: %v", 1000+i, m)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d Key-Writes lost by kill -9", lost, n)
	}
	if m := queryJSON(t, "ki", "--store", dir, "77"); m["count"] != float64(n*(n+1)/2) {
		t.Errorf("Key-Increment after kill -9: %v, want count %d", m, n*(n+1)/2)
	}
}
