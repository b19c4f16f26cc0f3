package flowcache

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

type hop struct{ node, hl, qo, tx uint32 }

const allF = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueOccupancy | telemetry.FTxUtil

func flow(sport uint16) telemetry.FlowKey {
	var k telemetry.FlowKey
	k.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	k.SrcPort, k.DstPort, k.Proto = sport, 80, 17
	return k
}

// report builds a report of flow k at time t with hops given source first (the Report
// holds them newest first).
func report(k telemetry.FlowKey, t int64, hops ...hop) *telemetry.Report {
	r := &telemetry.Report{Has: telemetry.HasFlow, Flow: k, RecvTime: t}
	for i := len(hops) - 1; i >= 0; i-- {
		h := r.AddHop()
		h.Fields = allF
		h.NodeID, h.HopLatency, h.QueueOccupancy, h.TxUtil = hops[i].node, hops[i].hl, hops[i].qo, hops[i].tx
	}
	return r
}

func small(rows, buckets int) Config {
	c := DefaultConfig()
	c.Rows, c.Buckets, c.Rings, c.RingEntries = rows, buckets, 1, 16
	return c
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Rows = 3 }, "rows: 3: must be a power of two 1-16777216"},
		{func(c *Config) { c.Buckets = 0 }, "buckets: 0: must be 1-64"},
		{func(c *Config) { c.MaxHops = 33 }, "max_hops: 33: must be 1-32"},
		{func(c *Config) { c.IdleTimeout = -1 }, "idle_timeout: -1ns: must be 0 (no ager) or positive"},
		{func(c *Config) { c.AgeInterval = time.Millisecond }, "age_interval: 1ms: must be at least 10ms"},
		{func(c *Config) { c.Rings = 6 }, "rings: 6: must be a power of two 1-64"},
		{func(c *Config) { c.RingEntries = 1000 }, "ring_entries: 1000: must be a power of two 2-1048576"},
		{func(c *Config) { c.Histograms.Scale = "exp" }, `histograms.scale: "exp": must be linear or log`},
		{func(c *Config) { c.Histograms.Bins = 1 }, "histograms.bins: 1: must be 2-4096"},
		{func(c *Config) { c.Histograms.Width.TxUtil = 0 }, "histograms.width.tx_utilization: 0: must be at least 1"}, // tx_util before issue 31
		{func(c *Config) { c.Histograms.MaxSwitches = 0 }, "histograms.max_switches: 0: must be 1-65536"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// 16384 rows × (64-byte header + 12 buckets × (80 + 5 × 56) bytes).
	if got, want := c.Bytes(), 16384*(64+12*360); got != want || want != 71827456 {
		t.Errorf("default bytes %d, want %d", got, want)
	}
	c.Rows = 1 << 19
	if got := c.Bytes(); got != 2298478592 {
		t.Errorf("paper geometry bytes %d", got)
	}
}

