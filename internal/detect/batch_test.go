package detect

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// batchStream is a mixed stream: 200 flows over 30 switches with paths of 1 to 6 hops that
// change now and then, hops with queue occupancy and congestion, tx utilization (on a few
// ports) and buffer occupancy present at random, values that wander (change events) and
// cross the above levels, reports with sequence numbers (gaps) and drop flags from a few
// reporting nodes, reports without a flow; several reports per receive time.
func batchStream(n int) []telemetry.Report {
	rng := rand.New(rand.NewPCG(3, 4))
	rs := make([]telemetry.Report, n)
	seq := map[uint32]uint32{}
	for i := range rs {
		r := &rs[i]
		r.Format = telemetry.FormatTR20
		r.RecvTime = int64(time.Second) + int64(i/7)*int64(time.Millisecond)
		f := rng.IntN(200)
		if rng.IntN(30) != 0 {
			r.Has |= telemetry.HasFlow
			r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, byte(f >> 8), byte(f)}), netip.MustParseAddr("10.1.0.1"))
			r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(1000+f), 80, 6
		}
		if rng.IntN(4) == 0 {
			node := uint32(100 + rng.IntN(4))
			r.Has |= telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasIngressTS
			r.NodeID, r.HWID, r.IngressTS = node, uint8(rng.IntN(2)), uint64(i)
			seq[node] += 1 + uint32(rng.IntN(3))/2 // a gap now and then
			if rng.IntN(10) == 0 {
				seq[node] -= 2 // a step back: resynchronizes
			}
			r.Seq = seq[node]
			if rng.IntN(5) == 0 {
				r.Flags |= telemetry.FlagDrop
				if rng.IntN(2) == 0 {
					r.Has |= telemetry.HasDropReason
					r.DropReason = uint8(rng.IntN(3))
				}
			}
		}
		nh := 1 + (f+i/500)%6
		if rng.IntN(50) == 0 {
			nh = 0
		}
		for j := 0; j < nh; j++ {
			h := r.AddHop()
			h.Fields = telemetry.FNodeID | telemetry.FEgressTS
			h.NodeID = uint32(1 + (f*7+j*11+(i/800)*j)%30)
			h.EgressTS = uint64(i*10 + j)
			if rng.IntN(5) > 0 {
				h.Fields |= telemetry.FHopLatency
				h.HopLatency = uint32(100 + rng.IntN(150))
			}
			if rng.IntN(2) == 0 {
				h.Fields |= telemetry.FQueueID | telemetry.FQueueOccupancy
				h.QueueID, h.QueueOccupancy = uint16(f%3), uint32(rng.IntN(120))
				if rng.IntN(2) == 0 {
					h.Fields |= telemetry.FQueueCongestion
					h.QueueCongestion = uint32(rng.IntN(80))
				}
			}
			if rng.IntN(2) == 0 {
				h.Fields |= telemetry.FTxUtil
				h.TxUtil = uint32(rng.IntN(100))
				if rng.IntN(3) > 0 {
					h.Fields |= telemetry.FEgressPort
					h.EgressPort = uint32(f % 4)
				}
			}
			if rng.IntN(4) == 0 {
				h.Fields |= telemetry.FBufferOccupancy
				h.BufferID, h.BufferOccupancy = uint8(f%2), uint32(rng.IntN(500))
			}
		}
	}
	return rs
}

func batchDetectConfig() Config {
	c := DefaultConfig()
	c.Shards = 8
	c.MaxFlows, c.MaxKeys = 120, 200 // both tables evict
	c.Change = map[string]uint64{"flow_latency": 60, "flow_hop_latency": 40, "queue_occupancy": 30, "queue_congestion": 20,
		"tx_utilization": 25, "buffer_occupancy": 100, "drops": 0, "seq_gaps": 0}
	c.Above = map[string]uint64{"flow_latency": 900, "flow_hop_latency": 220, "queue_occupancy": 100, "tx_utilization": 90}
	return c
}

// keyOf names an event's key (measurement included), for grouping events per key.
func keyOf(e *event.Event) string {
	return fmt.Sprintf("%s %+v", e.Measurement, e.Key)
}

// detectState is everything a detector shows after a stream: its events grouped per key in
// order, the counters, the periodic push and every flow's state.
type detectState struct {
	PerKey   map[string][]event.Event
	Events   int
	Stats    Stats
	Snapshot []event.Event
	Flows    map[string]FlowState
}

