package detect

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/telemetry"
)

// hop is a test hop: node id and hop latency, plus queue occupancy and tx utilization when
// not zero.
type hop struct {
	node, lat, qocc, tx uint32
}

func report(t0 int64, sport uint16, hops ...hop) *telemetry.Report {
	var r telemetry.Report
	r.Format = telemetry.FormatTR20
	r.Has = telemetry.HasFlow
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = sport, 80, 6
	r.RecvTime = t0
	// hops are given source to sink; the report holds them newest first.
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		th := r.AddHop()
		th.Fields = telemetry.FNodeID | telemetry.FHopLatency
		th.NodeID, th.HopLatency = h.node, h.lat
		if h.qocc != 0 {
			th.Fields |= telemetry.FQueueID | telemetry.FQueueOccupancy
			th.QueueID, th.QueueOccupancy = 1, h.qocc
		}
		if h.tx != 0 {
			th.Fields |= telemetry.FEgressPort | telemetry.FTxUtil
			th.EgressPort, th.TxUtil = 2, h.tx
		}
	}
	return &r
}

// show renders an event compactly: kind scope measurement [switch] prev->value (T).
func show(e *event.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", e.Kind, e.Scope, e.Measurement)
	if e.Measurement.HasSwitch() {
		fmt.Fprintf(&b, " sw%d", e.Key.Switch)
	}
	if e.Measurement == event.FlowPath {
		fmt.Fprintf(&b, " %s", event.AppendPath(nil, e.PathList()))
	} else {
		fmt.Fprintf(&b, " %d->%d", e.Prev, e.Value)
	}
	if e.Kind == event.KindChange || e.Kind == event.KindAbove || e.Kind == event.KindBelow {
		fmt.Fprintf(&b, " T%d", e.Threshold)
	}
	return b.String()
}

func testConfig() Config {
	c := DefaultConfig()
	c.Shards = 4
	c.MaxFlows, c.MaxKeys = 64, 64
	c.Change = map[string]uint64{"flow_hop_latency": 50}
	c.Above = map[string]uint64{"flow_hop_latency": 200}
	return c
}

func drain(c *event.Consumer) []string {
	buf := make([]event.Event, 1024)
	var out []string
	for _, e := range buf[:c.Poll(buf)] {
		out = append(out, show(&e))
	}
	return out
}