func TestAverages(t *testing.T) {
	f := New(small(4, 2), Deps{})
	k := flow(1000)
	f.Process(0, report(k, 100, hop{1, 10, 5, 7}, hop{2, 20, 0, 8}, hop{3, 30, 9, 9}))
	f.Process(0, report(k, 200, hop{1, 11, 6, 7}, hop{2, 21, 3, 8}, hop{3, 36, 9, 10}))
	r3 := report(k, 300, hop{1, 15, 1, 1}, hop{2, 22, 3, 8}, hop{3, 30, 0, 10})
	r3.Hops[2].Fields &^= telemetry.FQueueOccupancy // hop 1 (source) without queue occupancy
	f.Process(0, r3)
	f.Flush(0)
	rec, ok := f.Lookup(&k)
	if !ok {
		t.Fatal("flow not found")
	}
	want := record.Record{Flow: k, Packets: 3, First: 100, Last: 300, LatLatest: 67, LatSum: 60 + 68 + 67, LatCount: 3,
		Hops: []record.HopRecord{
			{NodeID: 1, Latest: [3]uint64{15, 6, 1}, Count: [3]uint64{3, 2, 3}, Sum: [3]uint64{36, 11, 15}},
			{NodeID: 2, Latest: [3]uint64{22, 3, 8}, Count: [3]uint64{3, 3, 3}, Sum: [3]uint64{63, 6, 24}},
			{NodeID: 3, Latest: [3]uint64{30, 0, 10}, Count: [3]uint64{3, 3, 3}, Sum: [3]uint64{96, 18, 29}},
		}}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("got %+v\nwant %+v", rec, want)
	}
	b, _ := json.Marshal(RecordJSON(&rec))
	wantJSON := `{"src":"10.0.0.1","dst":"10.0.0.2","sport":1000,"dport":80,"proto":17,"packets":3,` +
		`"first_seen":"1970-01-01T00:00:00.0000001Z","last_seen":"1970-01-01T00:00:00.0000003Z",` +
		`"latency":{"latest":67,"mean":65},"path":[1,2,3],"truncated":false,"hops":[` +
		`{"hop":1,"node_id":1,"latest":{"hop_latency":15,"queue_occupancy":6,"tx_util":1},"mean":{"hop_latency":12,"queue_occupancy":5.5,"tx_util":5}},` +
		`{"hop":2,"node_id":2,"latest":{"hop_latency":22,"queue_occupancy":3,"tx_util":8},"mean":{"hop_latency":21,"queue_occupancy":2,"tx_util":8}},` +
		`{"hop":3,"node_id":3,"latest":{"hop_latency":30,"queue_occupancy":0,"tx_util":10},"mean":{"hop_latency":32,"queue_occupancy":6,"tx_util":9.666666666666666}}]}`
	if string(b) != wantJSON {
		t.Errorf("json\n got %s\nwant %s", b, wantJSON)
	}
	st := f.Stats()
	if st.Flows != 1 || st.Reports != 3 || st.Updates != 3 || st.Inserts != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestPathChangeAndTruncation(t *testing.T) {
	c := small(1, 1)
	c.MaxHops = 2
	f := New(c, Deps{})
	k := flow(1)
	f.Process(0, report(k, 1, hop{1, 10, 0, 0}, hop{2, 20, 0, 0}))
	f.Process(0, report(k, 2, hop{1, 30, 0, 0}, hop{5, 40, 0, 0}, hop{6, 1, 1, 1})) // hop 2 changed; 3 hops
	f.Flush(0)
	rec, _ := f.Lookup(&k)
	if got := rec.Path(); !reflect.DeepEqual(got, []uint32{1, 5}) || !rec.Truncated {
		t.Fatalf("path %v truncated %v", got, rec.Truncated)
	}
	if m := rec.Hops[0].Mean(record.HopLatency); m != 20 {
		t.Errorf("hop 1 mean %v, want 20", m)
	}
	if m, n := rec.Hops[1].Mean(record.HopLatency), rec.Hops[1].Count[record.HopLatency]; m != 40 || n != 1 {
		t.Errorf("new hop 2 mean %v over %d, want 40 over 1 (restarted)", m, n)
	}
	// The end-to-end latency counts every hop of the report, kept or not.
	if rec.LatLatest != 71 || rec.LatSum != 101 {
		t.Errorf("latency %d sum %d", rec.LatLatest, rec.LatSum)
	}
	if st := f.Stats(); st.TruncatedPaths != 1 {
		t.Errorf("truncated %d", st.TruncatedPaths)
	}
}

// collect returns Deps with a record sink that appends records, and the slice it appends to.
func collect() (Deps, *[]record.Record) {
	var got []record.Record
	return Deps{Records: []func(*record.Record){func(r *record.Record) { got = append(got, *r) }}}, &got
}

func summary(rs []record.Record) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%d:%s:%d@%d", r.Flow.SrcPort, r.Reason, r.Packets, r.Last))
	}
	return strings.Join(s, " ")
}

