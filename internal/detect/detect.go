// Package detect owns intake's metric model and its event detection, the INTCollector fast
// path (§III-C metrics, §III-D event detection, §III-E1 periodic push) extended with the
// SmartNIC sink's threshold-crossing events (§III-C, events T and C, per switch and end to
// end).
//
// The metric model (INTCollector Table I, extended to INT v2.x): per flow (5-tuple) the path
// (node ids, source to sink) and the end-to-end latency (sum of hop latencies); per flow and
// switch the hop latency; per (switch, queue) queue occupancy and congestion; per (switch,
// egress port) tx utilization; per (switch, buffer) buffer occupancy; per (switch, reason)
// drop counts; per (node, hw_id) report sequence gaps. Measurement names are event's.
//
// The Detector is an ingest.Processor. For every report it updates the latest value of every
// metric key the report carries and publishes an event.Event on the Bus when:
//   - the key is new (new_key);
//   - a flow's path differs from the last one (path_change);
//   - |V(t2) − V(t1)| > T(m), V(t1) the value last exported (change; T(m) from
//     detect.change.<measurement>);
//   - the value crosses above detect.above.<measurement> (above), or back to ≤ it (below).
//
// Values exactly at a threshold raise nothing: both rules are strict inequalities. State is
// sharded by key hash (flows by FlowHash, switch keys by switch id) under one mutex per
// shard, preallocated, bounded by max_flows and max_keys with least-recently-updated
// eviction (to a tick of about a millisecond), counted. Process allocates nothing.
// ProcessBatch (the ingest workers' path) takes each shard's lock once for all of a batch's
// updates to it, applies the common hop and values that raise nothing inline, prefetches
// flow entries when the resident flows are far beyond the caches, and publishes the events
// of each shard with one ring operation, waking consumers once per batch.
//
// Snapshot is the periodic push: the latest value of every live key, and expiry of keys not
// updated for detect.expire. Counters give INTCollector §V-B2's reduction factor: metric
// values seen (M_all) against values exported (events and periodic pushes, counted by the
// export pipeline).
package detect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/prefetch"
	"github.com/intake-int/intake/telemetry"
)

// never is the level a rule that is off compares against: no difference exceeds it and no
// value is above it, so the hot path needs no second test. Whether a rule is on is kept
// apart (changeOn, aboveOn): a level set to this same value is a rule in force, shown as
// such, not a rule silently turned off.
const never = math.MaxUint64

// Detector is the event detector. New is inert; Start runs the event log.
type Detector struct {
	log    *Log
	cfg    Config
	bus    *event.Bus
	shards []*shard
	mask   uint64

	change   [event.NumMeasurements]atomic.Uint64
	above    [event.NumMeasurements]atomic.Uint64
	changeOn [event.NumMeasurements]atomic.Bool
	aboveOn  [event.NumMeasurements]atomic.Bool
	thrGen   atomic.Uint64 // bumped by SetThreshold and ClearThreshold: workers reload their copies

	workers     []workerCounts
	stageAt     int // ProcessBatch prefetches flow entries with more flows resident (stageFlowsAbove)
	stageKeysAt int // and hop memo slots with more switch keys resident (stageKeysAbove)

	kern   kernelLink  // detect.kernel: the XDP program's detector, linked between Start and Stop
	kstate KernelState // detect.kernel: what opens it
	kopen  bool        // kstate is open (between Start and Stop)
}

// Counter slots per worker.
const (
	cReports = iota
	cValues  // M_all: metric values seen
	cEvent0  // events by kind
	nCounts  = cEvent0 + int(event.NumKinds)
)

// workerCounts are counted in plain fields by the worker and published at Flush, as ingest
// does (an atomic per value would cost more than detecting).
type workerCounts struct {
	local [nCounts]uint64
	pub   [nCounts]atomic.Uint64
	b     *batch // the worker's scratch
	_     [64]byte
}

// Deps are what a Detector works with besides its configuration.
type Deps struct {
	// Bus receives the events; the API's event log and stream read it (a private bus when
	// nil).
	Bus *event.Bus
	// Workers is the number of receive workers that call Process (at least 1).
	Workers int
	// Metrics, when set, gets the detector's series.
	Metrics *metrics.Registry
	// Kernel, with detect.kernel, is the detector's state in the XDP program: the detector
	// opens it at Start, writes its rules into it and reads its counters and tables, and
	// closes it at Stop, keeping its last counters.
	Kernel KernelState
}

// KernelState is the detector's state in the kernel (detect.kernel), opened and closed by
// the detector that uses it.
type KernelState interface {
	Open() (Kernel, error)
	Close() error
}

// New builds a detector publishing to deps.Bus. cfg must have passed Validate. It starts
// nothing: the event log that GET /api/v1/events reads (made by RegisterAPI: without the
// API nobody reads it) runs between Start and Stop.
func New(cfg Config, deps Deps) *Detector {
	bus := deps.Bus
	if bus == nil {
		bus = &event.Bus{}
	}
	d := &Detector{cfg: cfg, bus: bus, kstate: deps.Kernel, shards: make([]*shard, cfg.Shards), mask: uint64(cfg.Shards - 1)}
	perFlows, perKeys := shardCap(cfg.MaxFlows, cfg.Shards), shardCap(cfg.MaxKeys, cfg.Shards)
	for i := range d.shards {
		d.shards[i] = newShard(perFlows, perKeys)
	}
	for m := range d.change {
		d.change[m].Store(never)
		d.above[m].Store(never)
	}
	for k, v := range cfg.Change {
		if m, ok := event.ParseMeasurement(k); ok {
			d.SetThreshold(event.KindChange, m, v)
		}
	}
	for k, v := range cfg.Above {
		if m, ok := event.ParseMeasurement(k); ok {
			d.SetThreshold(event.KindAbove, m, v)
		}
	}
	d.stageAt = int(stageFlowsAbove / unsafe.Sizeof(flowEntry{}))
	d.stageKeysAt = stageKeysAbove
	d.thrGen.Store(1)
	d.workers = make([]workerCounts, max(deps.Workers, 1))
	for i := range d.workers {
		d.workers[i].b = d.newBatch()
		d.workers[i].b.worker = uint64(i)
	}
	if deps.Metrics != nil {
		d.registerMetrics(deps.Metrics)
	}
	return d
}