func expect(t *testing.T, step string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: events\n  %s\nwant\n  %s", step, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestChangeAndAboveRules feeds one hop latency sequence through the two rules, with values
// exactly at each threshold: |Δ| = T and V = T raise nothing (strict inequalities), and
// V(t1) is the last exported value, not the last seen.
func TestChangeAndAboveRules(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	d := New(testConfig(), Deps{Bus: &bus})
	// Written out explicitly to keep each arithmetic visible.
	type st struct {
		lat  uint32
		want []string
	}
	seq := []st{
		{100, []string{"new_key e2e flow_path 7", "new_key e2e flow_latency 0->100", "new_key switch flow_hop_latency sw7 0->100"}},
		{150, nil}, // |150−100| = 50 = T: nothing
		{151, []string{"change switch flow_hop_latency sw7 100->151 T50"}},
		{120, nil}, // |120−151| = 31
		{200, nil}, // |200−151| = 49, and 200 is the above level itself: not above
		{201, []string{"above switch flow_hop_latency sw7 200->201 T200"}}, // |201−151| = 50: no change
		{202, []string{"change switch flow_hop_latency sw7 151->202 T50"}}, // 51 > 50; still above: no second above
		{200, []string{"below switch flow_hop_latency sw7 202->200 T200"}}, // back to the level: below
		{151, []string{"change switch flow_hop_latency sw7 202->151 T50"}}, // |151−202| = 51
	}
	for i, s := range seq {
		d.Process(0, report(int64(i+1), 1000, hop{node: 7, lat: s.lat}))
		expect(t, fmt.Sprintf("step %d (%d)", i, s.lat), drain(c), s.want...)
	}
	// Thresholds change at run time.
	d.SetThreshold(event.KindChange, event.FlowHopLatency, 0)
	d.Process(0, report(100, 1000, hop{node: 7, lat: 152}))
	expect(t, "T=0", drain(c), "change switch flow_hop_latency sw7 151->152 T0")
	d.ClearThreshold(event.KindChange, event.FlowHopLatency)
	d.Process(0, report(101, 1000, hop{node: 7, lat: 1}))
	expect(t, "off", drain(c))
}

// TestEndToEnd: flow latency is the sum of hop latencies, with change and above rules of its
// own; switch metrics are keyed by (switch, queue) and (switch, port).
func TestEndToEnd(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	cfg := testConfig()
	cfg.Change = map[string]uint64{"flow_latency": 10, "queue_occupancy": 5}
	cfg.Above = map[string]uint64{"flow_latency": 100, "tx_utilization": 90}
	d := New(cfg, Deps{Bus: &bus})
	d.Process(0, report(1, 1, hop{node: 1, lat: 30, qocc: 10, tx: 50}, hop{node: 2, lat: 40}))
	expect(t, "first", drain(c),
		"new_key switch queue_occupancy sw1 0->10",
		"new_key switch tx_utilization sw1 0->50",
		"new_key e2e flow_path 1:2",
		"new_key e2e flow_latency 0->70",
		"new_key switch flow_hop_latency sw1 0->30",
		"new_key switch flow_hop_latency sw2 0->40",
	)
	d.Process(0, report(2, 1, hop{node: 1, lat: 35, qocc: 16, tx: 91}, hop{node: 2, lat: 46}))
	expect(t, "second", drain(c),
		"change switch queue_occupancy sw1 10->16 T5",
		"above switch tx_utilization sw1 50->91 T90",
		"change e2e flow_latency 70->81 T10",
	)
	d.Process(0, report(3, 1, hop{node: 1, lat: 60, qocc: 16, tx: 91}, hop{node: 2, lat: 41}))
	expect(t, "third", drain(c),
		"change e2e flow_latency 81->101 T10",
		"above e2e flow_latency 81->101 T100",
	)
}

// TestPathChange: a new node list raises path_change; switches on both paths keep their
// per-hop state, a switch new to the path is a new key.
func TestPathChange(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	d := New(testConfig(), Deps{Bus: &bus})
	d.Process(0, report(1, 1, hop{node: 1, lat: 10}, hop{node: 2, lat: 20}, hop{node: 3, lat: 30}))
	drain(c)
	d.Process(0, report(2, 1, hop{node: 1, lat: 10}, hop{node: 4, lat: 20}, hop{node: 3, lat: 100}))
	expect(t, "path change", drain(c),
		"path_change e2e flow_path 1:4:3",
		"new_key switch flow_hop_latency sw4 0->20",
		"change switch flow_hop_latency sw3 30->100 T50",
	)
	d.Process(0, report(3, 1, hop{node: 1, lat: 10}, hop{node: 4, lat: 20}, hop{node: 3, lat: 100}))
	expect(t, "same path", drain(c))
	// Reordered and shorter: switch 3 moves from the last position to the first and keeps
	// its state (100, no change); switch 1 moves to the second (10 → 80: a change).
	d.Process(0, report(4, 1, hop{node: 3, lat: 100}, hop{node: 1, lat: 80}))
	expect(t, "reordered path", drain(c),
		"path_change e2e flow_path 3:1",
		"change switch flow_hop_latency sw1 10->80 T50",
	)
	d.Process(0, report(5, 1, hop{node: 3, lat: 151}, hop{node: 1, lat: 80}))
	expect(t, "after reorder", drain(c), "change switch flow_hop_latency sw3 100->151 T50")
}

func TestSeqGapsAndDrops(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	cfg := testConfig()
	cfg.Change = map[string]uint64{"seq_gaps": 0, "drops": 0}
	d := New(cfg, Deps{Bus: &bus})
	rep := func(seq uint32, drop bool) *telemetry.Report {
		var r telemetry.Report
		r.Has = telemetry.HasNodeID | telemetry.HasSeq
		r.NodeID, r.Seq, r.HWID = 9, seq, 2
		if drop {
			r.Flags = telemetry.FlagDrop
			r.Has |= telemetry.HasDropReason
			r.DropReason = 71
		}
		return &r
	}
	d.Process(0, rep(10, false))
	d.Process(0, rep(11, false))
	d.Process(0, rep(14, true))  // 12, 13 missing
	d.Process(0, rep(13, false)) // late: resynchronizes only
	d.Process(0, rep(14, true))
	got := drain(c)
	expect(t, "seq", got,
		"new_key switch seq_gaps sw9 0->0",
		"change switch seq_gaps sw9 0->2 T0",
		"new_key switch drops sw9 0->1",
		"change switch drops sw9 1->2 T0",
	)
}

func TestEvictionAndExpiry(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	cfg := testConfig()
	cfg.Shards, cfg.MaxFlows, cfg.Expire = 1, 2, 10*time.Second
	d := New(cfg, Deps{Bus: &bus})
	sec := int64(time.Second)
	d.Process(0, report(1*sec, 1, hop{node: 1, lat: 10}))
	d.Process(0, report(2*sec, 2, hop{node: 1, lat: 10}))
	d.Process(0, report(3*sec, 1, hop{node: 1, lat: 10})) // flow 1 is now the most recent
	d.Process(0, report(4*sec, 3, hop{node: 1, lat: 10})) // evicts flow 2
	d.Flush(0)
	if st := d.Stats(); st.Flows != 2 || st.EvictedFlows != 1 {
		t.Fatalf("stats %+v, want 2 flows, 1 eviction", st)
	}
	drain(c)
	d.Process(0, report(5*sec, 2, hop{node: 1, lat: 10}))
	// Flow 2 was evicted: it is a new key again, and evicts flow 1 (last updated at 3 s).
	expect(t, "evicted flow returns", drain(c), "new_key e2e flow_path 1", "new_key e2e flow_latency 0->10", "new_key switch flow_hop_latency sw1 0->10")

	var got []string
	n := d.Snapshot(12*sec, func(e *event.Event) { got = append(got, show(e)) })
	// cut 2 s: flows 3 (4 s) and 2 (5 s) are live, 3 values each.
	if n != 6 || len(got) != 6 {
		t.Fatalf("snapshot: %d values %v, want 6", n, got)
	}
	got = nil
	n = d.Snapshot(14500*int64(time.Millisecond), func(e *event.Event) { got = append(got, show(e)) })
	// cut 4.5 s: flow 3 (4 s) expires, flow 2 (5 s) stays.
	expect(t, "expiry", got,
		"expire e2e flow_path 1", "expire e2e flow_latency 0->10", "expire switch flow_hop_latency sw1 0->10",
		"periodic e2e flow_path 1", "periodic e2e flow_latency 0->10", "periodic switch flow_hop_latency sw1 0->10",
	)
	if st := d.Stats(); n != 3 || st.Expired != 1 || st.Flows != 1 || st.EvictedFlows != 2 {
		t.Fatalf("after expiry: %d periodic, stats %+v", n, d.Stats())
	}
}

func TestProcessNoAlloc(t *testing.T) {
	var bus event.Bus
	bus.Subscribe("t", 1<<10)
	d := New(DefaultConfig(), Deps{Bus: &bus})
	r := report(1, 1, hop{1, 10, 5, 5}, hop{2, 20, 5, 5}, hop{3, 30, 5, 5}, hop{4, 40, 5, 5}, hop{5, 50, 5, 5})
	if a := testing.AllocsPerRun(1000, func() { r.RecvTime++; r.Hops[0].HopLatency ^= 0xff; d.Process(0, r) }); a != 0 {
		t.Fatalf("Process: %v allocs per report", a)
	}
}

// BenchmarkProcess is detection plus metric update for a 5-hop report (flow path, flow
// latency, 5 hop latencies, 5 queue occupancies, 5 tx utilizations: 17 values) over 1024
// flows, with an event every 16th report. ns/hop is the per hop-report figure.
func BenchmarkProcess(b *testing.B) { benchProcess(b, 1024) }

// BenchmarkProcessManyFlows is BenchmarkProcess over 32768 flows (detect.max_flows), whose
// state (about 9 MB) does not fit in the caches: most flow lookups miss.
func BenchmarkProcessManyFlows(b *testing.B) { benchProcess(b, 32768) }

// reportGap is the time between two reports' receive times in the benchmarks: 320,000
// reports/s, about what one worker of the 2-core development VM drains, so that LRU ticks
// (sameTick) come as often as they would in a collector at that rate.
const reportGap = 3125

func benchProcess(b *testing.B, flows int) {
	var bus event.Bus
	c := bus.Subscribe("t", 1<<16)
	d := New(DefaultConfig(), Deps{Bus: &bus})
	rs := make([]*telemetry.Report, flows)
	for i := range rs {
		rs[i] = report(1, uint16(i), hop{1, 10, 5, 5}, hop{2, 20, 5, 5}, hop{3, 30, 5, 5}, hop{4, 40, 5, 5}, hop{5, 50, 5, 5})
		rs[i].Flow.Dst[15] = byte(i >> 16)
	}
	buf := make([]event.Event, 1024)
	b.ReportAllocs()
	clk := benchclock.Start(b)
	i := 0
	for b.Loop() {
		r := rs[i&(flows-1)]
		r.RecvTime = int64(i) * reportGap
		if i&15 == 0 {
			r.Hops[2].HopLatency ^= 0x100
		}
		d.Process(0, r)
		if c.Len() > 1<<15 {
			c.Poll(buf)
		}
		i++
	}
	clk.Stop("hop", b.N*5)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/5, "ns/hop")
}