func TestEvictionOrder(t *testing.T) {
	deps, got := collect()
	f := New(small(1, 3), deps)
	f.Process(0, report(flow(1), 10, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(2), 20, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(3), 30, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(1), 40, hop{1, 1, 1, 1})) // 1 is now the most recent
	f.Process(0, report(flow(4), 50, hop{1, 1, 1, 1})) // evicts 2
	f.Process(0, report(flow(3), 60, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(5), 70, hop{1, 1, 1, 1})) // evicts 1 (40), not 4 (50) or 3 (60)
	f.Process(0, report(flow(6), 80, hop{1, 1, 1, 1})) // evicts 4
	if n := f.DrainNow(); n != 3 {
		t.Fatalf("drained %d", n)
	}
	if s, want := summary(*got), "2:collision:1@20 1:collision:2@40 4:collision:1@50"; s != want {
		t.Errorf("evicted %s, want %s", s, want)
	}
	for _, p := range []uint16{3, 5, 6} {
		k := flow(p)
		if _, ok := f.Lookup(&k); !ok {
			t.Errorf("flow %d missing", p)
		}
	}
	st := f.Stats()
	if st.Flows != 3 || st.Evictions.Collision != 3 || st.Inserts != 6 || st.Rings.Exported != 3 || st.Rings.Pushed != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestAging(t *testing.T) {
	c := small(1, 4)
	c.IdleTimeout = 10 * time.Second
	deps, got := collect()
	f := New(c, deps)
	s := int64(time.Second)
	f.Process(0, report(flow(1), 0, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(2), 5*s, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(3), 6*s, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(4), 12*s, hop{1, 1, 1, 1}))
	if n := f.Age(16 * s); n != 2 { // idle since before 6s: flows 1 and 2; 3 is exactly 10s idle
		t.Fatalf("aged %d", n)
	}
	f.DrainNow()
	if s, want := summary(*got), "1:idle:1@0 2:idle:1@5000000000"; s != want {
		t.Errorf("aged %s, want %s", s, want)
	}
	if st := f.Stats(); st.Flows != 2 || st.Evictions.Idle != 2 {
		t.Errorf("stats %+v", st)
	}
	// The freed buckets take new flows without evicting.
	f.Process(0, report(flow(5), 17*s, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(6), 17*s, hop{1, 1, 1, 1}))
	if st := f.Stats(); st.Flows != 4 || st.Evictions.Collision != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestAgerGoroutine runs in a synctest bubble: the ager's ticker and the wait run on the
// bubble's fake clock, so the test takes no wall time and cannot race a loaded machine.
func TestAgerGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := small(1, 4)
		c.IdleTimeout, c.AgeInterval = time.Second, 10*time.Millisecond
		var mu sync.Mutex
		var got []record.Record
		f := New(c, Deps{Records: []func(*record.Record){func(r *record.Record) { mu.Lock(); got = append(got, *r); mu.Unlock() }}})
		var now sync.Mutex
		clock := int64(0)
		f.SetClock(func() int64 { now.Lock(); defer now.Unlock(); return clock })
		f.Process(0, report(flow(1), 0, hop{1, 1, 1, 1}))
		if err := f.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		now.Lock()
		clock = int64(2 * time.Second)
		now.Unlock()
		testutil.Eventually(t, 5*time.Second, "the ager's record", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == 1
		})
		f.Stop(context.Background())
		if s := summary(got); s != "1:idle:1@0" {
			t.Errorf("aged %q", s)
		}
	})
}

func TestRingOverflow(t *testing.T) {
	c := small(1, 1)
	c.RingEntries = 2
	deps, got := collect()
	f := New(c, deps)
	for p := uint16(1); p <= 5; p++ {
		f.Process(0, report(flow(p), int64(p), hop{1, 1, 1, 1}))
	}
	st := f.Stats()
	if st.Evictions.Collision != 4 || st.Rings.Pushed != 2 || st.Rings.Drops != 2 || st.Rings.Pending != 2 {
		t.Fatalf("stats %+v", st.Rings)
	}
	f.DrainNow()
	if s, want := summary(*got), "1:collision:1@1 2:collision:1@2"; s != want {
		t.Errorf("drained %s, want %s", s, want)
	}
	// Room again: the next eviction gets through.
	f.Process(0, report(flow(6), 6, hop{1, 1, 1, 1}))
	f.DrainNow()
	if s := summary((*got)[2:]); s != "5:collision:1@5" {
		t.Errorf("after drain %s", s)
	}
	if st := f.Stats(); st.Rings.Drops != 2 || st.Rings.Exported != 3 {
		t.Errorf("stats %+v", st.Rings)
	}
}

