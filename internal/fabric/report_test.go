package fabric

import (
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// INT-MD sink reports and INT-XD postcards decode with intake's own decoder to exactly the
// hops the switches saw. A postcard is a TR v2.0 individual report with RepMdBits 0x7f00
// whose reporter hop (the group header's node id) is one egress of the tracer: switch,
// port and time; the inner packet carries no INT. Every packet is both an INT-MD and a
// postcard packet, so the hops of each sink report are exactly the postcards of its packet.
func TestReportsDecodeToSwitchHops(t *testing.T) {
	f := testbed(t, AlgoA, func(c *Config) { c.INTMDEvery, c.PostcardEvery = 1, 1 })
	rec := &recorder{}
	col := &collect{}
	f.SetTracer(rec)
	f.SetSink(col)
	f.RunVirtual(int64(300 * time.Millisecond))
	f.StopTraffic()
	f.RunVirtual(int64(400 * time.Millisecond)) // drain: every packet reaches its host
	rt := newRoundTrip(t)
	type egressKey struct {
		sw, port uint8
		ct       int64
	}
	seen := map[egressKey]bool{}
	for _, ev := range rec.evs {
		seen[egressKey{ev.sw, ev.port, ev.ct}] = true
	}
	type hopKey struct {
		node, in, out uint32
		its, ets      uint64
	}
	key := func(h *telemetry.Hop) hopKey {
		return hopKey{h.NodeID, h.IngressPort, h.EgressPort, h.IngressTS, h.EgressTS}
	}
	postcards := map[hopKey]int{}
	var sinks [][]telemetry.Hop
	for i := range col.reports {
		got := rt.do(t, wire.InputReport, &col.reports[i], "report", i)
		if got.Format != telemetry.FormatTR20 || got.Inner.Link != telemetry.LinkEthernet || got.Has&telemetry.HasFlow == 0 {
			t.Fatalf("report %d: %v, inner %+v", i, got.Format, got.Inner)
		}
		if !got.ReporterHop { // INT-MD sink report
			if got.INT.Version != telemetry.INT2x || got.TR.MDBits != 0 || got.NHops == 0 {
				t.Fatalf("sink report %d: INT %+v, RepMdBits %#x, %d hops", i, got.INT, got.TR.MDBits, got.NHops)
			}
			sinks = append(sinks, append([]telemetry.Hop(nil), got.HopList()...))
			continue
		}
		h := &got.Hops[0]
		if got.NHops != 1 || got.TR.MDBits != 0x7f00 || got.INT.Version != telemetry.INTNone || h.NodeID != got.NodeID || h.Fields != 0x07ff {
			t.Fatalf("postcard %d: %d hops, RepMdBits %#x, INT %v, node %d/%d, fields %#x", i, got.NHops, got.TR.MDBits, got.INT.Version, h.NodeID, got.NodeID, h.Fields)
		}
		if !seen[egressKey{uint8(h.NodeID), uint8(h.EgressPort), int64(h.EgressTS)}] {
			t.Fatalf("postcard %d: switch %d port %d at %d: no such egress", i, h.NodeID, h.EgressPort, h.EgressTS)
		}
		// I flag: every hop but the last one (whose egress faces a host).
		toHost := f.egressOf(uint8(h.NodeID), uint8(h.EgressPort)).toHost
		if (got.Flags&telemetry.FlagIntermediate != 0) == toHost {
			t.Fatalf("postcard %d: flags %v at a port toward a host: %v", i, got.Flags, toHost)
		}
		postcards[key(h)]++
	}
	st := f.Stats()
	if len(sinks) == 0 || uint64(len(sinks)) != st.Sent || st.Delivered != st.Sent || st.Postcards != st.PacketHops {
		t.Fatalf("%d sink reports; stats %+v", len(sinks), st)
	}
	for i, hops := range sinks {
		for k := range hops {
			h := &hops[k]
			if postcards[key(h)] == 0 {
				t.Fatalf("sink report %d hop %d %+v: no postcard", i, k, *h)
			}
			postcards[key(h)]--
			if k > 0 && h.EgressTS > hops[k-1].EgressTS {
				t.Fatalf("sink report %d: hops not newest first", i)
			}
		}
	}
	for k, n := range postcards {
		if n != 0 {
			t.Fatalf("postcard %+v: %d left over after matching the sink reports", k, n)
		}
	}
}
