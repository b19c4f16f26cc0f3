package xdp

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// kernelCache is a FlowCacheState as package flowcache's Kernel (the collector's is the
// same), its times left on the program's clock (the test maps them to report numbers).
type kernelCache struct{ *FlowCacheState }

func (k kernelCache) Counts() (flowcache.KernelCounts, error) {
	c, err := k.FlowCacheState.Counts()
	return flowcache.KernelCounts(c), err
}

func (k kernelCache) ClockOffset() int64 { return 0 }

// kernelFlowCache is the kernel's geometry of flow cache configuration c.
func kernelFlowCache(c *flowcache.Config) FlowCache {
	h := &c.Histograms
	return FlowCache{Rows: c.Rows, Buckets: c.Buckets, MaxHops: c.MaxHops, LogBins: h.Scale == "log", Bins: h.Bins,
		Widths: [4]uint64{h.Width.HopLatency, h.Width.QueueOccupancy, h.Width.TxUtil, h.Width.Latency}, MaxSwitches: h.MaxSwitches}
}

// loadFlowCache loads the program for port 32766 with a new flow-cache state for c, and
// with detection when det is set; all closed when tb ends.
func loadFlowCache(tb testing.TB, c *flowcache.Config, det bool) (*ebpf.Collection, *FlowCacheState) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	f := kernelFlowCache(c)
	f.Parser = Parser{DSCP: []DSCPMatch{{0x17, 0x3f}, {0x01, 0x01}}, Probe: true, GPEPort: 4790, GenevePort: 6081}
	st, err := NewFlowCacheState(f)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	opt := Options{FlowCache: st}
	if det {
		ds, err := NewDetectState(Detect{MaxFlows: 1 << 14, MaxKeys: 1 << 14, Parser: Parser{DSCP: f.Parser.DSCP, Probe: true, GPEPort: 4790, GenevePort: 6081}})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { ds.Close() })
		opt.Detect = ds
	}
	coll, err := load(32766, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(coll.Close)
	return coll, st
}

