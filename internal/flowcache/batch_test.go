package flowcache

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// batchInput is a mixed stream: 300 flows over a small table (collisions evict into a small
// ring, which drops), paths of 1 to 7 hops over 40 switches (some past max_switches, some
// past max_hops, some changing), fields missing at random, reports without a flow or
// without hops, several reports per receive time.
func batchInput(n int) []telemetry.Report {
	rng := rand.New(rand.NewPCG(7, 8))
	rs := make([]telemetry.Report, n)
	for i := range rs {
		r := &rs[i]
		r.RecvTime = int64(1000 + i/5)
		if rng.IntN(40) != 0 {
			r.Has = telemetry.HasFlow
			r.Flow = flow(uint16(rng.IntN(300)))
		}
		if rng.IntN(40) == 0 {
			continue // no hops
		}
		nh := 1 + rng.IntN(7)
		for j := 0; j < nh; j++ {
			h := r.AddHop()
			h.Fields = telemetry.FNodeID
			if rng.IntN(3) > 0 {
				h.Fields |= telemetry.FHopLatency
			}
			if rng.IntN(3) > 0 {
				h.Fields |= telemetry.FQueueOccupancy
			}
			if rng.IntN(3) > 0 {
				h.Fields |= telemetry.FTxUtil
			}
			h.NodeID = uint32(1 + (int(r.Flow.SrcPort)*7+j*13+rng.IntN(2))%40)
			h.HopLatency, h.QueueOccupancy, h.TxUtil = rng.Uint32N(5000), rng.Uint32N(300), rng.Uint32N(100)
		}
	}
	return rs
}

func batchConfig() Config {
	c := small(16, 4)
	c.MaxHops = 5
	c.RingEntries = 16
	c.Histograms = HistConfig{Scale: "log", Bins: 16, MaxSwitches: 30, Width: Widths{HopLatency: 1, QueueOccupancy: 1, TxUtil: 1, Latency: 1}}
	return c
}

// cacheState is everything a cache shows: its counters, every live flow, every histogram
// and the records evicted to the sinks, in order.
type cacheState struct {
	Stats   Stats
	Flows   map[telemetry.FlowKey]record.Record
	Hists   []record.Histogram
	Evicted []record.Record
}

func stateOf(f *FlowCache, evicted []record.Record) cacheState {
	f.Flush(0)
	st := cacheState{Stats: f.Stats(), Flows: map[telemetry.FlowKey]record.Record{}, Evicted: evicted}
	f.WalkUpdated(-1<<63, func(r *record.Record) { st.Flows[r.Flow] = *r })
	for _, sw := range f.Histograms().Switches() {
		for m := range record.NumMetrics {
			h, _ := f.Histograms().Histogram(sw, m)
			st.Hists = append(st.Hists, h)
		}
	}
	st.Hists = append(st.Hists, f.Histograms().E2E())
	return st
}

// TestProcessBatchSame: ProcessBatch over a stream, in batches of any size, staged or not,
// leaves exactly what Process report by report leaves: every flow's record, the counters,
// the histograms and the evicted records in their order.
func TestProcessBatchSame(t *testing.T) {
	rs := batchInput(6000)
	run := func(batch func(f *FlowCache)) cacheState {
		var ev []record.Record
		f := New(batchConfig(), Deps{Records: []func(*record.Record){func(r *record.Record) {
			c := *r
			c.Hops = append([]record.HopRecord(nil), r.Hops...)
			ev = append(ev, c)
		}}})
		batch(f)
		f.DrainNow()
		return stateOf(f, ev)
	}
	want := run(func(f *FlowCache) {
		for i := range rs {
			f.Process(0, &rs[i])
			if i%50 == 49 {
				f.DrainNow() // the drain runs beside the workers
			}
		}
	})
	if want.Stats.Evictions.Collision == 0 || want.Stats.Rings.Drops == 0 || want.Stats.SwitchOverflow == 0 ||
		want.Stats.TruncatedPaths == 0 || want.Stats.SkippedNoFlow == 0 || want.Stats.SkippedNoHops == 0 || len(want.Evicted) == 0 {
		t.Fatalf("the input does not exercise every path: %+v", want.Stats)
	}
	for _, size := range []int{1, 3, 16, 17, 64, -16, -64} {
		got := run(func(f *FlowCache) {
			if size < 0 { // staged even though the few flows fit in the cache
				f.stageAbove = 0
			}
			size := max(size, -size)
			for i := 0; i < len(rs); i += size {
				f.ProcessBatch(0, rs[i:min(i+size, len(rs))])
				if i/50 != (i+size)/50 {
					f.DrainNow()
				}
			}
		})
		// Draining at other moments moves ring drops between flows, so compare the
		// rings' counts only with batches that drain where Process did.
		if size == 1 {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("batch 1: state differs\ngot  %+v\nwant %+v", got.Stats, want.Stats)
			}
			continue
		}
		got.Stats.Rings, got.Evicted = want.Stats.Rings, want.Evicted
		if !reflect.DeepEqual(got, want) {
			t.Errorf("batch %d: state differs\ngot  %+v\nwant %+v", size, got.Stats, want.Stats)
		}
	}
}