// Name implements ingest.Processor.
func (d *Detector) Name() string { return "detect" }

// Start runs the event log.
func (d *Detector) Start(context.Context) error {
	if d.kstate != nil {
		k, err := d.kstate.Open()
		if err != nil {
			return fmt.Errorf("detect.kernel: %w", err)
		}
		if err := d.SetKernel(k); err != nil {
			d.SetKernel(nil)
			d.kstate.Close()
			return fmt.Errorf("detect.kernel: writing the rules: %w", err)
		}
		d.kopen = true
	}
	if d.log != nil {
		d.log.start()
	}
	return nil
}

// Stop ends the event log (the log keeps what it holds for queries).
func (d *Detector) Stop(context.Context) error {
	var err error
	if d.kopen {
		// The detector keeps the program's last counters, for the stop summary and the
		// status. SetKernel returns once nothing uses the open state (a snapshot, a
		// query): only then is it freed.
		var kc KernelCounts
		d.withKernel(func(k Kernel) { kc, err = k.Counts() })
		if err == nil {
			d.SetKernel(stoppedKernel{kc})
		} else {
			d.SetKernel(nil)
		}
		err = errors.Join(err, d.kstate.Close())
		d.kopen = false
	}
	if d.log != nil {
		d.log.stop()
	}
	return err
}

// Flush implements ingest.Flusher: it publishes the worker's counters.
func (d *Detector) Flush(worker int) {
	c := &d.workers[worker]
	for i, v := range c.local {
		if c.pub[i].Load() != v {
			c.pub[i].Store(v)
		}
	}
}

// Bus returns the bus events are published on.
func (d *Detector) Bus() *event.Bus { return d.bus }

// SetThreshold sets T(m) (change) or the above level of measurement m at run time and turns
// the rule on. Workers see it at their next report.
func (d *Detector) SetThreshold(kind event.Kind, m event.Measurement, v uint64) {
	d.setRule(kind, m, v, true)
}

// ClearThreshold turns the change or above rule of measurement m off.
func (d *Detector) ClearThreshold(kind event.Kind, m event.Measurement) {
	d.setRule(kind, m, never, false)
}

func (d *Detector) setRule(kind event.Kind, m event.Measurement, v uint64, on bool) {
	if m <= event.MeasNone || m >= event.NumMeasurements {
		return
	}
	switch kind {
	case event.KindChange:
		d.change[m].Store(v)
		d.changeOn[m].Store(on)
	case event.KindAbove:
		d.above[m].Store(v)
		d.aboveOn[m].Store(on)
	}
	d.thrGen.Add(1) // after the store: a worker that sees the new generation sees the value
	d.pushRules()   // a failed write leaves the kernel's rules as they were: nothing to undo here
}

// Threshold returns the current threshold for kind (KindChange or KindAbove) and m, and
// whether the rule is on.
func (d *Detector) Threshold(kind event.Kind, m event.Measurement) (uint64, bool) {
	if kind == event.KindAbove {
		return d.above[m].Load(), d.aboveOn[m].Load()
	}
	return d.change[m].Load(), d.changeOn[m].Load()
}

// thresholds are the rules' levels as one batch (or one Process call) sees them: loaded
// once, so that a run-time change (SetThreshold) is seen from the next batch on.
type thresholds struct {
	change, above [event.NumMeasurements]uint64
}

// loadThresholds refreshes b's copy of the thresholds when SetThreshold has changed them
// since (one atomic load when nothing changed).
func (d *Detector) loadThresholds(b *batch) {
	gen := d.thrGen.Load()
	if gen == b.thrGen {
		return
	}
	for m := range b.thr.change {
		b.thr.change[m], b.thr.above[m] = d.change[m].Load(), d.above[m].Load()
	}
	b.thrGen = gen
}

// Operations of a report on one shard: a report is a seq op and a drop op on its reporting
// node's shard, a hop op per hop with switch metrics on that switch's shard, and a flow op on
// its flow's shard, in this order.
const (
	opSeq uint8 = iota
	opDrop
	opHop
	opFlow
)

// op is one operation: the report's index in the chunk, the hop's index, the kind, and for
// a hop its switch's hash (switchHash), from which its keys' hashes follow.
type op struct {
	ri   uint16
	hop  uint8
	kind uint8
	hsw  uint64
}

// batchChunk is how many reports ProcessBatch groups at once (ingest hands over at most
// ingest.BatchReports, 64).
const batchChunk = 64

// maxOps bounds a chunk's operations: two per report, one per hop, one per flow.
const maxOps = batchChunk * (3 + telemetry.MaxHops)

// evBuf is how many events a worker gathers before publishing them (also under the lock of
// the shard that raised them: they reach the rings in the order of the updates).
const evBuf = 256

