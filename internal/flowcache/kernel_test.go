package flowcache

import (
	"reflect"
	"testing"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// fakeKernel is a Kernel backed by another cache (src): its table has the layout, and its
// lock words are even when unlocked, as the kernel's sequence counts are; its times are
// src's less off (the kernel's clock). What SetKernel links, without BPF (package xdp's
// TestKernelFlowCacheSame runs the program's).
type fakeKernel struct {
	src *FlowCache
	off int64
}

func (k *fakeKernel) Table() []uint64    { return k.src.t.mem }
func (k *fakeKernel) ClockOffset() int64 { return k.off }
func (k *fakeKernel) Age(cut int64) (int, error) {
	return k.src.Age(cut + int64(k.src.cfg.IdleTimeout)), nil
}
func (k *fakeKernel) ReadEvicted(fn func(b []uint64, why uint8)) (int, error) {
	n := 0
	for _, r := range k.src.rings.rings {
		for r.pop(func(b []uint64, why record.Reason) { fn(b, uint8(why)) }) {
			n++
		}
	}
	return n, nil
}
func (k *fakeKernel) Pending() int                { return k.src.rings.stats().Pending }
func (k *fakeKernel) Switches() ([]uint32, error) { return k.src.hist.Switches(), nil }
func (k *fakeKernel) Hist(sw uint32, dst []uint64) (bool, error) {
	h := k.src.hist
	si := h.lookup(sw)
	if si < 0 {
		return false, nil
	}
	for m := range record.NumMetrics {
		h.counts(si, int(m), dst[int(m)*h.bins:][:h.bins])
	}
	return true, nil
}
func (k *fakeKernel) E2E(dst []uint64) error {
	k.src.hist.counts(0, e2eHist, dst)
	return nil
}
func (k *fakeKernel) Counts() (KernelCounts, error) {
	st := k.src.Stats()
	return KernelCounts{Reports: st.Reports, NoHops: st.SkippedNoHops, NoFlow: st.SkippedNoFlow, Truncated: st.TruncatedPaths,
		Updates: st.Updates, Inserts: st.Inserts, New: uint64(st.Flows) + st.Evictions.Idle, Collisions: st.Evictions.Collision,
		Idle: st.Evictions.Idle, Pushed: st.Rings.Pushed, RingFull: st.Rings.Drops, Overflow: st.SwitchOverflow, Switches: st.Switches}, nil
}

// A cache linked to the kernel's (SetKernel) answers from both tables, the kernel's times made
// Unix ns; its drain hands the kernel's evicted records to its sinks, its ager sweeps both,
// its histograms and counters add the kernel's, and reports the program has cached are
// skipped (one at a time and in batches).
func TestKernelLink(t *testing.T) {
	cfg := small(1, 2)
	cfg.IdleTimeout = 100
	var got, want []record.Record
	sink := func(to *[]record.Record) Deps {
		return Deps{Records: []func(*record.Record){func(r *record.Record) { *to = append(*to, *r) }}}
	}
	kern := New(cfg, Deps{})  // the program's cache, on its clock
	f := New(cfg, sink(&got)) // the cache in user space, linked to it
	// What f must answer: wantK is the program's cache on the Unix clock, wantU the
	// reports the program did not parse, all every report (for the histograms).
	wantK, wantU, all := New(cfg, sink(&want)), New(cfg, sink(&want)), New(cfg, Deps{})
	const off = 1_000_000
	if err := f.SetKernel(&fakeKernel{kern, off}); err != nil {
		t.Fatal(err)
	}

	k1, k2, k3, u1 := flow(1), flow(2), flow(3), flow(4)
	for _, x := range []struct {
		r      *telemetry.Report
		kernel bool // the program parsed it: kern gets it on its clock, f sees it marked
	}{
		{report(k1, off+10, hop{7, 100, 5, 50}, hop{8, 200, 6, 60}), true},
		{report(u1, off+11, hop{7, 300, 7, 70}), false},
		{report(k1, off+12, hop{7, 120, 5, 50}, hop{8, 220, 6, 60}), true},
		{report(k2, off+13, hop{9, 400, 1, 10}), true},
		{report(k3, off+300, hop{9, 500, 2, 20}), true}, // evicts k1 from the kernel's full row
	} {
		all.Process(0, x.r)
		if x.kernel {
			wantK.Process(0, x.r)
			kr := *x.r
			kr.RecvTime -= off
			kern.Process(0, &kr)
			x.r.Kernel = telemetry.KernelCached
			f.ProcessBatch(0, []telemetry.Report{*x.r}) // skipped, as by Process
		} else {
			wantU.Process(0, x.r)
		}
		f.Process(0, x.r)
	}
	for _, c := range []*FlowCache{kern, f, wantK, wantU, all} {
		c.Flush(0)
	}
	for _, k := range []telemetry.FlowKey{k1, k2, k3, u1} {
		g, gok := f.Lookup(&k)
		w, wok := wantK.Lookup(&k)
		if k == u1 {
			w, wok = wantU.Lookup(&k)
		}
		if gok != wok || !reflect.DeepEqual(g, w) {
			t.Errorf("flow %d: %v %+v, want %v %+v", k.SrcPort, gok, g, wok, w)
		}
	}
	ports := func(rs []record.Record) (p []uint16) {
		for _, r := range rs {
			p = append(p, r.Flow.SrcPort)
		}
		return p
	}
	if g := ports(f.Top("packets", 10)); !reflect.DeepEqual(g, []uint16{3, 2, 4}) { // one report each, newest first
		t.Errorf("top by packets: flows %v, want [3 2 4]", g)
	}
	if g := ports(f.Top("latency", 2)); !reflect.DeepEqual(g, []uint16{3, 2}) {
		t.Errorf("top 2 by latency: flows %v, want [3 2]", g)
	}
	if n := f.WalkUpdated(off+13, func(*record.Record) {}); n != 2 {
		t.Errorf("flows updated since %d: %d, want 2", off+13, n)
	}
	gh, wh := f.Histograms(), all.Histograms()
	if g, w := gh.Switches(), wh.Switches(); !reflect.DeepEqual(g, w) {
		t.Errorf("switches %v, want %v", g, w)
	}
	for _, sw := range wh.Switches() {
		for m := range record.NumMetrics {
			g, _ := gh.Histogram(sw, m)
			w, _ := wh.Histogram(sw, m)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("switch %d %s: %+v, want %+v", sw, m, g, w)
			}
		}
	}
	if g, w := gh.E2E(), wh.E2E(); !reflect.DeepEqual(g, w) {
		t.Errorf("e2e %+v, want %+v", g, w)
	}
	// The ager: k2 in the kernel's table and u1 in f's are idle at off+250.
	if g, w := f.Age(off+250), wantK.Age(off+250)+wantU.Age(off+250); g != w || g != 2 {
		t.Errorf("the ager evicted %d, want %d", g, w)
	}
	f.DrainNow()
	wantK.DrainNow()
	wantU.DrainNow()
	byFlow := func(rs []record.Record) map[uint16]record.Record {
		m := map[uint16]record.Record{}
		for _, r := range rs {
			m[r.Flow.SrcPort] = r
		}
		return m
	}
	if g, w := byFlow(got), byFlow(want); len(got) != 3 || !reflect.DeepEqual(g, w) {
		t.Errorf("evicted %+v, want %+v", got, want)
	}
	gs, ks, us := f.Stats(), wantK.Stats(), wantU.Stats()
	if gs.Kernel == nil || gs.Kernel.Reports != ks.Reports || gs.Kernel.Flows != ks.Flows {
		t.Errorf("kernel stats %+v, want %+v", gs.Kernel, ks)
	}
	if gs.Reports != 5 || gs.Updates != 5 || gs.Inserts != ks.Inserts+us.Inserts || gs.Flows != ks.Flows+us.Flows ||
		gs.Evictions.Collision != 1 || gs.Evictions.Idle != 2 || gs.Rings.Pushed != 3 || gs.Rings.Exported != 3 || gs.Switches != 3 {
		t.Errorf("stats %+v", gs)
	}
	if err := f.SetKernel(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup(&k3); ok || f.Stats().Kernel != nil || len(f.Histograms().Switches()) != 1 {
		t.Errorf("unlinked: still reads the kernel's cache")
	}
}
