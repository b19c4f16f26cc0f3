package fabric

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// receiveAll reads every conn on a goroutine of its own until it has been idle for 500 ms;
// the function returned waits for that and returns each conn's datagrams, in order.
func receiveAll(conns ...net.PacketConn) func() [][][]byte {
	var mu sync.Mutex
	got := make([][][]byte, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 65536)
			for {
				c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				n, _, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				mu.Lock()
				got[i] = append(got[i], append([]byte(nil), buf[:n]...))
				mu.Unlock()
			}
		}()
	}
	return func() [][][]byte { wg.Wait(); return got }
}

// StartLive for about a second against two loopback sockets: every datagram decodes
// with intake's decoder, the reports to INT-MD paths of the testbed's switches (1, 3 or 5
// hops, every hop a testbed switch, the reporter the last one), the exports to items of
// the testbed's switch ids.
func TestStartLive(t *testing.T) {
	listen := func() net.PacketConn {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.UDPConn).SetReadBuffer(4 << 20)
		return c
	}
	repC, labC := listen(), listen()
	defer repC.Close()
	defer labC.Close()
	received := receiveAll(repC, labC)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	live, err := StartLive(ctx, repC.LocalAddr().String(), labC.LocalAddr().String(), 2000)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	screen := live.Describe()
	if err := live.Wait(); err != nil {
		t.Fatal(err)
	}
	all := received()
	got := map[string][][]byte{"report": all[0], "label": all[1]}

	tb := Testbed(DefaultLink)
	ids := map[uint32]bool{}
	for _, n := range tb.Nodes {
		if n.Kind == Switch {
			ids[uint32(n.ID)] = true
		}
	}
	if len(ids) != 12 {
		t.Fatalf("testbed switch ids %v", ids)
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var rd wire.Reader
	var r telemetry.Report
	decodeAll := func(in wire.Input, pkt []byte, each func()) {
		rd.Reset(dec, in, pkt)
		n := 0
		for {
			err := rd.Next(&r)
			if errors.Is(err, wire.Done) {
				break
			}
			if err != nil {
				t.Fatalf("decode %x: %v", pkt, err)
			}
			each()
			n++
		}
		if n == 0 {
			t.Fatalf("datagram %x: no report", pkt)
		}
	}
	// 2000 packets/s for a second: about 2000 reports, whatever the scheduler does.
	if n := len(got["report"]); n < 500 || n > 4000 {
		t.Fatalf("%d report datagrams", n)
	}
	for _, pkt := range got["report"] {
		decodeAll(wire.InputReport, pkt, func() {
			hops := r.HopList()
			if r.Format != telemetry.FormatTR20 || r.INT.Version != telemetry.INT2x || (len(hops) != 1 && len(hops) != 3 && len(hops) != 5) {
				t.Fatalf("report %v, INT %v, %d hops", r.Format, r.INT.Version, len(hops))
			}
			if r.NodeID != hops[0].NodeID {
				t.Fatalf("reporter %d is not the last hop %d", r.NodeID, hops[0].NodeID)
			}
			for _, h := range hops {
				if !ids[h.NodeID] {
					t.Fatalf("hop of switch %d: not a testbed switch", h.NodeID)
				}
			}
		})
	}
	if n := len(got["label"]); n < 50 {
		t.Fatalf("%d INT-label datagrams", n)
	}
	items := 0
	for _, pkt := range got["label"] {
		decodeAll(wire.InputLabel, pkt, func() {
			if r.Format != telemetry.FormatLabel || r.NLabels == 0 {
				t.Fatalf("export %v with %d items", r.Format, r.NLabels)
			}
			for _, it := range r.LabelList() {
				if !ids[uint32(it.SwitchID)] || it.EgressPort == 0 {
					t.Fatalf("item of switch %d port %d", it.SwitchID, it.EgressPort)
				}
				items++
			}
		})
	}
	for _, want := range []string{"fabric: testbed, 12 switches, 8 servers", "distinct paths in", "coverage by ground truth (per 100ms): last window "} {
		if !strings.Contains(screen, want) {
			t.Fatalf("Describe() = %q: no %q", screen, want)
		}
	}
	if lines := strings.Count(screen, "\n"); lines != 3 {
		t.Fatalf("Describe() has %d lines: %q", lines, screen)
	}
	t.Logf("%d reports, %d exports (%d items)\n%s", len(got["report"]), len(got["label"]), items, screen)

	if _, err := StartLive(context.Background(), "127.0.0.1:1", "127.0.0.1:2", 0); err == nil || err.Error() != "fabric demo: rate 0: must be in (0, 1e6] packets per second" {
		t.Fatalf("rate 0: %v", err)
	}
}