// batch is a worker's scratch: the operations of a chunk chained per shard, the events
// raised and not yet published, the switch hash cache.
type batch struct {
	pub    *event.Publisher
	evs    []event.Event
	thr    thresholds
	thrGen uint64      // d.thrGen when thr was loaded; thr is loaded when it differs (New: 0 vs 1)
	swEv   event.Event // the event template of switch ops: only Time..Threshold and the key's switch parts change

	swc [swCacheSize]swCached

	ops    [maxOps]op
	next   [maxOps]int32
	n      int32              // ops in use
	chain  []chain            // per shard: the chunk's operations on it
	order  []int32            // the shards of the chunk in the order of their first op
	fh     [batchChunk]uint64 // flow hash per report
	lat    [batchChunk]uint64 // end-to-end latency per report (flowLat)
	nlat   [batchChunk]int    // hop latencies in it
	now    [batchChunk]int64  // receive time per report: a hop op reads it here, not from the report's last line
	addrs  [batchChunk * 8]uintptr
	flowEv event.Event // the event template of flow ops, filled on the first event (lazyFlow)
	worker uint64      // the worker the batch is
}

func (d *Detector) newBatch() *batch {
	b := &batch{evs: make([]event.Event, 0, evBuf), chain: make([]chain, len(d.shards)),
		order: make([]int32, 0, len(d.shards))}
	b.swEv.Scope = event.ScopeSwitch
	b.pub = d.bus.NewPublisher() // New makes a bus when none is given
	for i := range b.chain {
		b.chain[i].head = -1
	}
	return b
}

// swCacheSize is the size of a worker's cache of switch hashes (a power of two).
const swCacheSize = 256

// swCached is a switch id's hash (switchHash), cached: a batch meets the same switches over
// and over, and the hash is a chain of dependent multiplies.
type swCached struct {
	sw uint32
	ok bool
	h  uint64
}

// swHash is switchHash(sw) through the worker's cache (direct mapped by the id's low bits:
// switch ids are often small and dense).
func (b *batch) swHash(sw uint32) uint64 {
	c := &b.swc[(sw^sw>>8)&(swCacheSize-1)]
	if !c.ok || c.sw != sw {
		c.sw, c.ok, c.h = sw, true, switchHash(sw)
	}
	return c.h
}

// emit counts e and queues it for publication.
func (b *batch) emit(c *[nCounts]uint64, e *event.Event) {
	c[cEvent0+int(e.Kind)]++
	n := len(b.evs)
	if n == cap(b.evs) {
		b.pub.Publish(b.evs)
		n = 0
	}
	b.evs = b.evs[:n+1]
	b.evs[n] = *e // not append: that copies through a temporary
}

// publish puts the queued events in the rings (under the lock of the shard that raised them).
func (b *batch) publish() {
	if len(b.evs) > 0 {
		b.pub.Publish(b.evs)
		b.evs = b.evs[:0]
	}
}

// chain is a shard's operations in a chunk: the first and the last, -1 when none.
type chain struct{ head, tail int32 }

// add appends operation o on shard sh to the chunk, chained behind the shard's last one.
func (b *batch) add(o op, sh int32) {
	n := b.n
	b.n = n + 1
	b.ops[n], b.next[n] = o, -1
	ch := &b.chain[sh]
	if ch.head < 0 {
		ch.head = n
		b.order = append(b.order, sh)
	} else {
		b.next[ch.tail] = n
	}
	ch.tail = n
}

// reset forgets the chunk's operations.
func (b *batch) reset() {
	for _, sh := range b.order {
		b.chain[sh].head = -1
	}
	b.order, b.n = b.order[:0], 0
}

// Process implements ingest.Processor: one report, each of its operations under its shard's
// lock, in the order seq, drop, hops, flow.
func (d *Detector) Process(worker int, r *telemetry.Report) {
	if r.Kernel&telemetry.KernelDetected != 0 { // the XDP program has detected it (detect.kernel)
		return
	}
	c, b := &d.workers[worker].local, d.workers[worker].b
	c[cReports]++
	d.loadThresholds(b)
	b.now[0] = r.RecvTime
	if r.Has&telemetry.HasNodeID != 0 {
		if r.Has&telemetry.HasSeq != 0 {
			d.runLocked(c, b, d.swShard(r.NodeID), r, op{kind: opSeq})
		}
		if r.Flags&telemetry.FlagDrop != 0 {
			d.runLocked(c, b, d.swShard(r.NodeID), r, op{kind: opDrop})
		}
	}
	for i := range r.NHops {
		if h := &r.Hops[i]; h.Fields&telemetry.FNodeID != 0 && h.Fields&swFields != 0 {
			c[cValues] += hopValues(h)
			hsw := b.swHash(h.NodeID)
			d.runLocked(c, b, d.shards[shardOf(hsw, d.mask)], r, op{hop: i, kind: opHop, hsw: hsw})
		}
	}
	if r.Has&telemetry.HasFlow != 0 && r.NHops > 0 {
		b.fh[0] = telemetry.FlowHash(&r.Flow)
		b.lat[0], b.nlat[0] = flowLat(r.HopList())
		d.runLocked(c, b, d.shards[shardOf(b.fh[0], d.mask)], r, op{kind: opFlow})
	}
	b.pub.Wake()
}

// runLocked runs operation o of report r (chunk index 0) under s's lock and publishes its
// events before the unlock.
func (d *Detector) runLocked(c *[nCounts]uint64, b *batch, s *shard, r *telemetry.Report, o op) {
	s.mu.Lock()
	d.run(c, b, s, r, o)
	b.publish()
	s.mu.Unlock()
}