func runDetector(t *testing.T, rs []telemetry.Report, size int, mid func(d *Detector, i int)) detectState {
	t.Helper()
	var bus event.Bus
	c := bus.Subscribe("t", 1<<20)
	d := New(batchDetectConfig(), Deps{Bus: &bus})
	if size < 0 { // with the prefetches, which only tables far beyond the caches get
		d.stageAt, d.stageKeysAt, size = 0, 0, -size
	}
	if size == 0 {
		for i := range rs {
			mid(d, i)
			d.Process(0, &rs[i])
		}
	} else {
		for i := 0; i < len(rs); i += size {
			for j := i; j < min(i+size, len(rs)); j++ {
				mid(d, j)
			}
			d.ProcessBatch(0, rs[i:min(i+size, len(rs))])
		}
	}
	d.Flush(0)
	st := detectState{PerKey: map[string][]event.Event{}, Stats: d.Stats(), Flows: map[string]FlowState{}}
	buf := make([]event.Event, 4096)
	for {
		n := c.Poll(buf)
		for i := range buf[:n] {
			k := keyOf(&buf[i])
			st.PerKey[k] = append(st.PerKey[k], buf[i])
		}
		st.Events += n
		if n == 0 {
			break
		}
	}
	if c.Overflow() != 0 {
		t.Fatalf("ring overflow %d", c.Overflow())
	}
	d.Snapshot(rs[len(rs)-1].RecvTime+int64(30*time.Second), func(e *event.Event) { st.Snapshot = append(st.Snapshot, *e) })
	for i := range rs {
		if rs[i].Has&telemetry.HasFlow != 0 {
			if fs, ok := d.Flow(rs[i].Flow); ok {
				st.Flows[rs[i].Flow.String()] = fs
			}
		}
	}
	return st
}

// TestProcessBatchSame: ProcessBatch over a stream, in batches of any size (negative: with
// the flow prefetch), raises exactly
// the events Process raises report by report, in the same order per key (only the order
// between keys may differ), and leaves the same counters, tables (the periodic push walks
// them in LRU order, shard by shard) and flow states, evictions and threshold changes
// between batches included.
func TestProcessBatchSame(t *testing.T) {
	rs := batchStream(12000)
	// Thresholds change at run time, at report 6400 (before the batch holding it, in the
	// batch runs: every size below divides 6400, so that they see it at the same report).
	mid := func(d *Detector, i int) {
		if i == 6400 {
			d.SetThreshold(event.KindChange, event.QueueOccupancy, 5)
			d.SetThreshold(event.KindAbove, event.FlowHopLatency, 200)
		}
	}
	want := runDetector(t, rs, 0, mid)
	st := want.Stats
	if st.EvictedFlows == 0 || st.EvictedKeys == 0 || st.Events["path_change"] == 0 || st.Events["change"] == 0 ||
		st.Events["above"] == 0 || st.Events["below"] == 0 || st.Events["new_key"] == 0 || want.Events < 10000 {
		t.Fatalf("the stream does not exercise every rule: %d events, %+v", want.Events, st)
	}
	for _, m := range []event.Measurement{event.FlowPath, event.FlowLatency, event.FlowHopLatency, event.QueueOccupancy,
		event.QueueCongestion, event.TxUtilization, event.BufferOccupancy, event.Drops, event.SeqGaps} {
		found := false
		for _, evs := range want.PerKey {
			if evs[0].Measurement == m {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no %s events in the stream", m)
		}
	}
	for _, size := range []int{1, 5, 64, 100, 320, 1600, -64, -320} {
		got := runDetector(t, rs, size, mid)
		if got.Events != want.Events || !reflect.DeepEqual(got.Stats, want.Stats) {
			t.Errorf("batch %d: %d events, stats %+v\nwant %d events, stats %+v", size, got.Events, got.Stats, want.Events, want.Stats)
		}
		var keys []string
		for k := range want.PerKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !reflect.DeepEqual(got.PerKey[k], want.PerKey[k]) {
				t.Fatalf("batch %d: events of %s differ:\ngot  %+v\nwant %+v", size, k, got.PerKey[k], want.PerKey[k])
			}
		}
		if !reflect.DeepEqual(got.Snapshot, want.Snapshot) {
			t.Errorf("batch %d: the periodic push differs (%d values, want %d)", size, len(got.Snapshot), len(want.Snapshot))
		}
		if !reflect.DeepEqual(got.Flows, want.Flows) {
			t.Errorf("batch %d: flow states differ", size)
		}
	}
}