// BenchmarkProcessBatch is BenchmarkProcess handed over 64 reports at a time with one
// receive time per batch, as an ingest worker does (ProcessBatch; Process per report where
// there is none, so that the same benchmark measures a tree without it), over 1024 and
// 32768 flows. cpu-ns/hop is the per hop-report figure on the thread's CPU clock.
func BenchmarkProcessBatch(b *testing.B) {
	for _, flows := range []int{1024, 32768} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) { benchProcessBatch(b, flows) })
	}
}

func benchProcessBatch(b *testing.B, flows int) {
	var bus event.Bus
	c := bus.Subscribe("t", 1<<16)
	d := New(DefaultConfig(), Deps{Bus: &bus})
	tmpl := report(1, 0, hop{1, 10, 5, 5}, hop{2, 20, 5, 5}, hop{3, 30, 5, 5}, hop{4, 40, 5, 5}, hop{5, 50, 5, 5})
	keys := make([]telemetry.FlowKey, flows)
	for i := range keys {
		keys[i] = tmpl.Flow
		keys[i].SrcPort, keys[i].Dst[15] = uint16(i), byte(i>>16)
	}
	const batch = 64
	rs := make([]telemetry.Report, batch)
	for j := range rs {
		rs[j] = *tmpl
	}
	bp, _ := any(d).(interface {
		ProcessBatch(int, []telemetry.Report)
	})
	buf := make([]event.Event, 1024)
	i := 0
	step := func() {
		for j := range rs {
			r := &rs[j]
			r.Flow = keys[(i+j)&(flows-1)]
			r.RecvTime = int64(i/batch+2) * batch * reportGap
			if (i+j)&15 == 0 {
				r.Hops[2].HopLatency ^= 0x100
			}
		}
		if bp != nil {
			bp.ProcessBatch(0, rs)
		} else {
			for j := range rs {
				d.Process(0, &rs[j])
			}
		}
		d.Flush(0)
		for c.Len() > 1<<14 {
			c.Poll(buf)
		}
		i += batch
	}
	for i < flows { // every flow is a known key before the clock starts
		step()
	}
	n := timedSteps(b, step, "hop", batch*5)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*batch*5), "ns/hop")
	st := d.Stats()
	var evs uint64
	for _, v := range st.Events {
		evs += v
	}
	b.ReportMetric(float64(evs)/float64(st.Reports), "events/report")
	b.ReportMetric(float64(st.EvictedFlows)/float64(st.Reports), "evictions/report")
}