// ProcessBatch implements ingest.BatchProcessor: Process for every report of rs with the
// same effect on every key, in the order of rs per key, with far fewer locks. A chunk of
// reports is split into its operations, chained by shard; each shard's lock is taken once
// per chunk and its operations run in report order under it, the events they raise
// published before it is released (so each key's events reach the rings in the order of
// its updates, whichever workers update it), and the consumers woken once per batch. Events
// of different shards are published shard by shard: the order between keys differs from
// Process's, never the order of one key's events.
func (d *Detector) ProcessBatch(worker int, rs []telemetry.Report) {
	c, b := &d.workers[worker].local, d.workers[worker].b
	d.loadThresholds(b)
	stage := d.stageAt == 0 || d.residentFlows() > d.stageAt
	stageKeys := d.stageKeysAt == 0 || d.residentKeys() > d.stageKeysAt
	for len(rs) > 0 {
		chunk := rs[:min(len(rs), batchChunk)]
		rs = rs[len(chunk):]
		d.chunk(c, b, chunk, stage, stageKeys)
	}
	b.pub.Wake()
}

// residentFlows is the number of flows held (read without the shards' locks).
func (d *Detector) residentFlows() int {
	n := 0
	for _, s := range d.shards {
		n += int(s.resident.Load())
	}
	return n
}

// residentKeys is the number of switch keys held (read without the shards' locks).
func (d *Detector) residentKeys() int {
	n := 0
	for _, s := range d.shards {
		n += int(s.residentKeys.Load())
	}
	return n
}

func (d *Detector) chunk(c *[nCounts]uint64, b *batch, rs []telemetry.Report, stage, stageKeys bool) {
	for i := range rs {
		if rs[i].Kernel&telemetry.KernelDetected != 0 { // the XDP program has detected it (detect.kernel)
			b.fh[i] = 0
			continue
		}
		c[cReports]++
		d.reportOps(c, b, &rs[i], uint16(i))
	}
	if stage {
		d.stageFlows(b, rs)
	}
	if stageKeys {
		d.stageMemos(b, rs)
	}
	for _, sh := range b.order {
		s := d.shards[sh]
		s.mu.Lock()
		for k := b.chain[sh].head; k >= 0; k = b.next[k] {
			o := b.ops[k]
			if o.kind == opHop { // most operations: without run's dispatch
				h := &rs[o.ri].Hops[o.hop]
				if !hopFast(s, o.hsw, &b.thr, b.now[o.ri], h) {
					d.hop(c, b, s, b.now[o.ri], h, o.hsw)
				}
				continue
			}
			d.run(c, b, s, &rs[o.ri], o)
		}
		b.publish()
		s.mu.Unlock()
	}
	b.reset()
}

// stageFlows prefetches the entries of the chunk's flows (when the resident flows are far
// beyond the caches: stageAt): their index slots are prefetched, then read without the
// shard's lock (the slots are written with atomic stores), and the entry a slot's tag
// points to, and its LRU link, are prefetched. A stale read costs a useless prefetch, nothing else: the
// operation looks the flow up again under the lock.
func (d *Detector) stageFlows(b *batch, rs []telemetry.Report) {
	na := 0
	for i := range rs {
		if r := &rs[i]; r.Has&telemetry.HasFlow != 0 && r.NHops > 0 && r.Kernel&telemetry.KernelDetected == 0 {
			s := d.shards[shardOf(b.fh[i], d.mask)]
			b.addrs[na] = uintptr(unsafe.Pointer(&s.fidx.slots[b.fh[i]&s.fidx.mask]))
			na++
		}
	}
	prefetch.Addrs(b.addrs[:na])
	na = 0
	for i := range rs {
		r := &rs[i]
		if r.Has&telemetry.HasFlow == 0 || r.NHops == 0 || r.Kernel&telemetry.KernelDetected != 0 {
			continue
		}
		fh := b.fh[i]
		s := d.shards[shardOf(fh, d.mask)]
		x := &s.fidx
		for p, probe := fh&x.mask, 0; probe < 4; p, probe = (p+1)&x.mask, probe+1 {
			sl := atomic.LoadUint64(&x.slots[p])
			if sl == 0 {
				break
			}
			if uint32(sl>>32) != uint32(fh) {
				continue
			}
			if j := int(uint32(sl)) - 1; j >= 0 && j < len(s.fe) && na+6 < len(b.addrs) {
				e := uintptr(unsafe.Pointer(&s.fe[j]))
				for l := e &^ 63; l < e+flowEntryHot; l += 64 {
					b.addrs[na] = l
					na++
				}
				b.addrs[na] = uintptr(unsafe.Pointer(&s.fl.l[j]))
				na++
			}
			break
		}
	}
	prefetch.Addrs(b.addrs[:na])
}

// stageKeysAbove is the switch keys held above which ProcessBatch prefetches its hops' memo
// slots (stageMemos). Each memo slot in use is a cache line, up to 4 a key ((switch, queue,
// port) triples outnumber keys): 256 keys are up to 64 KiB of lines, beyond a core's L1,
// and in a collector the rest of its state (flows, the flow cache, the reports) pushes them
// out of L2 between batches (intake gen's default stream: 624 keys, 2,167 triples). With
// fewer they stay cached, and the prefetch would cost a hop some 10 ns for nothing
// (BenchmarkProcessBatch: 5 switches, 15 keys).
const stageKeysAbove = 256

// stageMemos prefetches the hop memo slots of the chunk's hop operations: a fabric has
// thousands of (switch, queue, port) triples, each a slot of its own, and in a collector
// the rest of its state pushes them out of the caches between batches, where hopFast
// stalled on each in turn. A slot's address is the memo's hash of the hop (no shared state
// is read). Prefetching the switch entries the slots name as well (read under the shard's
// lock) measured no better.
func (d *Detector) stageMemos(b *batch, rs []telemetry.Report) {
	na := 0
	for k := range b.n {
		if o := &b.ops[k]; o.kind == opHop {
			s := d.shards[shardOf(o.hsw, d.mask)]
			b.addrs[na] = uintptr(unsafe.Pointer(s.memoAt(o.hsw, &rs[o.ri].Hops[o.hop])))
			if na++; na == len(b.addrs) {
				prefetch.Addrs(b.addrs[:na])
				na = 0
			}
		}
	}
	prefetch.Addrs(b.addrs[:na])
}

