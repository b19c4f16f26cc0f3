package gen

import (
	"flag"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/telemetry"
)

// detectRun is what a detector made of a stream: INTCollector's reduction accounting and
// when the first path change and the first crossing above a level came, in generated time.
type detectRun struct {
	reports, values     uint64 // M_all
	events, periodic    uint64 // values exported: events and periodic pushes
	byKind              map[event.Kind]uint64
	firstPath, firstAbv time.Duration // -1: none
}

func (r *detectRun) reduction() float64 { return float64(r.values) / float64(r.events+r.periodic) }

// runDetector walks the first n reports of c's stream (one a datagram) through a detector
// at its defaults plus intake demo's detect.above.queue_occupancy (BuildUpLevel), each
// received at its generated time, with a periodic push every export.period (10 s, the
// default) as the export pipeline counts it.
func runDetector(t *testing.T, c Config, n uint64) detectRun {
	t.Helper()
	cfg := detect.DefaultConfig()
	cfg.Above = detect.Levels{"queue_occupancy": BuildUpLevel}
	bus := &event.Bus{}
	cons := bus.Subscribe("t", 1<<20)
	d := detect.New(cfg, detect.Deps{Bus: bus})
	g := mustNew(t, c)
	run := detectRun{byKind: map[event.Kind]uint64{}, firstPath: -1, firstAbv: -1}
	buf := make([]event.Event, 4096)
	drain := func() {
		for k := cons.Poll(buf); k > 0; k = cons.Poll(buf) {
			for _, e := range buf[:k] {
				run.events++
				run.byKind[e.Kind]++
				at := time.Duration(e.Time)
				if e.Kind == event.KindPathChange && run.firstPath < 0 {
					run.firstPath = at
				}
				if e.Kind == event.KindAbove && run.firstAbv < 0 {
					run.firstAbv = at
				}
			}
		}
	}
	const period = int64(10 * time.Second)
	nextPush := period
	err := g.Walk(n, func(i uint64, _ []byte, rs []telemetry.Report) error {
		now := int64(i) * int64(c.Interval)
		for now >= nextPush {
			drain()
			run.periodic += uint64(d.Snapshot(nextPush, func(*event.Event) {}))
			nextPush += period
		}
		for j := range rs {
			rs[j].RecvTime = now
			d.Process(0, &rs[j])
		}
		if i%1024 == 0 {
			drain()
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	drain()
	if cons.Overflow() != 0 {
		t.Fatalf("event ring overflowed by %d", cons.Overflow())
	}
	d.Flush(0)
	st := d.Stats()
	run.reports, run.values = st.Reports, st.Values
	return run
}

// TestNetworkModel runs the network model (the default) at intake demo's rate (2000
// reports a second of generated time) for 70 s through a detector at its defaults, with
// gen's 64 flows and the demo's 200, for three seeds: the reduction factor is at least 100,
// and the first minute has a path change and a queue above BuildUpLevel. The same seed
// gives the same run.
func TestNetworkModel(t *testing.T) {
	for _, tc := range []struct {
		flows int
		seed  uint64
	}{{64, 1}, {200, 1}, {200, 2}, {200, 3}} {
		c := DefaultConfig()
		c.Fresh, c.Flows, c.Seed, c.Interval = true, tc.flows, tc.seed, 500*time.Microsecond
		run := runDetector(t, c, 70*2000)
		t.Logf("flows %d seed %d: M_all %d, events %d %v, periodic %d: reduction %.1f; first path change %v, first above %v",
			tc.flows, tc.seed, run.values, run.events, run.byKind, run.periodic, run.reduction(), run.firstPath, run.firstAbv)
		if run.reports != 70*2000 || run.reduction() < 100 {
			t.Errorf("flows %d seed %d: %d reports, reduction factor %.1f, want 140000 and at least 100", tc.flows, tc.seed, run.reports, run.reduction())
		}
		if run.firstPath < 0 || run.firstPath > time.Minute || run.firstAbv < 0 || run.firstAbv > time.Minute {
			t.Errorf("flows %d seed %d: first path change at %v, first queue above %d at %v; want both within a minute",
				tc.flows, tc.seed, run.firstPath, BuildUpLevel, run.firstAbv)
		}
		if tc.seed == 1 {
			if again := runDetector(t, c, 70*2000); !reflect.DeepEqual(again, run) {
				t.Errorf("flows %d seed 1 twice: %+v, then %+v", tc.flows, run, again)
			}
		}
	}
}

// TestNetworkStable: the network model with nothing happening (no burst, build-up or path
// change) raises no event but the new keys at the detector's default thresholds, however
// long it runs: its jitter stays within them, a flow's latency (the sum of its hops')
// included. changeThreshold is the detector's default.
func TestNetworkStable(t *testing.T) {
	def := detect.DefaultConfig()
	for _, m := range []string{"flow_latency", "flow_hop_latency", "queue_occupancy", "queue_congestion", "tx_utilization", "buffer_occupancy"} {
		if def.Change[m] != changeThreshold {
			t.Fatalf("detect's default change threshold of %s is %d; the model's jitter is sized for %d", m, def.Change[m], changeThreshold)
		}
	}
	for _, hops := range []int{1, 5, 7} {
		c := DefaultConfig()
		c.Fresh, c.Hops, c.Fields = true, hops, 9 // every field, buffer occupancy too
		g := mustNew(t, c)
		bus := &event.Bus{}
		cons := bus.Subscribe("t", 1<<16)
		d := detect.New(def, detect.Deps{Bus: bus})
		var b builder
		b.init(g.t, 0)
		for k := range b.sched.next {
			b.sched.next[k] = math.MaxInt64
		}
		var buf []byte
		for i := range 50000 {
			var dg dgram
			var err error
			if buf, dg, err = b.next(buf[:0]); err != nil {
				t.Fatal(err)
			}
			for j := range b.rs[:dg.n] {
				b.rs[j].RecvTime = int64(i)
				d.Process(0, &b.rs[j])
			}
		}
		d.Flush(0)
		st := d.Stats()
		if cons.Overflow() != 0 || st.Events["new_key"] == 0 || st.Events["new_key"] != uint64(cons.Len()) {
			t.Fatalf("%d hops: events %v (%d in the ring, %d lost); want new keys only", hops, st.Events, cons.Len(), cons.Overflow())
		}
	}
}

// TestLabelTimesAdvance: INT-label exports carry the time of their packet, and every export
// is a later packet than the one before, in fresh mode and over a ring's laps (which move
// the clock on by a lap's time): a collector keeping each port's newest item (INT-label
// Algorithm 4) takes every export's items as new. At the demo's pace (an export every 5 ms
// of generated time) each port's label times rise too.
func TestLabelTimesAdvance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fresh    bool
		interval time.Duration
		perPort  bool
	}{
		{"ring", false, time.Microsecond, false},
		{"fresh", true, time.Microsecond, false},
		{"ring-demo-pace", false, 5 * time.Millisecond, true},
		{"fresh-demo-pace", true, 5 * time.Millisecond, true},
	} {
		c := DefaultConfig()
		c.Format, c.Ring, c.Fresh, c.Interval = "int-label", 100, tc.fresh, tc.interval
		g := mustNew(t, c)
		var last uint64
		port := map[[2]uint8]uint64{}
		err := g.Walk(1000, func(i uint64, _ []byte, rs []telemetry.Report) error {
			items := rs[0].LabelList()
			src := items[len(items)-1].IngressTS // newest first: the packet entered at the last item
			if i > 0 && src <= last {
				t.Fatalf("%s: export %d entered at %d, export %d at %d", tc.name, i, src, i-1, last)
			}
			last = src
			for k := range items {
				it := &items[k]
				if it.EgressTS <= it.IngressTS || k+1 < len(items) && it.IngressTS <= items[k+1].EgressTS {
					t.Fatalf("%s: export %d item %d: times out of order: %+v", tc.name, i, k, items)
				}
				p := [2]uint8{it.SwitchID, it.EgressPort}
				if tc.perPort && it.EgressTS <= port[p] {
					t.Fatalf("%s: export %d: switch %d port %d labeled at %d after %d", tc.name, i, p[0], p[1], it.EgressTS, port[p])
				}
				port[p] = it.EgressTS
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFlagsModel: the network model is the default; the draw model's options (--latency,
// --queue, --util, --vary) select the draw model, so that command lines written for it
// (bench ingest --vary 0.01) keep their meaning; --model says so outright.
func TestFlagsModel(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		model string
		vary  float64
	}{
		{nil, ModelNetwork, 1},
		{[]string{"--vary", "0.01"}, ModelDraw, 0.01},
		{[]string{"--latency", "const:5"}, ModelDraw, 1},
		{[]string{"--model", "draw"}, ModelDraw, 1},
		{[]string{"--model", "draw", "--util", "exp:3"}, ModelDraw, 1},
		{[]string{"--model", "network", "--interval", "5ms"}, ModelNetwork, 1},
	} {
		fs := flag.NewFlagSet("gen", flag.ContinueOnError)
		f := AddFlags(fs, DefaultConfig())
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		c, err := f.Config()
		if err != nil || c.Model != tc.model || c.Vary != tc.vary {
			t.Errorf("%v: model %q vary %g (%v); want %q and %g", tc.args, c.Model, c.Vary, err, tc.model, tc.vary)
		}
	}
}