// BenchmarkProcessBatchGen is ProcessBatch on the reports a fabric sends: intake gen's
// default stream (4,096 flows over 16 switches, 5 hops of 8 fields, values drawn anew for
// each report; about 4,000 switch keys), decoded as a listener decodes it, 64 reports at a
// time with one receive time per batch. As a worker's batch, the 64 reports are in cache:
// each step copies its reports' flows and hops into them first (that copy is in the
// figure, the same for any detector). cpu-ns/report is on the thread's CPU clock.
func BenchmarkProcessBatchGen(b *testing.B) {
	rs, err := gen.DefaultDecoded(4096, 4*4096)
	if err != nil {
		b.Fatal(err)
	}
	type varying struct {
		seq, node uint32
		flow      telemetry.FlowKey
		hops      [5]telemetry.Hop
	}
	vs := make([]varying, len(rs))
	for i, r := range rs {
		vs[i] = varying{r.Seq, r.NodeID, r.Flow, [5]telemetry.Hop(r.Hops[:5])}
	}
	var bus event.Bus
	sub := bus.Subscribe("t", 1<<16)
	d := New(DefaultConfig(), Deps{Bus: &bus})
	buf := make([]event.Event, 1024)
	const batch = 64
	hot := slices.Clone(rs[:batch])
	i := 0
	step := func() {
		for j := range hot {
			v, r := &vs[(i+j)%len(vs)], &hot[j]
			r.Seq, r.NodeID, r.Flow, r.RecvTime = v.seq, v.node, v.flow, int64(i/batch+2)*batch*reportGap
			copy(r.Hops[:5], v.hops[:])
		}
		d.ProcessBatch(0, hot)
		d.Flush(0)
		for sub.Len() > 1<<14 {
			sub.Poll(buf)
		}
		i += batch
	}
	for i < len(rs) { // every key known before the clock starts
		step()
	}
	timedSteps(b, step, "report", batch)
}