func TestRingsByRow(t *testing.T) {
	c := small(4, 1)
	c.Rings, c.RingEntries = 2, 2
	f := New(c, Deps{})
	// Fill rows until the ring of some row overflows: rings are per row mod 2.
	for p := uint16(1); p <= 200; p++ {
		f.Process(0, report(flow(p), int64(p), hop{1, 1, 1, 1}))
	}
	st := f.Stats()
	if st.Rings.Pushed != 4 || st.Rings.Drops != 196-4 || st.Evictions.Collision != 196 || st.Flows != 4 {
		t.Errorf("stats %+v %+v", st, st.Rings)
	}
}

func TestHistogramsLinear(t *testing.T) {
	c := small(1, 1)
	c.Histograms = HistConfig{Scale: "linear", Bins: 4, MaxSwitches: 2,
		Width: Widths{HopLatency: 10, QueueOccupancy: 1, TxUtil: 100, Latency: 50}}
	f := New(c, Deps{})
	for _, v := range []uint32{0, 9, 10, 25, 1000} {
		f.Process(0, report(flow(1), 1, hop{7, v, v, v}))
	}
	f.Process(0, report(flow(1), 1, hop{8, 1, 1, 1}))
	f.Process(0, report(flow(1), 1, hop{9, 1, 1, 1})) // a third switch: over max_switches
	h, ok := f.Histograms().Histogram(7, record.HopLatency)
	if !ok {
		t.Fatal("no histogram for switch 7")
	}
	b, _ := json.Marshal(h)
	want := `{"switch":"7","metric":"hop_latency","scale":"linear","bins":4,"total":5,"counts":[` +
		`{"lo":0,"hi":10,"count":2},{"lo":10,"hi":20,"count":1},{"lo":20,"hi":30,"count":1},{"lo":30,"count":1}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	h, _ = f.Histograms().Histogram(7, record.TxUtil)
	b, _ = json.Marshal(h.Counts)
	if want := `[{"lo":0,"hi":100,"count":4},{"lo":300,"count":1}]`; string(b) != want {
		t.Errorf("tx_util %s", b)
	}
	b, _ = json.Marshal(f.Histograms().E2E().Counts)
	if want := `[{"lo":0,"hi":50,"count":6},{"lo":150,"count":1}]`; string(b) != want {
		t.Errorf("e2e %s", b)
	}
	if _, ok := f.Histograms().Histogram(9, record.HopLatency); ok {
		t.Error("switch 9 has a histogram past max_switches")
	}
	if st := f.Stats(); st.Switches != 2 || st.SwitchOverflow != 1 {
		t.Errorf("switches %d overflow %d", st.Switches, st.SwitchOverflow)
	}
	if ids := f.Histograms().Switches(); !reflect.DeepEqual(ids, []uint32{7, 8}) {
		t.Errorf("switches %v", ids)
	}
}

func TestHistogramsLog(t *testing.T) {
	c := small(1, 1)
	c.Histograms.Bins = 8
	f := New(c, Deps{})
	for _, v := range []uint32{0, 1, 2, 3, 4, 7, 8, 1 << 30} {
		f.Process(0, report(flow(1), 1, hop{4294967295, v, 0, 0}))
	}
	h, _ := f.Histograms().Histogram(4294967295, record.HopLatency)
	b, _ := json.Marshal(h)
	want := `{"switch":"4294967295","metric":"hop_latency","scale":"log","bins":8,"total":8,"counts":[` +
		`{"lo":0,"hi":1,"count":1},{"lo":1,"hi":2,"count":1},{"lo":2,"hi":4,"count":2},{"lo":4,"hi":8,"count":2},` +
		`{"lo":8,"hi":16,"count":1},{"lo":64,"count":1}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestConcurrent updates shared flows from several goroutines (run with -race): every
// report is counted exactly once and the sums are exact.
func TestConcurrent(t *testing.T) {
	c := small(64, 12)
	const workers, per = 4, 5000
	f := New(c, Deps{Workers: workers})
	f.Start(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				f.Process(w, report(flow(uint16(i%16)), int64(i), hop{1, 2, 3, 4}, hop{uint32(2 + w%2), 1, 1, 1}))
			}
			f.Flush(w)
		}()
	}
	done := make(chan struct{})
	go func() { // queries and walks race with the updates
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
	h, _ := f.Histograms().Histogram(1, record.HopLatency)
	if h.Total != workers*per {
		t.Errorf("histogram total %d", h.Total)
	}
	if st := f.Stats(); st.Reports != workers*per || st.Evictions.Collision != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestTop(t *testing.T) {
	f := New(small(16, 4), Deps{})
	for p := uint16(1); p <= 6; p++ {
		for i := 0; i < int(p%4)+1; i++ {
			f.Process(0, report(flow(p), int64(p), hop{1, uint32(p) * 10, 0, 0}, hop{2, 1, 0, 0}))
		}
	}
	ports := func(rs []record.Record) []uint16 {
		var ps []uint16
		for _, r := range rs {
			ps = append(ps, r.Flow.SrcPort)
		}
		return ps
	}
	// packets: 1→2, 2→3, 3→4, 4→1, 5→2, 6→3; ties newest first.
	if got := ports(f.Top("packets", 4)); !reflect.DeepEqual(got, []uint16{3, 6, 2, 5}) {
		t.Errorf("top packets %v", got)
	}
	if got := ports(f.Top("latency", 3)); !reflect.DeepEqual(got, []uint16{6, 5, 4}) {
		t.Errorf("top latency %v", got)
	}
	if got := f.Top("latency", 100); len(got) != 6 {
		t.Errorf("top 100: %d", len(got))
	}
}

func TestZeroAlloc(t *testing.T) {
	f := New(small(64, 12), Deps{})
	r := report(flow(1), 1, hop{1, 1, 1, 1}, hop{2, 2, 2, 2}, hop{3, 3, 3, 3}, hop{4, 4, 4, 4}, hop{5, 5, 5, 5})
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		i++
		r.Flow.SrcPort = uint16(i % 2000) // inserts and evictions too
		r.RecvTime = int64(i)
		f.Process(0, r)
	}); n != 0 {
		t.Errorf("%v allocs per Process", n)
	}
}

// TestDataClock: the ager ages a replayed capture by the capture's time, not the wall clock.
func TestDataClock(t *testing.T) {
	c := small(1, 4)
	c.IdleTimeout = time.Minute
	f := New(c, Deps{})
	wall := time.Now().UnixNano()
	if got := f.dataClock(); got < wall || got > wall+int64(time.Second) {
		t.Fatalf("before any report the clock is the wall clock: %d vs %d", got, wall)
	}
	old := int64(1_700_000_000) * int64(time.Second) // a capture from 2023
	f.Process(0, report(flow(1), old, hop{1, 1, 1, 1}))
	f.Process(0, report(flow(2), old+int64(2*time.Minute), hop{1, 1, 1, 1}))
	f.Flush(0)
	now := f.dataClock()
	if now < old+int64(2*time.Minute) || now > old+int64(2*time.Minute+time.Second) {
		t.Fatalf("clock %d, want the newest receive time %d", now, old+int64(2*time.Minute))
	}
	if n := f.Age(now); n != 1 { // flow 1 is two capture minutes old; flow 2 is fresh
		t.Errorf("aged %d, want 1", n)
	}
}