// TestProcessBatchSameNoDrain: with rings large enough, the evicted records are the same
// too, in the same order, for any batch size.
func TestProcessBatchSameNoDrain(t *testing.T) {
	rs := batchInput(3000)
	run := func(size int) cacheState {
		c := batchConfig()
		c.RingEntries = 1 << 14
		var ev []record.Record
		f := New(c, Deps{Records: []func(*record.Record){func(r *record.Record) {
			c := *r
			c.Hops = append([]record.HopRecord(nil), r.Hops...)
			ev = append(ev, c)
		}}})
		if size == 0 { // the reference: Process report by report
			for i := range rs {
				f.Process(0, &rs[i])
			}
		}
		if size < 0 { // staged even though the few flows fit in the cache
			f.stageAbove, size = 0, -size
		}
		for i := 0; size > 0 && i < len(rs); i += size {
			f.ProcessBatch(0, rs[i:min(i+size, len(rs))])
		}
		f.DrainNow()
		return stateOf(f, ev)
	}
	want := run(0)
	if want.Stats.Rings.Drops != 0 || len(want.Evicted) == 0 {
		t.Fatalf("rings: %+v, %d evicted", want.Stats.Rings, len(want.Evicted))
	}
	for _, size := range []int{1, 5, 16, 64, -16, -64} {
		if got := run(size); !reflect.DeepEqual(got, want) {
			t.Errorf("batch %d: state differs\ngot  %+v\nwant %+v", size, got.Stats, want.Stats)
		}
	}
}

// TestProcessBatchConcurrent is TestConcurrent with the batch path (run with -race): workers
// batch updates of shared flows while queries, walks and the ager's sweep race them; every
// report is counted exactly once and the sums are exact.
func TestProcessBatchConcurrent(t *testing.T) {
	c := small(64, 12)
	const workers, per = 4, 5000
	f := New(c, Deps{Workers: workers})
	f.stageAbove = 0 // staged: the unlocked tag reads race the updates
	f.Start(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := make([]telemetry.Report, 40)
			for i := 0; i < per; i += len(rs) {
				for j := range rs {
					rs[j] = *report(flow(uint16((i+j)%16)), int64(i+j), hop{1, 2, 3, 4}, hop{uint32(2 + w%2), 1, 1, 1})
				}
				f.ProcessBatch(w, rs)
				f.Flush(w)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			k := flow(3)
			f.Lookup(&k)
			f.Top("packets", 3)
			f.Histograms().Histogram(1, record.HopLatency)
			f.Age(0) // idle_timeout is a minute: nothing is this old, but rows are swept
		}
	}()
	wg.Wait()
	close(done)
	f.Stop(context.Background())
	var pk uint64
	for p := uint16(0); p < 16; p++ {
		k := flow(p)
		r, ok := f.Lookup(&k)
		if !ok {
			t.Fatalf("flow %d missing", p)
		}
		pk += r.Packets
		if r.Hops[0].Sum[record.HopLatency] != 2*r.Packets {
			t.Errorf("flow %d: hop 1 latency sum %d over %d packets", p, r.Hops[0].Sum[record.HopLatency], r.Packets)
		}
	}
	if pk != workers*per {
		t.Errorf("packets %d, want %d", pk, workers*per)
	}
	if h, _ := f.Histograms().Histogram(1, record.HopLatency); h.Total != workers*per {
		t.Errorf("histogram total %d", h.Total)
	}
	if st := f.Stats(); st.Reports != workers*per || st.Inserts != 16 || st.Evictions.Collision != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestProcessBatchNoAlloc(t *testing.T) {
	for _, above := range []uint64{stageAbove, 0} {
		f := New(batchConfig(), Deps{})
		f.stageAbove = above
		rs := batchInput(64)
		if a := testing.AllocsPerRun(200, func() {
			for i := range rs {
				rs[i].RecvTime++
			}
			f.ProcessBatch(0, rs)
			f.Flush(0)
		}); a != 0 {
			t.Fatalf("ProcessBatch (staging above %d bytes): %v allocs per batch", above, a)
		}
	}
}