// flowEntryHot is the part of a flow entry an update of a 5-hop path touches.
const flowEntryHot = uintptr(unsafe.Offsetof(flowEntry{}.hop)) + 5*uintptr(unsafe.Sizeof(val{}))

// stageFlowsAbove is the resident flows' size above which ProcessBatch prefetches its
// flows' entries: the L2 cache of one core here (512 KiB). Beyond it the entries miss the
// core's caches and the prefetch overlaps those misses; below it they stay cached and the
// prefetch saves nothing. Detection alone keeps its entries cached up to larger tables, but
// in a collector the other processors' state shares the cache (the figures:
// docs/performance.md, "Figures behind choices in the code").
const stageFlowsAbove = 512 << 10

// reportOps adds r's operations to b, in order (see opSeq); a flow operation's flow hash is
// left in b.fh[ri]. It counts the hops' switch values (the operations count the others).
func (d *Detector) reportOps(c *[nCounts]uint64, b *batch, r *telemetry.Report, ri uint16) {
	b.now[ri] = r.RecvTime
	if r.Has&telemetry.HasNodeID != 0 {
		if r.Has&telemetry.HasSeq != 0 {
			b.add(op{ri: ri, kind: opSeq}, int32(shardOf(b.swHash(r.NodeID), d.mask)))
		}
		if r.Flags&telemetry.FlagDrop != 0 {
			b.add(op{ri: ri, kind: opDrop}, int32(shardOf(b.swHash(r.NodeID), d.mask)))
		}
	}
	var lat uint64
	nlat := 0
	for i := range r.NHops {
		h := &r.Hops[i]
		if h.Fields&telemetry.FHopLatency != 0 {
			lat += uint64(h.HopLatency)
			nlat++
		}
		if h.Fields&telemetry.FNodeID != 0 && h.Fields&swFields != 0 {
			c[cValues] += hopValues(h)
			hsw := b.swHash(h.NodeID)
			b.add(op{ri: ri, hop: i, kind: opHop, hsw: hsw}, int32(shardOf(hsw, d.mask)))
		}
	}
	if r.Has&telemetry.HasFlow == 0 || r.NHops == 0 {
		return
	}
	fh := telemetry.FlowHash(&r.Flow)
	b.fh[ri] = fh
	b.lat[ri], b.nlat[ri] = lat, nlat
	b.add(op{ri: ri, kind: opFlow}, int32(shardOf(fh, d.mask)))
}

// run applies operation o of report r; the caller holds s's lock.
func (d *Detector) run(c *[nCounts]uint64, b *batch, s *shard, r *telemetry.Report, o op) {
	switch o.kind {
	case opSeq:
		d.seq(c, b, s, r)
	case opDrop:
		d.drop(c, b, s, r)
	case opHop:
		d.hop(c, b, s, b.now[o.ri], &r.Hops[o.hop], o.hsw)
	case opFlow:
		d.flow(c, b, s, r, b.fh[o.ri], b.lat[o.ri], int(b.nlat[o.ri]))
	}
}

// check applies the rules to value x of one key: e carries the key, scope, measurement and
// times; the events raised are queued (emit). wasAbove is the key's above state, kept apart
// from v (so that a value's state is two words); check returns the new one.
//
// lf is the flow op's lazy event template (nil for switch ops): it is prepared before the
// first event.
//
// The caller counts the values it checks (cValues), once per operation: an increment per
// value through memory would chain every check to the one before.
func (d *Detector) check(c *[nCounts]uint64, b *batch, lf *lazyFlow, v *val, wasAbove bool, x uint64, isNew bool, e *event.Event) (above bool) {
	m := e.Measurement
	prevCur := v.cur
	if isNew {
		*v = val{ref: x, cur: x}
		wasAbove = false
		prevCur = 0
		lf.prepare(e)
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindNewKey, 0, x, 0
		b.emit(c, e)
	} else {
		v.cur = x
		t := b.thr.change[m]
		diff := x - v.ref
		if x < v.ref {
			diff = v.ref - x
		}
		if diff > t {
			lf.prepare(e)
			e.Kind, e.Prev, e.Value, e.Threshold = event.KindChange, v.ref, x, t
			v.ref = x
			b.emit(c, e)
		}
	}
	a := b.thr.above[m]
	above = x > a
	if above != wasAbove {
		lf.prepare(e)
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindBelow, prevCur, x, a
		if above {
			e.Kind = event.KindAbove
		}
		b.emit(c, e)
	}
	return above
}

// quiet reports whether value x of a key that has a value raises nothing: no change beyond
// t from the reference V(t1), no crossing of level a (wasAbove: the key's above bit). It is
// the common case, tested inline; check handles the rest.
func quiet(v *val, wasAbove bool, x, t, a uint64) bool {
	d := x - v.ref
	if x < v.ref {
		d = v.ref - x
	}
	return d <= t && (x > a) == wasAbove
}

// swValue applies value i (bit 1<<i) of measurement m, x, to switch key entry en: inline
// when it raises nothing, else through check with the switch ops' event template (b.swEv),
// filled here for the key: most values raise nothing, and the template is most of an event.
func (d *Detector) swValue(c *[nCounts]uint64, b *batch, en *swEntry, i int, m event.Measurement, x uint64) {
	if en.quiet(uint(i), x, b.thr.change[m], b.thr.above[m]) {
		en.v[i].cur = x
		return
	}
	d.swCheck(c, b, en, i, m, x)
}