// timedSteps runs step for the benchmark's iterations on the thread's CPU clock, reported
// per unit (per of them a step), and returns how many steps it ran.
func timedSteps(b *testing.B, step func(), unit string, per int) int {
	b.ReportAllocs()
	clk := benchclock.Start(b)
	n := 0
	for b.Loop() {
		step()
		n++
	}
	clk.Stop(unit, n*per)
	return n
}

// BenchmarkProcessBatchParallel is BenchmarkProcessBatch/flows=1024 with every core a
// worker (b.RunParallel), each over flows of its own (as each exporter's reports reach one
// socket) and all over the same five switches, whose keys every report updates: what the
// workers cost each other. ns/report is the wall clock over all workers' reports.
func BenchmarkProcessBatchParallel(b *testing.B) {
	workers := runtime.GOMAXPROCS(0)
	d := New(DefaultConfig(), Deps{Workers: workers})
	bp, _ := any(d).(interface {
		ProcessBatch(int, []telemetry.Report)
	})
	tmpl := report(1, 0, hop{1, 10, 5, 5}, hop{2, 20, 5, 5}, hop{3, 30, 5, 5}, hop{4, 40, 5, 5}, hop{5, 50, 5, 5})
	const flows, batch = 1024, 64
	var next atomic.Int32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1)-1) % workers
		rs := make([]telemetry.Report, batch)
		for j := range rs {
			rs[j] = *tmpl
		}
		for i := 0; pb.Next(); i += batch {
			for j := range rs {
				r := &rs[j]
				r.Flow.SrcPort, r.Flow.Dst[14] = uint16((i+j)&(flows-1)), byte(w)
				r.RecvTime = int64(i/batch+2) * batch * reportGap
				if (i+j)&15 == 0 {
					r.Hops[2].HopLatency ^= 0x100
				}
			}
			if bp != nil {
				bp.ProcessBatch(w, rs)
			} else {
				for j := range rs {
					d.Process(w, &rs[j])
				}
			}
			d.Flush(w)
		}
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/report")
}

