//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestDTAStoresSurviveKill9 runs serve as a separate process, writes Key-Writes and
// Key-Increments into its stores over UDP, kills it with SIGKILL once it has processed them,
// and reads every key back from the store directory (intake query --store): the stores live
// in mapped files, so a kill loses at most the writes in flight (docs/dta.md), and these were not.
func TestDTAStoresSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(t.TempDir(), "intake.yaml")
	cfg := fmt.Sprintf("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '127.0.0.1:0'}\n"+
		"detect: {enabled: false}\nflowcache: {enabled: false}\nlabel: {enabled: false}\ndta: {data_dir: %s}\n", dir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var udp, httpAddr string
	lines := bufio.NewScanner(stderr)
	reUDP := regexp.MustCompile(`listening for dta on udp (\S+) `)
	reHTTP := regexp.MustCompile(`http on (\S+) `)
	for lines.Scan() && (udp == "" || httpAddr == "") {
		if m := reUDP.FindStringSubmatch(lines.Text()); m != nil {
			udp = m[1]
		}
		if m := reHTTP.FindStringSubmatch(lines.Text()); m != nil {
			httpAddr = m[1]
		}
	}
	if udp == "" || httpAddr == "" {
		t.Fatalf("serve did not say where it listens (udp %q, http %q)", udp, httpAddr)
	}
	go func() { // keep draining stderr so that serve never blocks on it
		for lines.Scan() {
		}
	}()

	const n = 300
	send := reportSender(t, udp, wire.DefaultConfig())
	for i := 0; i < n; i++ {
		kw := dtaReport(telemetry.DTAKeyWrite)
		kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = 2, 4, 4
		binary.BigEndian.PutUint32(kw.DTA.Key[:], uint32(1000+i))
		binary.BigEndian.PutUint32(kw.DTA.Data[:], uint32(0xabc00000+i))
		ki := dtaReport(telemetry.DTAKeyIncrement)
		ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 2, 4, uint64(i+1)
		binary.BigEndian.PutUint32(ki.DTA.Key[:], 77)
		send(kw)
		send(ki)
		if i%50 == 49 {
			time.Sleep(5 * time.Millisecond) // stay well below the socket's buffer
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st struct {
			Reports uint64 `json:"reports_decoded"`
		}
		getJSON(t, "http://"+httpAddr+"/api/v1/status", &st)
		if st.Reports == 2*n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve decoded %d of %d reports", st.Reports, 2*n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

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