// withBits returns x with the bits of mask set when on, cleared when not.
func withBits[T ~uint8 | ~uint16](x, mask T, on bool) T {
	if on {
		return x | mask
	}
	return x &^ mask
}

// swCheck is swValue's slow path: the value is new, or raises an event.
func (d *Detector) swCheck(c *[nCounts]uint64, b *batch, en *swEntry, i int, m event.Measurement, x uint64) {
	e := &b.swEv
	e.Time, e.DevTime, e.Measurement = en.last, en.dev, m
	e.Key = event.Key{Switch: en.key.sw}
	switch id := en.key.id; en.key.kind {
	case kQueue:
		e.Key.Queue = uint16(id)
	case kPort:
		e.Key.Port = id
	case kBuffer:
		e.Key.Buffer = uint8(id)
	case kDrop:
		e.Key.Reason = uint8(id)
	case kSeq:
		e.Key.HWID = uint8(id)
	}
	bit := uint8(1) << i
	en.above = withBits(en.above, bit, d.check(c, b, nil, &en.v[i], en.above&bit != 0, x, en.has&bit == 0, e))
	en.has |= bit
}

func hopDev(h *telemetry.Hop) uint64 {
	if h.Fields&telemetry.FEgressTS != 0 {
		return h.EgressTS
	}
	if h.Fields&telemetry.FIngressTS != 0 {
		return h.IngressTS
	}
	return 0
}

func (d *Detector) swShardIdx(sw uint32) int32 { return int32(shardOf(switchHash(sw), d.mask)) }

func (d *Detector) swShard(sw uint32) *shard { return d.shards[d.swShardIdx(sw)] }

// hopFast is hop for the common hop, with one lookup (the hop memo's slot) and no call but
// to move a key in its LRU list: the memo names the entries of the hop's queue and port
// keys, and no value raises anything (no event, no above crossing, no new value). It checks
// all of that before it changes anything, and reports whether it has done the hop; if not,
// hop does it (and refills the memo). hsw is the switch's hash.
func hopFast(s *shard, hsw uint64, thr *thresholds, now int64, h *telemetry.Hop) bool {
	const qf = telemetry.FQueueOccupancy | telemetry.FQueueCongestion
	f := h.Fields
	if f&telemetry.FBufferOccupancy != 0 {
		return false
	}
	m := *s.memoAt(hsw, h)
	qi, pi := m.q-1, m.p-1
	if f&qf != 0 {
		if uint(qi) >= uint(len(s.se)) || s.se[qi].key != (swKey{sw: h.NodeID, id: uint32(h.QueueID), kind: kQueue}) {
			return false
		}
		qe := &s.se[qi]
		if f&telemetry.FQueueOccupancy != 0 && !qe.quiet(0, uint64(h.QueueOccupancy), thr.change[event.QueueOccupancy], thr.above[event.QueueOccupancy]) {
			return false
		}
		if f&telemetry.FQueueCongestion != 0 && !qe.quiet(1, uint64(h.QueueCongestion), thr.change[event.QueueCongestion], thr.above[event.QueueCongestion]) {
			return false
		}
	}
	if f&telemetry.FTxUtil != 0 {
		if uint(pi) >= uint(len(s.se)) || s.se[pi].key != (swKey{sw: h.NodeID, id: hopPort(h), kind: kPort}) {
			return false
		}
		if !s.se[pi].quiet(0, uint64(h.TxUtil), thr.change[event.TxUtilization], thr.above[event.TxUtilization]) {
			return false
		}
	}
	dev := hopDev(h)
	if f&qf != 0 {
		qe := s.touchSw(qi, now, dev)
		if f&telemetry.FQueueOccupancy != 0 {
			qe.v[0].cur = uint64(h.QueueOccupancy)
		}
		if f&telemetry.FQueueCongestion != 0 {
			qe.v[1].cur = uint64(h.QueueCongestion)
		}
	}
	if f&telemetry.FTxUtil != 0 {
		s.touchSw(pi, now, dev).v[0].cur = uint64(h.TxUtil)
	}
	return true
}

// touchSw marks entry i of s updated at now with device time dev, moving it to the front of
// the LRU list unless it was updated in now's tick already (sameTick), and returns it.
func (s *shard) touchSw(i int32, now int64, dev uint64) *swEntry {
	en := &s.se[i]
	if !sameTick(en.last, now) {
		s.sl.touch(i)
	}
	en.last = now
	en.dev = dev
	return en
}

// quiet reports whether x as value i of en would raise nothing: the value is known, moved
// no more than t from its reference, and stays on its side of level a.
func (en *swEntry) quiet(i uint, x, t, a uint64) bool {
	bit := uint8(1) << i
	return en.has&bit != 0 && quiet(&en.v[i&1], en.above&bit != 0, x, t, a)
}

// hopPort is the port a hop's tx utilization is keyed by: its egress port, 0 when absent.
func hopPort(h *telemetry.Hop) uint32 {
	if h.Fields&telemetry.FEgressPort != 0 {
		return h.EgressPort
	}
	return 0
}

// swFields are the per-hop fields that are switch metrics (hop ops).
const swFields = telemetry.FQueueOccupancy | telemetry.FQueueCongestion | telemetry.FTxUtil | telemetry.FBufferOccupancy

// hopValues is the number of switch metric values hop h carries (counted by the caller of
// hop, as cValues).
func hopValues(h *telemetry.Hop) uint64 { return uint64(bits.OnesCount16(uint16(h.Fields & swFields))) }

