package collector

import (
	"context"
	"net"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// TestKernelFlowCache runs the collector with flowcache.kernel and detect.kernel on an xdp
// report listener and a gen stream of more flows than the table holds: every report ends in
// the XDP program, and the flow cache answers (every flow, the top flows, the histograms,
// the counters) and hands its sink the evicted records exactly as a flow cache in user space
// fed the same reports does. The receive times are the program's: they are checked to be
// receive times, in the reports' order.
func TestKernelFlowCache(t *testing.T) {
	v := xdptest.New(t)
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.DTA.Enabled, cfg.Label.Enabled = false, false
	cfg.Listeners = []ingest.Listener{{Format: "report", Mode: ingest.ModeXDP, Interface: v.Dev, Port: 32766, Sockets: 1, RcvBuf: 1 << 22}}
	cfg.Detect.Kernel, cfg.FlowCache.Kernel = true, true
	cfg.FlowCache.Rows, cfg.FlowCache.Buckets, cfg.FlowCache.IdleTimeout = 64, 4, 0
	// One ring: the user-space cache's records then come out in the order it evicted them,
	// as the kernel's do.
	cfg.FlowCache.Rings, cfg.FlowCache.RingEntries = 1, 1<<14
	sink := &recordSink{}
	c, err := New(cfg, Options{NoHTTP: true, Sinks: []Component{sink}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now().UnixNano()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	gc := gen.DefaultConfig()
	gc.Vary, gc.Flows, gc.Model = 0.05, 600, gen.ModelDraw
	const n = 3000
	bs, rs := genStream(t, gc, n)
	v.Send(t, "udp4", net.JoinHostPort(v.Host, "32766"), bs...)
	waitFrames(t, c, "kernel", n)
	c.FlowCache.DrainNow()
	end := time.Now().UnixNano()

	refCfg := cfg.FlowCache
	refCfg.Kernel = false
	var want []record.Record
	ref := flowcache.New(refCfg, flowcache.Deps{Workers: 1,
		Records: []func(*record.Record){func(r *record.Record) { want = append(want, *r) }}})
	keys := map[telemetry.FlowKey]bool{}
	for i := range rs {
		rs[i].RecvTime = int64(i + 1)
		ref.Process(0, &rs[i])
		keys[rs[i].Flow] = true
	}
	ref.Flush(0)
	ref.DrainNow()

	// Times: the kernel's are receive times (Unix ns) in the reports' order, the
	// reference's the reports' numbers; compared apart from the rest.
	var pairs [][2]int64
	untime := func(got, want *record.Record) {
		if got.First < start || got.Last > end || got.First > got.Last {
			t.Errorf("flow %v: first %d, last %d: not receive times of the run (%d-%d)", got.Flow, got.First, got.Last, start, end)
		}
		pairs = append(pairs, [2]int64{got.First, want.First}, [2]int64{got.Last, want.Last})
		got.First, got.Last = want.First, want.Last
	}
	sink.mu.Lock()
	got := append([]record.Record(nil), sink.got...)
	sink.mu.Unlock()
	if len(got) != len(want) || len(want) < 500 {
		t.Fatalf("%d evicted records reached the sink, user space evicted %d (want at least 500)", len(got), len(want))
	}
	for i := range want {
		untime(&got[i], &want[i])
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("evicted record %d:\nkernel     %+v\nuser space %+v", i, got[i], want[i])
		}
	}
	live := 0
	for k := range keys {
		gr, gok := c.FlowCache.Lookup(&k)
		wr, wok := ref.Lookup(&k)
		if gok && wok {
			untime(&gr, &wr)
			live++
		}
		if gok != wok || !reflect.DeepEqual(gr, wr) {
			t.Errorf("flow %v:\nkernel     %v %+v\nuser space %v %+v", k, gok, gr, wok, wr)
		}
	}
	for _, by := range []string{"packets", "latency"} {
		gt, wt := c.FlowCache.Top(by, 1000), ref.Top(by, 1000)
		if len(gt) != len(wt) || len(gt) != live {
			t.Fatalf("top by %s: %d flows, user space %d, live %d", by, len(gt), len(wt), live)
		}
		for i := range gt {
			untime(&gt[i], &wt[i])
		}
		if !reflect.DeepEqual(gt, wt) {
			t.Errorf("top by %s:\nkernel     %v\nuser space %v", by, gt, wt)
		}
	}
	// In the reports' order, the kernel's times must not go back (one report's time, read in
	// two answers, may differ by the clocks' offset read again: allowed up to 20 µs).
	sort.Slice(pairs, func(i, j int) bool {
		return pairs[i][1] < pairs[j][1] || pairs[i][1] == pairs[j][1] && pairs[i][0] < pairs[j][0]
	})
	for i := 1; i < len(pairs); i++ {
		if a, b := pairs[i-1], pairs[i]; b[0] < a[0]-20000 || a[1] == b[1] && b[0] > a[0]+20000 {
			t.Fatalf("receive times out of the reports' order: report %d at %d, report %d at %d", a[1], a[0], b[1], b[0])
		}
	}
	gh, wh := c.FlowCache.Histograms(), ref.Histograms()
	if g, w := gh.Switches(), wh.Switches(); !reflect.DeepEqual(g, w) || len(w) == 0 {
		t.Errorf("switches with histograms: kernel %v, user space %v", g, w)
	}
	for _, sw := range wh.Switches() {
		for m := range record.NumMetrics {
			a, _ := gh.Histogram(sw, m)
			b, _ := wh.Histogram(sw, m)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("switch %d %s:\nkernel     %+v\nuser space %+v", sw, m, a, b)
			}
		}
	}
	if a, b := gh.E2E(), wh.E2E(); !reflect.DeepEqual(a, b) {
		t.Errorf("end to end:\nkernel     %+v\nuser space %+v", a, b)
	}
	c.Receiver.Settle()
	gs, ws := c.FlowCache.Stats(), ref.Stats()
	k := gs.Kernel
	if k == nil || k.Reports != n || k.RingFull != 0 || k.LockBusy != 0 || k.Errors != 0 {
		t.Errorf("kernel stats %+v, want %d reports, no drops", k, n)
	}
	gs.Kernel = nil
	if !reflect.DeepEqual(gs, ws) {
		t.Errorf("stats:\nkernel     %+v\nuser space %+v", gs, ws)
	}
	if ds := c.Detector.Stats(); ds.Kernel == nil || ds.Kernel.Reports != n || ds.Reports != n {
		t.Errorf("detector stats %+v (kernel %+v): want all %d reports detected in the kernel", ds, ds.Kernel, n)
	}
	t.Logf("%d reports, %d flows: %d live, %d evicted", n, len(keys), live, len(got))
}

// genStream returns the first n datagrams of a generator of cfg and their reports.
func genStream(t *testing.T, cfg gen.Config, n int) ([][]byte, []telemetry.Report) {
	t.Helper()
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bs [][]byte
	var rs []telemetry.Report
	if err := g.Walk(uint64(n), func(_ uint64, b []byte, r []telemetry.Report) error {
		bs = append(bs, append([]byte(nil), b...))
		rs = append(rs, r...)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	return bs, rs
}

func TestKernelFlowCacheConfig(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.FlowCache.Kernel = true
	if _, err := New(cfg, Options{NoHTTP: true}); err == nil || err.Error() != "flowcache.kernel: true: needs a listener with format report and mode xdp (its XDP program keeps the flow cache)" {
		t.Errorf("without an xdp listener: %v", err)
	}
	cfg.Listeners = []ingest.Listener{{Format: "report", Mode: ingest.ModeXDP, Interface: "lo", Port: 32766}}
	cfg.FlowCache.Histograms.Bins = 2000
	if _, err := New(cfg, Options{NoHTTP: true}); err == nil || err.Error() != "flowcache.kernel: histograms.bins: 2000: the kernel's histograms take at most 1365 (a switch's three are one per-CPU BPF value of at most 32 KiB)" {
		t.Errorf("2000 bins: %v", err)
	}
	cfg.FlowCache.Histograms.Bins = 64
	cfg.Decoder.Quirks.HostINT = true
	if _, err := New(cfg, Options{NoHTTP: true}); err == nil || err.Error() != "flowcache.kernel: listeners[0]: the decoder reads INT before the TCP options (quirks.host_int or tcp_shim_before_options); the XDP parser reads it after them only: use the flow cache in user space (flowcache.kernel: false)" {
		t.Errorf("host_int: %v", err)
	}
}

// recordSink is a sink component that keeps the flow cache's evicted records (an
// export.RecordSink).
type recordSink struct {
	mu  sync.Mutex
	got []record.Record
}

func (s *recordSink) Name() string                { return "records" }
func (s *recordSink) Start(context.Context) error { return nil }
func (s *recordSink) Stop(context.Context) error  { return nil }

func (s *recordSink) OfferRecord(r *record.Record) {
	s.mu.Lock()
	s.got = append(s.got, *r)
	s.mu.Unlock()
}
