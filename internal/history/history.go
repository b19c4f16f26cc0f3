// Package history owns the collector's memory of the last hour (docs/api.md,
// "GET /api/v1/history"): an in-memory ring of per-switch and per-flow figures, sampled
// once a period from what the flow cache and the detector already keep, so that what
// happened a few minutes ago stays visible after the flows age out. It does no work per
// report: every period it walks the flows updated in the period (as the flow cache's
// latest-values push does) and the detector's switch keys (as GET /api/v1/flow reads
// them), on the normal path, and keeps a fixed number of points (Retention/Period periods
// of at most MaxSwitches switches and MaxFlows flows), allocated at New and counted in the
// budget. The history is not persisted: a restarted collector starts with an empty one.
package history

import (
	"bytes"
	"container/heap"
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// SwitchState is what the detector knows of a switch at a sample (detect.SwitchSample):
// the largest latest queue occupancy and tx utilization among its keys updated in the
// period, and its dropped-packet reports so far.
type SwitchState struct {
	Switch   uint32
	Updated  bool
	QueueMax uint64
	TxMax    uint64
	Drops    uint64
}

// Deps are what the history samples; a nil function is a component that is off.
type Deps struct {
	// Flows walks the flows updated at or after since (flowcache.FlowCache.WalkUpdated).
	Flows func(since int64, fn func(*record.Record)) int
	// SwitchReports calls fn with each switch's reports so far that carried a hop metric
	// there (the flow cache's histogram totals, flowcache.Histograms.SwitchSamples).
	SwitchReports func(fn func(sw uint32, reports uint64))
	// Switches calls fn with the detector's state of each switch (detect.Detector.Switches).
	Switches func(since int64, fn func(*SwitchState))
	Metrics  *metrics.Registry
	Logger   *slog.Logger
	// Now is the wall clock (time.Now when nil).
	Now func() time.Time
}

// switchPoint is one switch's figures over one period.
type switchPoint struct {
	id                             uint32
	flows                          uint32 // flows through the switch updated in the period
	latMean                        float64
	latMax, queueMax, txMax, repts uint64
	drops                          uint64
}

// flowPoint is one flow's figures over one period.
type flowPoint struct {
	key       telemetry.FlowKey
	packets   uint32
	latMean   float64
	latLatest uint64 // the flow's latest at the sample: the flow cache keeps no maximum
}

// slot is one period's points: sw[i*MaxSwitches:][:nsw], fl[i*MaxFlows:][:nfl].
type slot struct {
	t        int64 // the period's end (Unix ns, a multiple of Period); 0: empty
	nsw, nfl int
}

// History is the component. New is inert; Start runs the sampler.
type History struct {
	cfg  Config
	deps Deps
	log  *slog.Logger

	mu    sync.RWMutex // the ring
	slots []slot
	sw    []switchPoint
	fl    []flowPoint
	head  int // the newest slot; -1: none

	smu       sync.Mutex // the sampler's state
	last      int64      // the previous sample's time
	prevFlows map[telemetry.FlowKey]flowSums
	curFlows  map[telemetry.FlowKey]flowSums
	prevSw    map[uint32]swCounters
	acc       map[uint32]*switchAcc
	accPool   []switchAcc
	cands     candHeap

	samples   atomic.Uint64
	swDropped atomic.Uint64

	stop chan struct{}
	done chan struct{}
}

// flowSums are a flow's running counts at a sample, to difference at the next.
type flowSums struct {
	packets, latSum, latCount uint64
}

// swCounters are a switch's running counts at a sample.
type swCounters struct{ reports, drops uint64 }

// switchAcc accumulates one switch's figures during a sample.
type switchAcc struct {
	p            switchPoint
	latSum, latN uint64
}

// New builds the history of cfg (validated), its ring allocated.
func New(cfg Config, deps Deps) *History {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	n := cfg.slots()
	h := &History{cfg: cfg, deps: deps, log: deps.Logger, head: -1,
		slots: make([]slot, n), sw: make([]switchPoint, n*cfg.MaxSwitches), fl: make([]flowPoint, n*cfg.MaxFlows),
		prevFlows: make(map[telemetry.FlowKey]flowSums, cfg.MaxFlows), curFlows: make(map[telemetry.FlowKey]flowSums, cfg.MaxFlows),
		prevSw: make(map[uint32]swCounters, maxCounted*cfg.MaxSwitches), acc: make(map[uint32]*switchAcc, cfg.MaxSwitches),
		accPool: make([]switchAcc, 0, cfg.MaxSwitches), cands: make(candHeap, 0, cfg.MaxFlows+1)}
	if r := deps.Metrics; r != nil {
		r.Counter("intake_history_samples_total", "Periods the history sampled.").Func(func() float64 { return float64(h.samples.Load()) })
		r.Counter("intake_history_switches_dropped_total", "Switch figures a period did not keep because history.max_switches switches were kept already.").
			Func(func() float64 { return float64(h.swDropped.Load()) })
	}
	return h
}

// Name is the component's name.
func (h *History) Name() string { return "history" }

// Config returns the configuration.
func (h *History) Config() Config { return h.cfg }

// Start empties the history and samples at every multiple of the period from now on.
func (h *History) Start(context.Context) error {
	h.mu.Lock()
	h.head = -1
	clear(h.slots)
	h.mu.Unlock()
	h.smu.Lock()
	h.last = h.deps.Now().UnixNano()
	clear(h.prevFlows)
	clear(h.prevSw)
	h.smu.Unlock()
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.run()
	return nil
}

// Stop ends the sampler.
func (h *History) Stop(context.Context) error {
	if h.stop == nil {
		return nil
	}
	close(h.stop)
	<-h.done
	h.stop = nil
	return nil
}

func (h *History) run() {
	defer close(h.done)
	p := int64(h.cfg.Period)
	for {
		now := h.deps.Now().UnixNano()
		next := (now/p + 1) * p
		t := time.NewTimer(time.Duration(next - now))
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-t.C:
		}
		h.Sample(next)
	}
}

