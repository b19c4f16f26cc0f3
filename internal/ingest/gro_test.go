//go:build linux

package ingest

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
	"golang.org/x/sys/unix"
)

// sendGSO sends segs copies of dgram in one UDP_SEGMENT write (the kernel segments it, or
// hands it whole to a UDP_GRO receiver on loopback).
func sendGSO(t *testing.T, addr string, dgram []byte, segs int) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, _ := conn.(*net.UDPConn).SyscallConn()
	var serr error
	rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, len(dgram)) })
	if serr != nil {
		t.Skipf("UDP_SEGMENT: %v", serr)
	}
	if _, err := conn.Write(bytes.Repeat(dgram, segs)); err != nil {
		t.Fatal(err)
	}
}

// TestGRO: ten datagrams sent in one GSO write arrive as one super-datagram with UDP_GRO on
// and are split into ten, each decoded and counted (gro_datagrams 10); with gro: false the
// kernel splits them and none counts as GRO. Either way: 10 packets, 10 reports, no error.
func TestGRO(t *testing.T) {
	good := goodReports(t)[0]
	for _, on := range []bool{true, false} {
		cfg := testConfig(Listener{Format: "report", Address: "127.0.0.1", GRO: &on})
		p := &counting{}
		c, err := New(cfg, Deps{Processors: []Processor{p}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		sendGSO(t, loopback(c.ListenerAddr(0)), good, 10)
		testutil.Eventually(t, 3*time.Second, "10 datagrams received", func() bool { return c.Status().PacketsReceived >= 10 })
		c.Stop(context.Background())
		st := c.Status()
		wantGRO := uint64(0)
		if on {
			wantGRO = 10
		}
		if st.PacketsReceived != 10 || st.BytesReceived != uint64(10*len(good)) || st.ReportsDecoded != 10 ||
			st.DecodeErrors.Total != 0 || st.GRODatagrams != wantGRO || p.total() != 10 {
			t.Errorf("gro %v: packets %d bytes %d reports %d errors %d gro %d processed %d; want 10 %d 10 0 %d 10",
				on, st.PacketsReceived, st.BytesReceived, st.ReportsDecoded, st.DecodeErrors.Total, st.GRODatagrams, p.total(), 10*len(good), wantGRO)
		}
		if on && st.SocketReads != 1 {
			t.Errorf("gro on: %d reads, want 1 (one super-datagram)", st.SocketReads)
		}
	}
}