// hop updates the switch metrics one hop carries; the caller holds the switch's shard
// lock. hsw is the switch's hash.
func (d *Detector) hop(c *[nCounts]uint64, b *batch, s *shard, now int64, h *telemetry.Hop, hsw uint64) {
	const qf = telemetry.FQueueOccupancy | telemetry.FQueueCongestion
	f := h.Fields
	dev := hopDev(h)
	var m hopMemo
	if f&qf != 0 {
		i := s.swAt(swKey{sw: h.NodeID, id: uint32(h.QueueID), kind: kQueue}, hsw, now, dev)
		en := &s.se[i]
		if f&telemetry.FQueueOccupancy != 0 {
			d.swValue(c, b, en, 0, event.QueueOccupancy, uint64(h.QueueOccupancy))
		}
		if f&telemetry.FQueueCongestion != 0 {
			d.swValue(c, b, en, 1, event.QueueCongestion, uint64(h.QueueCongestion))
		}
		m.q = i + 1
	}
	if f&telemetry.FTxUtil != 0 {
		i := s.swAt(swKey{sw: h.NodeID, id: hopPort(h), kind: kPort}, hsw, now, dev)
		d.swValue(c, b, &s.se[i], 0, event.TxUtilization, uint64(h.TxUtil))
		m.p = i + 1
	}
	if f&(qf|telemetry.FTxUtil) != 0 {
		*s.memoAt(hsw, h) = m
	}
	if f&telemetry.FBufferOccupancy != 0 {
		i := s.swAt(swKey{sw: h.NodeID, id: uint32(h.BufferID), kind: kBuffer}, hsw, now, dev)
		d.swValue(c, b, &s.se[i], 0, event.BufferOccupancy, uint64(h.BufferOccupancy))
	}
}

// swAt returns the index of the entry of switch key k (hsw: its switch's hash) in s, made
// if need be, updated at now with device time dev; the caller holds s's lock.
func (s *shard) swAt(k swKey, hsw uint64, now int64, dev uint64) int32 {
	i := s.swIndex(k, swKeyHash(hsw, k.id, k.kind), now)
	s.se[i].last, s.se[i].dev = now, dev
	return i
}

// drop counts a dropped-packet report per (reporting node, reason); the caller holds the
// node's shard lock.
func (d *Detector) drop(c *[nCounts]uint64, b *batch, s *shard, r *telemetry.Report) {
	reason := uint8(0)
	if r.Has&telemetry.HasDropReason != 0 {
		reason = r.DropReason
	}
	en := &s.se[s.swAt(swKey{sw: r.NodeID, id: uint32(reason), kind: kDrop}, b.swHash(r.NodeID), r.RecvTime, r.IngressTS)]
	c[cValues]++
	d.swValue(c, b, en, 0, event.Drops, en.v[0].cur+1)
}

// seq counts reports missing from the sequence of (node, hw_id). While one worker gives the
// key all its reports, they come in the order sent: a jump forward by n > 1 adds n−1, and a
// step backwards (reordering in the network, or a restarted reporter) only resynchronizes.
// Once a second worker updates it, the reports come slightly out of order, and the key's
// gaps are counted through a window (seqwin.go). The caller holds the node's shard lock.
func (d *Detector) seq(c *[nCounts]uint64, b *batch, s *shard, r *telemetry.Report) {
	k := swKey{sw: r.NodeID, id: uint32(r.HWID), kind: kSeq}
	en := &s.se[s.swAt(k, b.swHash(r.NodeID), r.RecvTime, r.IngressTS)]
	gaps := en.v[0].cur
	switch w := en.seqWorker(); {
	case !en.seqOK:
	case en.seqSpread:
		gaps += s.window(k).see(r.Seq, r.RecvTime)
	case w != b.worker:
		en.seqSpread = true
		win := s.window(k)
		win.reset(uint32(*en.seq()), r.RecvTime)
		gaps += win.see(r.Seq, r.RecvTime)
	default:
		if step := r.Seq - uint32(*en.seq()); step > 1 && step < 1<<31 {
			gaps += uint64(step - 1)
		}
	}
	*en.seq(), en.seqOK = uint64(r.Seq), true
	en.v[1].cur = uint64(b.worker)
	c[cValues]++
	d.swValue(c, b, en, 0, event.SeqGaps, gaps)
}

// lazyFlow fills a flow op's event template on the first event the op raises: most
// reports raise none, and the template (a flow key, a path) is most of an event.
type lazyFlow struct {
	r     *telemetry.Report
	ready bool
}

// prepare makes e a flow op's event, keeping the context fields the op has set (scope,
// measurement, switch, device time), unless it has done so already (or lf is nil: a switch
// op's template is always ready).
func (lf *lazyFlow) prepare(e *event.Event) {
	if lf == nil || lf.ready {
		return
	}
	scope, meas, sw, dev := e.Scope, e.Measurement, e.Key.Switch, e.DevTime
	r := lf.r
	*e = event.Event{Time: r.RecvTime, DevTime: dev, Scope: scope, Measurement: meas}
	e.Key.Flow, e.Key.Switch = r.Flow, sw
	// The path source to sink: hops are newest (sink side) first.
	n := int(r.NHops)
	e.NPath = uint8(min(n, event.MaxPath))
	for i := 0; i < int(e.NPath); i++ {
		e.Path[i] = r.Hops[n-1-i].NodeID
	}
	lf.ready = true
}

// samePath reports whether the hops (newest first) are the entry's path, source first, as
// far as the entry keeps it; a path longer than that is compared by its hash.
func samePath(en *flowEntry, hops []telemetry.Hop) bool {
	n := len(hops)
	if n != int(en.npath) || n > MaxTrackedHops {
		return false
	}
	for i := 0; i < n; i++ {
		if en.path[i] != hops[n-1-i].NodeID {
			return false
		}
	}
	return true
}