// Newest is the time of the newest period (Unix ns), 0 before the first.
func (h *History) Newest() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.head < 0 {
		return 0
	}
	return h.slots[h.head].t
}

// Samples is the number of periods sampled since New.
func (h *History) Samples() uint64 { return h.samples.Load() }

// Drops is what the history lost for lack of room: switch figures of a period past
// history.max_switches.
func (h *History) Drops() map[string]uint64 {
	return map[string]uint64{"history.switches": h.swDropped.Load()}
}

// Sample takes the period that ends at t (Unix ns): the flows updated since the previous
// sample and the switches they crossed, and the detector's switches, as one point each. A
// t not after the newest point's is ignored.
func (h *History) Sample(t int64) {
	h.smu.Lock()
	defer h.smu.Unlock()
	h.mu.RLock()
	stale := h.head >= 0 && t <= h.slots[h.head].t
	h.mu.RUnlock()
	if stale {
		return
	}
	since := h.last
	h.last = t
	clear(h.acc)
	h.accPool = h.accPool[:0]
	h.cands = h.cands[:0]
	if h.deps.Flows != nil {
		h.deps.Flows(since, h.flow)
	}
	if h.deps.SwitchReports != nil {
		h.deps.SwitchReports(func(sw uint32, n uint64) {
			prev, ok := h.counters(sw)
			if !ok {
				return
			}
			d := delta(n, prev.reports)
			prev.reports = n
			h.prevSw[sw] = prev
			if a := h.switchAt(sw, d > 0); a != nil {
				a.p.repts = d
			}
		})
	}
	if h.deps.Switches != nil {
		h.deps.Switches(since, func(s *SwitchState) {
			prev, ok := h.counters(s.Switch)
			if !ok {
				return
			}
			d := delta(s.Drops, prev.drops)
			prev.drops = s.Drops
			h.prevSw[s.Switch] = prev
			if a := h.switchAt(s.Switch, s.Updated || d > 0); a != nil {
				a.p.drops = d
				a.p.queueMax, a.p.txMax = max(a.p.queueMax, s.QueueMax), max(a.p.txMax, s.TxMax)
			}
		})
	}
	// The flows kept become the next sample's reference.
	h.prevFlows, h.curFlows = h.curFlows, h.prevFlows
	clear(h.prevFlows)
	for i := range h.cands {
		h.prevFlows[h.cands[i].p.key] = h.cands[i].sums
	}
	h.store(t)
	h.samples.Add(1)
}

// maxCounted bounds the switches whose running counts the history follows, as a multiple
// of max_switches (a switch met in a period need not be one kept in it).
const maxCounted = 4

// counters returns switch sw's running counts at the previous sample; false when there is
// no room to follow another switch (counted dropped).
func (h *History) counters(sw uint32) (swCounters, bool) {
	c, ok := h.prevSw[sw]
	if !ok && len(h.prevSw) >= maxCounted*h.cfg.MaxSwitches {
		h.swDropped.Add(1)
		return c, false
	}
	return c, true
}

// delta is a running count's increase; a count that went down started again (a key that
// expired, a flow evicted and back) and counts from 0.
func delta(cur, prev uint64) uint64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// switchAt returns switch sw's accumulator, made if make is set and there is room (a
// switch past max_switches is counted dropped), or nil.
func (h *History) switchAt(sw uint32, make bool) *switchAcc {
	if a := h.acc[sw]; a != nil || !make {
		return a
	}
	if len(h.acc) >= h.cfg.MaxSwitches {
		h.swDropped.Add(1)
		return nil
	}
	h.accPool = append(h.accPool, switchAcc{p: switchPoint{id: sw}})
	a := &h.accPool[len(h.accPool)-1]
	h.acc[sw] = a
	return a
}

