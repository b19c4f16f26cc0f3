//go:build linux

package ingest

import (
	"context"
	"fmt"
	"testing"

	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// spreadRun sends one sender's datagrams (one source address and port) to a report listener
// of n sockets and returns what each worker processed, and the listener's status.
func spreadRun(t *testing.T, l Listener, dgrams [][]byte) (map[int][]telemetry.Report, ListenerStatus) {
	t.Helper()
	rec := newRecorder("rec", nil)
	c, err := New(testConfig(l), Deps{Processors: []Processor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	running := c.Status().Listeners[0]
	send(t, loopback(c.ListenerAddr(0)), dgrams...)
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.got, running
}

// TestSpreadOneExporter: one exporter's single-report datagrams, from one source port,
// reach every worker of a 3-socket listener: each report the worker its key names
// (SpreadHash of its flow, mod 3), so that a flow's reports stay on one worker in the order
// sent. With spread: source they all reach one worker, as before.
func TestSpreadOneExporter(t *testing.T) {
	cfg := gen.DefaultConfig()
	cfg.Format, cfg.Flows = "tr2.0", 300
	dgrams := genStream(t, cfg, 900)
	got, st := spreadRun(t, Listener{Format: "report", Address: "127.0.0.1", Sockets: 3, RcvBuf: 8 << 20}, dgrams)
	if st.Spread != SpreadFlow {
		t.Fatalf("status spread %q, want %q", st.Spread, SpreadFlow)
	}
	total := 0
	for w, rs := range got {
		if len(rs) == 0 {
			continue
		}
		total += len(rs)
		last := map[string]uint32{}
		for _, r := range rs {
			var kb partition.KeyBuf
			key := partition.ReportKey(&kb, &r)
			if want := int(SpreadHash(key) % 3); want != w {
				t.Fatalf("worker %d processed a report of key %x, whose worker is %d", w, key, want)
			}
			if prev, ok := last[string(key)]; ok && r.Seq <= prev {
				t.Fatalf("worker %d: flow %x's report %d after %d", w, key, r.Seq, prev)
			}
			last[string(key)] = r.Seq
		}
	}
	if total != len(dgrams) || len(got[0]) == 0 || len(got[1]) == 0 || len(got[2]) == 0 {
		t.Errorf("%d reports (want %d), per worker %d %d %d: want every worker used", total, len(dgrams), len(got[0]), len(got[1]), len(got[2]))
	}

	got, st = spreadRun(t, Listener{Format: "report", Address: "127.0.0.1", Sockets: 3, Spread: SpreadSource}, dgrams[:100])
	if st.Spread != SpreadSource || len(got) != 1 {
		t.Errorf("spread source: status %q, %d workers used; want %q and 1", st.Spread, len(got), SpreadSource)
	}
}

// TestSpreadGRO: GRO is off by default where the listener spreads by flow (a super-datagram
// would take one exporter's run of flows to one worker), on where it spreads by source or
// has one socket; asking for both is a configuration error naming gro, and asking for GRO
// alone keeps the source's hash.
func TestSpreadGRO(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		l      Listener
		gro    bool
		spread string
		err    string
	}{
		{Listener{Sockets: 2}, false, SpreadFlow, ""},
		{Listener{Sockets: 1}, true, SpreadFlow, ""},
		{Listener{Sockets: 2, Spread: SpreadSource}, true, SpreadSource, ""},
		{Listener{Sockets: 2, GRO: &on}, true, SpreadSource, ""},
		{Listener{Sockets: 2, GRO: &off}, false, SpreadFlow, ""},
		{Listener{Sockets: 2, GRO: &on, Spread: SpreadFlow}, true, SpreadFlow, "listeners[0].gro: true: needs spread: source: with spread flow (the default) GRO would hand one worker a run of an exporter's datagrams, whatever flows they carry"},
		{Listener{Sockets: 2, Spread: "round-robin"}, false, "", `listeners[0].spread: "round-robin": must be flow or source`},
	} {
		gro := "unset"
		if c.l.GRO != nil {
			gro = fmt.Sprint(*c.l.GRO)
		}
		t.Run(fmt.Sprintf("sockets=%d/spread=%q/gro=%s", c.l.Sockets, c.l.Spread, gro), func(t *testing.T) {
			cfg := Config{Listeners: []Listener{c.l}}
			cfg.Listeners[0].Format = "report"
			cfg.FillDefaults()
			err := cfg.Validate()
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l := cfg.Listeners[0]; *l.GRO != c.gro || l.Spread != c.spread {
				t.Errorf("gro %v spread %q, want %v %q", *l.GRO, l.Spread, c.gro, c.spread)
			}
		})
	}
}

// TestSpreadProgramNPT: a v2.x source that moved the UDP destination port into its shim
// (NPT 1) sends every packet of a flow to the INT port; the decoder restores the port, the
// program reads the packet's own: the flows are spread by their source ports, and each
// flow's reports all go to one socket.
func TestSpreadProgramNPT(t *testing.T) {
	dc := wire.DefaultConfig()
	dc.INTPort = 5555
	enc, err := wire.NewEncoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	v := newSpreadVM(t, wire.InputReport, dc, 4)
	byKey := map[string]uint32{}
	var st spreadStats
	used := map[uint32]bool{}
	for flow := 0; flow < 40; flow++ {
		for i := 0; i < 5; i++ {
			r := refReport(uint32(100*flow + i))
			r.Flow.SrcPort, r.Flow.DstPort = uint16(40000+flow), 443
			r.Inner.Encap, r.Inner.EncapArg = telemetry.EncapUDPPort, 1
			r.INT.OrigPort = 443
			r.Hops[0].HopLatency = uint32(1000 + i)
			b, err := enc.Append(nil, &r)
			if err != nil {
				t.Fatal(err)
			}
			v.check(t, b, byKey, &st, fmt.Sprintf("flow %d report %d", flow, i))
			used[v.run(t, b)] = true
		}
	}
	if st.consistent != 200 || len(used) != 4 {
		t.Errorf("%+v, %d sockets used: want 200 reports placed by their flow's packet, on all 4 sockets", st, len(used))
	}
}