// flowLat is a report's end-to-end latency, the sum of the hop latencies present, and how
// many are.
func flowLat(hops []telemetry.Hop) (lat uint64, nlat int) {
	for i := range hops {
		if hops[i].Fields&telemetry.FHopLatency != 0 {
			lat += uint64(hops[i].HopLatency)
			nlat++
		}
	}
	return lat, nlat
}

// flow updates a flow's path, end-to-end latency (lat, from nlat hop latencies: flowLat)
// and per-hop latencies; fh is the flow's hash and the caller holds its shard's lock. A
// path seen before and values that raise nothing take the inline path; the event template
// (b.flowEv) is filled only for an event.
func (d *Detector) flow(c *[nCounts]uint64, b *batch, s *shard, r *telemetry.Report, fh, lat uint64, nlat int) {
	hops := r.HopList()
	n := len(hops)
	now := r.RecvTime
	dev := r.IngressTS
	if r.Has&telemetry.HasIngressTS == 0 {
		dev = hopDev(&hops[0])
	}
	en, isNew := s.flow(fh, &r.Flow, now)
	if isNew {
		en.first = now
	}
	en.last, en.dev = now, dev
	en.reports++

	e := &b.flowEv
	lf := lazyFlow{r: r}
	if isNew || !samePath(en, hops) {
		e.Scope, e.Measurement, e.Key.Switch, e.DevTime = event.ScopeE2E, event.FlowPath, 0, dev
		d.path(c, b, &lf, en, hops, isNew)
	}

	thr := &b.thr
	if nlat > 0 {
		if !en.hasLat || !quiet(&en.lat, en.above&latAbove != 0, lat, thr.change[event.FlowLatency], thr.above[event.FlowLatency]) {
			e.Scope, e.Measurement, e.Key.Switch, e.DevTime = event.ScopeE2E, event.FlowLatency, 0, dev
			en.above = withBits(en.above, latAbove, d.check(c, b, &lf, &en.lat, en.above&latAbove != 0, lat, !en.hasLat, e))
		} else {
			en.lat.cur = lat
		}
		en.hasLat = true
	}

	tHop, aHop := thr.change[event.FlowHopLatency], thr.above[event.FlowHopLatency]
	var ok uint8
	for i := 0; i < min(n, MaxTrackedHops); i++ {
		h := &hops[n-1-i]
		if h.Fields&telemetry.FHopLatency == 0 {
			continue
		}
		x, bit := uint64(h.HopLatency), uint8(1)<<i
		if en.hopOK&bit != 0 && quiet(&en.hop[i], en.above&uint16(bit) != 0, x, tHop, aHop) {
			en.hop[i].cur = x
		} else {
			e.Scope, e.Measurement, e.Key.Switch, e.DevTime = event.ScopeSwitch, event.FlowHopLatency, h.NodeID, hopDev(h)
			en.above = withBits(en.above, uint16(bit), d.check(c, b, &lf, &en.hop[i], en.above&uint16(bit) != 0, x, en.hopOK&bit == 0, e))
		}
		ok |= bit
	}
	en.hopOK = ok
	vals := 1 + bits.OnesCount8(ok) // the path, the hop latencies
	if nlat > 0 {
		vals++ // the flow latency
	}
	c[cValues] += uint64(vals)
}

// path is flow's part for a new flow or a path not the entry's: its new_key or path_change
// event (e is the template, set for the path), the per-hop state moved to the new path, and
// the path stored.
func (d *Detector) path(c *[nCounts]uint64, b *batch, lf *lazyFlow, en *flowEntry, hops []telemetry.Hop, isNew bool) {
	e := &b.flowEv
	ph := pathHash(hops)
	if isNew {
		lf.prepare(e)
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindNewKey, 0, ph, 0
		b.emit(c, e)
	} else if ph != en.pathHash {
		lf.prepare(e)
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindPathChange, en.pathHash, ph, 0
		b.emit(c, e)
		// Per-hop state is keyed by (flow, switch): a switch on both paths keeps its state
		// at its new position, a switch new to the path will be a new key.
		d.rehop(en, hops)
	}
	n := len(hops)
	en.pathHash, en.npath = ph, uint8(min(n, 255))
	for i := range MaxTrackedHops {
		en.path[i] = 0
		if i < n {
			en.path[i] = hops[n-1-i].NodeID
		}
	}
}

// rehop moves a flow's per-hop state from its old path to the new one (hops, newest first)
// after a path change: a switch on both paths takes its state along, any other position is
// marked unknown, so that its next value is a new key.
func (d *Detector) rehop(en *flowEntry, hops []telemetry.Hop) {
	oldPath, oldHop, oldOK, oldN := en.path, en.hop, en.hopOK, int(min(en.npath, MaxTrackedHops))
	oldAbove := en.above
	n := len(hops)
	en.hopOK, en.above = 0, oldAbove&latAbove
	for i := 0; i < min(n, MaxTrackedHops); i++ {
		id := hops[n-1-i].NodeID
		for k := 0; k < oldN; k++ {
			if oldPath[k] == id && oldOK&(1<<k) != 0 {
				en.hop[i] = oldHop[k]
				en.hopOK |= 1 << i
				en.above |= (oldAbove >> k & 1) << i
				break
			}
		}
	}
}

// pathHash is event.PathHash over the node ids source to sink, without building the list.
func pathHash(hops []telemetry.Hop) uint64 {
	h := uint64(event.PathHashBasis)
	for i := len(hops) - 1; i >= 0; i-- {
		h = event.PathHashStep(h, hops[i].NodeID)
	}
	return h
}

// Config returns the configuration the detector was built with.
func (d *Detector) Config() Config { return d.cfg }