// flow takes one flow updated in the period: its hops' latest values into their switches'
// figures, and the flow itself as a candidate for the period's MaxFlows.
func (h *History) flow(rec *record.Record) {
	for i := range rec.Hops {
		hp := &rec.Hops[i]
		a := h.switchAt(hp.NodeID, true)
		if a == nil {
			continue
		}
		a.p.flows++
		if hp.Count[record.HopLatency] > 0 {
			v := hp.Latest[record.HopLatency]
			a.latSum += v
			a.latN++
			a.p.latMax = max(a.p.latMax, v)
		}
		if hp.Count[record.QueueOccupancy] > 0 {
			a.p.queueMax = max(a.p.queueMax, hp.Latest[record.QueueOccupancy])
		}
		if hp.Count[record.TxUtil] > 0 {
			a.p.txMax = max(a.p.txMax, hp.Latest[record.TxUtil])
		}
	}
	if h.cfg.MaxFlows == 0 {
		return
	}
	cur := flowSums{rec.Packets, rec.LatSum, rec.LatCount}
	d := cur
	if p, ok := h.prevFlows[rec.Flow]; ok && cur.packets >= p.packets && cur.latCount >= p.latCount {
		d = flowSums{cur.packets - p.packets, cur.latSum - p.latSum, cur.latCount - p.latCount}
	}
	if d.packets == 0 {
		return
	}
	c := cand{sums: cur, p: flowPoint{key: rec.Flow, packets: uint32(min(d.packets, 1<<32-1))}}
	if d.latCount > 0 {
		c.p.latMean = float64(d.latSum) / float64(d.latCount)
		c.p.latLatest = rec.LatLatest
	}
	if len(h.cands) < h.cfg.MaxFlows {
		heap.Push(&h.cands, c)
	} else if h.cands.less(&h.cands[0], &c) {
		h.cands[0] = c
		heap.Fix(&h.cands, 0)
	}
}

// store writes the period's points as the ring's newest slot (the oldest goes).
func (h *History) store(t int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.head = (h.head + 1) % len(h.slots)
	s := &h.slots[h.head]
	*s = slot{t: t}
	sw := h.sw[h.head*h.cfg.MaxSwitches:][:h.cfg.MaxSwitches]
	for i := range h.accPool {
		a := &h.accPool[i]
		if a.latN > 0 {
			a.p.latMean = float64(a.latSum) / float64(a.latN)
		}
		sw[s.nsw] = a.p
		s.nsw++
	}
	sort.Slice(sw[:s.nsw], func(i, j int) bool { return sw[i].id < sw[j].id })
	fl := h.fl[h.head*h.cfg.MaxFlows:][:h.cfg.MaxFlows]
	for i := range h.cands {
		fl[s.nfl] = h.cands[i].p
		s.nfl++
	}
}

// cand is a flow of the period, ranked by its reports in the period.
type cand struct {
	p    flowPoint
	sums flowSums
}

// candHeap keeps the period's MaxFlows flows with the most reports: a min-heap, the one to
// give way at the root.
type candHeap []cand

// less orders by reports, then by key (so that equal flows are kept the same way on every
// member).
func (c candHeap) less(a, b *cand) bool {
	if a.p.packets != b.p.packets {
		return a.p.packets < b.p.packets
	}
	return keyLess(&a.p.key, &b.p.key)
}

// keyLess orders flow keys by their bytes.
func keyLess(a, b *telemetry.FlowKey) bool {
	if c := bytes.Compare(a.Src[:], b.Src[:]); c != 0 {
		return c < 0
	}
	if c := bytes.Compare(a.Dst[:], b.Dst[:]); c != 0 {
		return c < 0
	}
	if a.SrcPort != b.SrcPort {
		return a.SrcPort < b.SrcPort
	}
	if a.DstPort != b.DstPort {
		return a.DstPort < b.DstPort
	}
	if a.Proto != b.Proto {
		return a.Proto < b.Proto
	}
	return !a.IPv6 && b.IPv6
}

func (c candHeap) Len() int           { return len(c) }
func (c candHeap) Less(i, j int) bool { return c.less(&c[i], &c[j]) }
func (c candHeap) Swap(i, j int)      { c[i], c[j] = c[j], c[i] }
func (c *candHeap) Push(x any)        { *c = append(*c, x.(cand)) }
func (c *candHeap) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}