// flowCacheStream builds TR v2.0 reports (INT v2.x) over nflows flows, 48 at a time, some
// IPv6: paths of
// 1 to 8 hops that change now and then (a switch replaced, the path longer or shorter),
// values over six orders of magnitude, hops without a hop latency, a queue occupancy or a
// tx utilization, and now and then a hop without a node id.
func flowCacheStream(tb testing.TB, n, nflows int, seed uint64) [][]byte {
	tb.Helper()
	_, tmpl, enc := genTemplate(tb, gen.DefaultConfig())
	rng := rand.New(rand.NewPCG(seed, 11))
	type flow struct {
		key  telemetry.FlowKey
		path []uint32
	}
	flows := make([]flow, nflows)
	for i := range flows {
		k := tmpl.Flow
		if i%7 == 3 {
			k.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i), 14: byte(i >> 8)}))
		} else {
			k.SetAddrs(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), netip.MustParseAddr("10.2.0.1"))
		}
		k.SrcPort, k.DstPort = uint16(1000+i), 80
		flows[i].key = k
		flows[i].path = make([]uint32, 1+rng.IntN(8))
		for j := range flows[i].path {
			flows[i].path[j] = uint32(1 + rng.IntN(14))
		}
	}
	var out [][]byte
	for i := 0; i < n; i++ {
		f := &flows[(i/40+rng.IntN(48))%nflows] // a window of 48 flows that moves on: some go idle
		switch rng.IntN(60) {
		case 0: // a switch replaced
			f.path[rng.IntN(len(f.path))] = uint32(1 + rng.IntN(14))
		case 1: // a longer path
			if len(f.path) < KernelMaxHops {
				f.path = append(f.path, uint32(1+rng.IntN(14)))
			}
		case 2: // a shorter one
			if len(f.path) > 1 {
				f.path = f.path[:len(f.path)-1]
			}
		}
		r := tmpl
		r.Flow = f.key
		r.Flags = telemetry.FlagFlow
		r.NodeID = f.path[len(f.path)-1]
		r.Seq = uint32(i) & 0x3fffff
		r.NHops = 0
		for j := len(f.path) - 1; j >= 0; j-- { // newest first
			h := r.AddHop()
			*h = tmpl.Hops[0]
			h.NodeID = f.path[j]
			scale := uint32(1) << (2 * rng.IntN(10))
			h.HopLatency = scale + uint32(rng.IntN(int(scale)))
			h.QueueOccupancy = uint32(rng.IntN(1 << rng.IntN(20)))
			h.TxUtil = uint32(rng.IntN(100))
			for _, fl := range []telemetry.Field{telemetry.FHopLatency, telemetry.FQueueOccupancy, telemetry.FTxUtil} {
				if rng.IntN(25) == 0 {
					h.Fields &^= fl
				}
			}
			if rng.IntN(200) == 0 {
				h.Fields &^= telemetry.FNodeID
			}
		}
		b, err := enc.Append(nil, &r)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// genTemplate returns a generator of cfg, its first report (a template to vary) and an
// encoder of its wire format.
func genTemplate(tb testing.TB, cfg gen.Config) (*gen.Generator, telemetry.Report, *wire.Encoder) {
	tb.Helper()
	g, err := gen.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var tmpl telemetry.Report
	if err := g.Walk(1, func(_ uint64, _ []byte, rs []telemetry.Report) error { tmpl = rs[0]; return nil }, nil); err != nil {
		tb.Fatal(err)
	}
	enc, err := wire.NewEncoder(g.WireConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return g, tmpl, enc
}

// monoNow is CLOCK_MONOTONIC in ns: the program's clock.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// runClock maps the program's times to report numbers: report i (from 1) ran between
// start[i-1] and end[i-1].
type runClock struct{ start, end []int64 }

func (c *runClock) run(fn func()) {
	c.start = append(c.start, monoNow())
	fn()
	c.end = append(c.end, monoNow())
}

// report returns the number of the report that ran at t, 0 when none did.
func (c *runClock) report(t int64) int64 {
	i := sort.Search(len(c.start), func(i int) bool { return c.start[i] > t }) - 1
	if i < 0 || t > c.end[i] {
		return 0
	}
	return int64(i + 1)
}

// toReports turns a kernel record's times into report numbers.
func (c *runClock) toReports(tb testing.TB, r *record.Record) {
	tb.Helper()
	first, last := c.report(r.First), c.report(r.Last)
	if first == 0 || last == 0 {
		tb.Fatalf("record of %v: times %d, %d are no run's", r.Flow, r.First, r.Last)
	}
	r.First, r.Last = first, last
}

// TestKernelFlowCacheSame runs one stream of reports, with path changes, evictions from
// full rows (a table far smaller than the flows), idle evictions and varied values, through
// package flowcache and through the XDP program's flow cache: the table (every flow, the
// top flows), the histograms, the counters and the evicted records must be the same.
func TestKernelFlowCacheSame(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rows   int
		bkts   int
		hops   int
		hist   flowcache.HistConfig
		detect bool
	}{
		{"log bins, 4 hops kept", 16, 4, 4, flowcache.HistConfig{Scale: "log", Bins: 16, MaxSwitches: 10,
			Width: flowcache.Widths{HopLatency: 1, QueueOccupancy: 1, TxUtil: 1, Latency: 1}}, false},
		{"linear bins, with detection", 16, 5, 8, flowcache.HistConfig{Scale: "linear", Bins: 12, MaxSwitches: 64,
			Width: flowcache.Widths{HopLatency: 5000, QueueOccupancy: 20000, TxUtil: 10, Latency: 40000}}, true},
		{"one bucket, one hop", 32, 1, 1, flowcache.HistConfig{Scale: "log", Bins: 40, MaxSwitches: 3,
			Width: flowcache.Widths{HopLatency: 1, QueueOccupancy: 1, TxUtil: 1, Latency: 1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := flowcache.DefaultConfig()
			cfg.Rows, cfg.Buckets, cfg.MaxHops, cfg.Histograms = tc.rows, tc.bkts, tc.hops, tc.hist
			cfg.IdleTimeout, cfg.Rings, cfg.RingEntries = 1, 1, 1<<14
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			testKernelFlowCacheSame(t, &cfg, tc.detect)
		})
	}
}

func testKernelFlowCacheSame(t *testing.T, cfg *flowcache.Config, det bool) {
	coll, st := loadFlowCache(t, cfg, det)
	prog := coll.Programs[ProgramName]
	var uev, kev []record.Record
	user := flowcache.New(*cfg, flowcache.Deps{Workers: 1,
		Records: []func(*record.Record){func(r *record.Record) { uev = append(uev, *r) }}})
	kern := flowcache.New(*cfg, flowcache.Deps{Workers: 1,
		Records: []func(*record.Record){func(r *record.Record) { kev = append(kev, *r) }}})
	if err := kern.SetKernel(kernelCache{st}); err != nil {
		t.Fatal(err)
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	stream := flowCacheStream(t, 12000, 300, 3)
	var clock runClock
	keys := map[telemetry.FlowKey]bool{}
	for i, b := range stream {
		var ret uint32
		var err error
		clock.run(func() { ret, err = prog.Run(&ebpf.RunOptions{Data: reportFrame(b)}) })
		if err != nil {
			t.Fatal(err)
		}
		if ret != xdpDrop {
			t.Fatalf("report %d: action %d, want XDP_DROP (in the kernel's flow cache)\n%x", i, ret, b)
		}
		rs, errs := dec.DecodeAll(wire.InputReport, b)
		if len(errs) > 0 || len(rs) != 1 {
			t.Fatalf("report %d: %v", i, errs)
		}
		rs[0].RecvTime = int64(i + 1)
		user.Process(0, &rs[0])
		keys[rs[0].Flow] = true
		if i%1000 == 999 { // the ager: flows not updated in the last 300 reports
			cut := i + 1 - 300
			if nu, nk := user.Age(int64(cut+1)), kern.Age(clock.start[cut-1]+1); nu != nk {
				t.Errorf("after report %d: the ager evicted %d flows in user space, %d in the kernel", i, nu, nk)
			}
		}
		if i%500 == 0 {
			user.DrainNow()
			kern.DrainNow()
		}
	}
	user.Flush(0)
	user.DrainNow()
	kern.DrainNow()

	// The evicted records, in order.
	for i := range kev {
		clock.toReports(t, &kev[i])
	}
	if len(uev) != len(kev) {
		t.Errorf("%d evicted records in user space, %d from the kernel", len(uev), len(kev))
	}
	for i := range min(len(uev), len(kev)) {
		if !reflect.DeepEqual(uev[i], kev[i]) {
			t.Fatalf("evicted record %d:\nuser space %+v\nkernel     %+v", i, uev[i], kev[i])
		}
	}
	// Every flow.
	found := 0
	for k := range keys {
		ur, uok := user.Lookup(&k)
		kr, kok := kern.Lookup(&k)
		if kok {
			clock.toReports(t, &kr)
		}
		if uok != kok || !reflect.DeepEqual(ur, kr) {
			t.Errorf("flow %v:\nuser space %v %+v\nkernel     %v %+v", k, uok, ur, kok, kr)
		}
		if uok {
			found++
		}
	}
	// The top flows (ties by last update: the times' order is the reports').
	for _, by := range []string{"packets", "latency"} {
		ut, kt := user.Top(by, 1000), kern.Top(by, 1000)
		for i := range kt {
			clock.toReports(t, &kt[i])
		}
		if !reflect.DeepEqual(ut, kt) {
			t.Errorf("top by %s:\nuser space %v\nkernel     %v", by, ut, kt)
		}
	}
	// The histograms.
	uh, kh := user.Histograms(), kern.Histograms()
	if us, ks := uh.Switches(), kh.Switches(); !reflect.DeepEqual(us, ks) {
		t.Errorf("switches with histograms: user space %v, kernel %v", us, ks)
	}
	nh := 0
	for _, sw := range uh.Switches() {
		for m := range record.NumMetrics {
			a, aok := uh.Histogram(sw, m)
			b, bok := kh.Histogram(sw, m)
			if aok != bok || !reflect.DeepEqual(a, b) {
				t.Errorf("switch %d %s:\nuser space %+v\nkernel     %+v", sw, m, a, b)
			}
			nh += len(a.Counts)
		}
	}
	if a, b := uh.E2E(), kh.E2E(); !reflect.DeepEqual(a, b) {
		t.Errorf("end to end:\nuser space %+v\nkernel     %+v", a, b)
	}
	// The counters.
	us, ks := user.Stats(), kern.Stats()
	if ks.Kernel == nil || ks.Kernel.LockBusy != 0 || ks.Kernel.RingFull != 0 || ks.Kernel.Errors != 0 {
		t.Errorf("kernel stats %+v", ks.Kernel)
	}
	ks.Kernel = nil
	if !reflect.DeepEqual(us, ks) {
		t.Errorf("stats:\nuser space %+v\nkernel     %+v", us, ks)
	}
	t.Logf("%d reports, %d flows (%d in the table), %d evicted (%+v), %d switches, %d non-empty bins, %d hop samples past max_switches",
		len(stream), len(keys), found, len(kev), us.Evictions, us.Switches, nh, us.SwitchOverflow)
	if us.Evictions.Collision < 100 || us.Evictions.Idle < 10 || us.TruncatedPaths == 0 && cfg.MaxHops < KernelMaxHops || found < 5 {
		t.Errorf("the stream does not exercise the cache: %+v", us)
	}
	if cnt, _ := st.Counts(); cnt.Reports != uint64(len(stream)) {
		t.Errorf("the kernel's cache processed %d reports of %d", cnt.Reports, len(stream))
	}
}

// benchObject makes the benchmarks load another build of the program, the object file
// INTAKE_BPF_OBJECT names, to compare; the returned func puts the embedded one back.
func benchObject(b *testing.B) func() {
	f := os.Getenv("INTAKE_BPF_OBJECT")
	if f == "" {
		return func() {}
	}
	o, err := os.ReadFile(f)
	if err != nil {
		b.Fatal(err)
	}
	old := _IntakeBytes
	_IntakeBytes = o
	return func() { _IntakeBytes = old }
}

// BenchmarkKernelFlowCache runs 5-hop TR v2.0 reports of 4096 flows whose values do not
// change (INTCollector's replay, the steady state) through the program with the flow
// cache in the kernel, detection, or both, at the default geometry, and reports the
// program's run time per report (bpf-ns/report): each frame is run 64 times in a row by
// BPF_PROG_TEST_RUN, which times the runs in the kernel, and the frames go round the flows.
func BenchmarkKernelFlowCache(b *testing.B) {
	defer benchObject(b)()
	frames := steadyFrames(b)
	cfg := flowcache.DefaultConfig()
	for _, mode := range []string{"flowcache", "both", "detect"} {
		b.Run(mode, func(b *testing.B) {
			var coll *ebpf.Collection
			if mode == "detect" {
				coll, _ = loadDetect(b, Detect{MaxFlows: 8192, MaxKeys: 8192})
			} else {
				coll, _ = loadFlowCache(b, &cfg, mode == "both")
			}
			prog := coll.Programs[ProgramName]
			for _, f := range frames { // the flows' first reports: new keys, new flows
				if _, err := prog.Run(&ebpf.RunOptions{Data: f}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var total time.Duration
			n := 0
			for i := 0; i < b.N; i += 64 {
				ret, d, err := prog.Benchmark(frames[(i/64)%len(frames)], 64, nil)
				if err != nil || ret != xdpDrop {
					b.Fatal(ret, err)
				}
				total += d * 64
				n += 64
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n), "bpf-ns/report")
		})
	}
}

// steadyFrames is BenchmarkKernelFlowCache's frames: one report of each of 4096 flows,
// values that do not change.
func steadyFrames(b *testing.B) [][]byte {
	gc := gen.DefaultConfig()
	gc.Flows, gc.Model, gc.Vary = 4096, gen.ModelDraw, 0
	g, err := gen.New(gc)
	if err != nil {
		b.Fatal(err)
	}
	var frames [][]byte
	if err := g.Walk(4096, func(_ uint64, p []byte, _ []telemetry.Report) error {
		frames = append(frames, reportFrame(append([]byte(nil), p...)))
		return nil
	}, nil); err != nil {
		b.Fatal(err)
	}
	return frames
}

// BenchmarkKernelPair compares another build of the program (the object file
// INTAKE_BPF_OBJECT names) with the embedded one in the same run, detection and the flow
// cache both on: each is loaded with maps of its own, and the two take turns, 512 runs
// each, over BenchmarkKernelFlowCache's frames one run a frame (every report another flow,
// as on a wire). other-ns and this-ns are their run times per report. Two builds measured
// apart swing by a third on this VM; taking turns puts them under the same load.
func BenchmarkKernelPair(b *testing.B) {
	f := os.Getenv("INTAKE_BPF_OBJECT")
	if f == "" {
		b.Skip("skipped: INTAKE_BPF_OBJECT names no object to compare with")
	}
	other, err := os.ReadFile(f)
	if err != nil {
		b.Fatal(err)
	}
	frames := steadyFrames(b)
	cfg := flowcache.DefaultConfig()
	embedded := _IntakeBytes
	defer func() { _IntakeBytes = embedded }()
	var progs [2]*ebpf.Program
	for k, o := range [][]byte{other, embedded} {
		_IntakeBytes = o
		coll, _ := loadFlowCache(b, &cfg, true)
		progs[k] = coll.Programs[ProgramName]
		for _, f := range frames { // the flows' first reports: new keys, new flows
			if _, err := progs[k].Run(&ebpf.RunOptions{Data: f}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	var total [2]time.Duration
	var n [2]int
	for i := range b.N {
		k := i / 512 & 1
		ret, d, err := progs[k].Benchmark(frames[(i/1024*512+i%512)%len(frames)], 1, nil)
		if err != nil || ret != xdpDrop {
			b.Fatal(ret, err)
		}
		total[k] += d
		n[k]++
	}
	b.ReportMetric(float64(total[0].Nanoseconds())/float64(max(n[0], 1)), "other-ns")
	b.ReportMetric(float64(total[1].Nanoseconds())/float64(max(n[1], 1)), "this-ns")
}

// TestKernelFlowCacheLargest loads the program with the largest geometry and histograms the
// kernel takes (64 buckets of 32 hops, 1365 bins), with detection: the verifier's work
// grows with both, and it must still accept the program.
func TestKernelFlowCacheLargest(t *testing.T) {
	cfg := flowcache.DefaultConfig()
	cfg.Rows, cfg.Buckets, cfg.MaxHops = 2, flowcache.MaxBuckets, 32
	cfg.Histograms.Bins = MaxKernelBins
	coll, st := loadFlowCache(t, &cfg, true)
	for _, b := range flowCacheStream(t, 300, 200, 5) {
		if ret, err := coll.Programs[ProgramName].Run(&ebpf.RunOptions{Data: reportFrame(b)}); err != nil || ret != xdpDrop {
			t.Fatalf("action %d, %v", ret, err)
		}
	}
	if c, err := st.Counts(); err != nil || c.Reports != 300 || c.Inserts == 0 || c.LockBusy != 0 {
		t.Errorf("counts %+v, %v", c, err)
	}
}