// TestProcessBatchConcurrent: workers batch reports that update the same switch and flow
// keys with random values while the periodic push, flow queries, stats and threshold
// changes race them (run with -race). Every report is counted once, and each key's events
// reach the consumer in the order of its updates: every change event starts where the
// key's previous event left it (Prev is the last exported value), whichever worker raised
// which.
func TestProcessBatchConcurrent(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("t", 1<<20)
	cfg := DefaultConfig()
	cfg.Shards = 4
	cfg.Change = map[string]uint64{"flow_hop_latency": 10, "queue_occupancy": 10, "tx_utilization": 10, "flow_latency": 10}
	const workers, batches, per = 4, 300, 32
	d := New(cfg, Deps{Bus: &bus, Workers: workers})
	d.stageAt, d.stageKeysAt = 0, 0 // the prefetches' unlocked reads race the updates
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			rs := make([]telemetry.Report, per)
			for b := 0; b < batches; b++ {
				for j := range rs {
					rs[j] = *report(int64(b+1), uint16(rng.IntN(8)),
						hop{1, rng.Uint32N(100), 1 + rng.Uint32N(100), 1 + rng.Uint32N(100)},
						hop{2, rng.Uint32N(100), 1 + rng.Uint32N(100), 0})
				}
				d.ProcessBatch(w, rs)
				d.Flush(w)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			d.Snapshot(1, func(*event.Event) {})
			d.Flow(report(1, 3).Flow)
			d.Stats()
			d.SetThreshold(event.KindAbove, event.TxUtilization, uint64(50+i%2))
		}
	}()
	wg.Wait()
	close(done)
	if st := d.Stats(); st.Reports != workers*batches*per {
		t.Errorf("reports %d, want %d", st.Reports, workers*batches*per)
	}
	last := map[string]uint64{}
	buf := make([]event.Event, 4096)
	n := 0
	for {
		k := c.Poll(buf)
		if k == 0 {
			break
		}
		for i := range buf[:k] {
			e := &buf[i]
			key := keyOf(e)
			switch e.Kind {
			case event.KindNewKey:
				if _, seen := last[key]; seen {
					t.Fatalf("%s: a second new_key", key)
				}
				last[key] = e.Value
			case event.KindChange:
				if prev, seen := last[key]; !seen || prev != e.Prev {
					t.Fatalf("%s: change from %d, the last exported value was %d (seen %v): events out of update order", key, e.Prev, prev, seen)
				}
				last[key] = e.Value
			}
		}
		n += k
	}
	if n == 0 || c.Overflow() != 0 {
		t.Fatalf("%d events, overflow %d", n, c.Overflow())
	}
}

func TestProcessBatchNoAlloc(t *testing.T) {
	for _, stage := range []bool{false, true} {
		var bus event.Bus
		c := bus.Subscribe("t", 1<<10)
		d := New(batchDetectConfig(), Deps{Bus: &bus})
		if d.stageAt, d.stageKeysAt = math.MaxInt, math.MaxInt; stage {
			d.stageAt, d.stageKeysAt = 0, 0
		}
		rs := batchStream(64)
		buf := make([]event.Event, 1<<10)
		d.ProcessBatch(0, rs)
		if a := testing.AllocsPerRun(500, func() {
			for i := range rs {
				rs[i].RecvTime += int64(time.Millisecond)
				if rs[i].NHops > 0 {
					rs[i].Hops[0].HopLatency ^= 0xff
				}
			}
			d.ProcessBatch(0, rs)
			c.Poll(buf)
		}); a != 0 {
			t.Fatalf("ProcessBatch (prefetch %v): %v allocs per batch", stage, a)
		}
	}
}

// The event log and the stream see batched events like any other.
func TestProcessBatchEventLog(t *testing.T) {
	cfg := testConfig()
	d := New(cfg, Deps{})
	d.log = newLog(d.bus, 100, cfg.Ring, cfg.MaxStreams)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	rs := []telemetry.Report{*report(1, 1, hop{node: 1, lat: 10}), *report(1, 2, hop{node: 1, lat: 10})}
	d.ProcessBatch(0, rs)
	testutil.Eventually(t, 5*time.Second, "6 events in the event log", func() bool {
		d.log.mu.Lock()
		defer d.log.mu.Unlock()
		return d.log.seq == 6
	})
}