// TestSwitchKeyEvictionAndExpiry: switch keys are bounded by max_keys per shard (the least
// recently updated evicted, counted) and expire like flows, each value of an expired key
// reported once with KindExpire.
func TestSwitchKeyEvictionAndExpiry(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	cfg := testConfig()
	cfg.Shards, cfg.MaxKeys, cfg.Expire = 1, 3, 10*time.Second
	cfg.Change = map[string]uint64{"queue_occupancy": 5, "tx_utilization": 5}
	d := New(cfg, Deps{Bus: &bus})
	sec := int64(time.Second)
	// Switch 1: a queue and a port key; switch 2: a queue key. Full at 3 keys.
	d.Process(0, report(1*sec, 1, hop{node: 1, lat: 10, qocc: 7, tx: 50}))
	d.Process(0, report(2*sec, 1, hop{node: 2, lat: 10, qocc: 8}))
	d.Process(0, report(3*sec, 1, hop{node: 1, lat: 10, qocc: 7})) // switch 1's queue is the newest now
	drain(c)
	// Switch 3's queue evicts the least recently updated: switch 1's port (1 s).
	d.Process(0, report(4*sec, 1, hop{node: 3, lat: 10, qocc: 9}))
	d.Process(0, report(5*sec, 1, hop{node: 1, lat: 10, tx: 50}))
	expect(t, "evictions", filter(drain(c), "flow_"),
		"new_key switch queue_occupancy sw3 0->9",
		"new_key switch tx_utilization sw1 0->50", // evicted: new again, evicting switch 2's queue (2 s)
	)
	d.Flush(0)
	if st := d.Stats(); st.Keys != 3 || st.EvictedKeys != 2 || d.residentKeys() != 3 {
		t.Fatalf("stats %+v (%d resident), want 3 keys, 2 evicted", st, d.residentKeys())
	}
	var got []string
	d.Snapshot(14500*int64(time.Millisecond), func(e *event.Event) {
		if e.Measurement != event.FlowPath && e.Measurement != event.FlowLatency && e.Measurement != event.FlowHopLatency {
			got = append(got, show(e))
		}
	})
	// cut 4.5 s: switch 1's queue (3 s) and switch 3's queue (4 s) expire, oldest first.
	expect(t, "expiry", got,
		"expire switch queue_occupancy sw1 0->7",
		"expire switch queue_occupancy sw3 0->9",
		"periodic switch tx_utilization sw1 0->50",
	)
	// The flow (last updated at 5 s) stays.
	if st := d.Stats(); st.Keys != 1 || st.Flows != 1 || st.Expired != 2 || d.residentKeys() != 1 {
		t.Errorf("after expiry: stats %+v (%d keys resident), want 1 key, 1 flow, 2 expired", st, d.residentKeys())
	}
}

// filter drops the events whose text contains s.
func filter(evs []string, s string) []string {
	var out []string
	for _, e := range evs {
		if !strings.Contains(e, s) {
			out = append(out, e)
		}
	}
	return out
}

// TestPathChangeAboveState: a switch keeps its above state when the path moves it to
// another position; a switch new to the path starts as a new key, its above event with
// prev 0 (not the value of the switch that held its position before).
func TestPathChangeAboveState(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1024)
	d := New(testConfig(), Deps{Bus: &bus}) // change 50, above 200 for flow_hop_latency
	d.Process(0, report(1, 1, hop{node: 1, lat: 10}, hop{node: 2, lat: 300}))
	expect(t, "first", filter(drain(c), "e2e"),
		"new_key switch flow_hop_latency sw1 0->10",
		"new_key switch flow_hop_latency sw2 0->300",
		"above switch flow_hop_latency sw2 0->300 T200",
	)
	// Switch 2 moves to the first position, still above: nothing but the path. Switch 3
	// takes the second position, which switch 2 held (300, above): a new key, prev 0.
	d.Process(0, report(2, 1, hop{node: 2, lat: 300}, hop{node: 3, lat: 250}))
	expect(t, "moved", drain(c),
		"path_change e2e flow_path 2:3",
		"new_key switch flow_hop_latency sw3 0->250",
		"above switch flow_hop_latency sw3 0->250 T200",
	)
	d.Process(0, report(3, 1, hop{node: 2, lat: 290}, hop{node: 3, lat: 150}))
	expect(t, "below", drain(c),
		"change switch flow_hop_latency sw3 250->150 T50",
		"below switch flow_hop_latency sw3 250->150 T200",
	)
	d.Process(0, report(4, 1, hop{node: 2, lat: 200}, hop{node: 3, lat: 150}))
	expect(t, "switch 2 below", drain(c),
		"change switch flow_hop_latency sw2 300->200 T50",
		"below switch flow_hop_latency sw2 290->200 T200",
	)
}
