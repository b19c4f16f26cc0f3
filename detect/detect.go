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
// eviction, counted. Process allocates nothing.
//
// Snapshot is the periodic push: the latest value of every live key, and expiry of keys not
// updated for detect.expire. Counters give INTCollector §V-B2's reduction factor: metric
// values seen (M_all) against values exported (events and periodic pushes, counted by the
// export pipeline).
package detect

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/metrics"
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

	workers []workerCounts
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
}

// New builds a detector publishing to deps.Bus. cfg must have passed Validate. It starts
// nothing: the event log that GET /api/v1/events reads (made by RegisterAPI: without the
// API nobody reads it) runs between Start and Stop.
func New(cfg Config, deps Deps) *Detector {
	bus := deps.Bus
	if bus == nil {
		bus = &event.Bus{}
	}
	d := &Detector{cfg: cfg, bus: bus, shards: make([]*shard, cfg.Shards), mask: uint64(cfg.Shards - 1)}
	perFlows := max(1, (cfg.MaxFlows+cfg.Shards-1)/cfg.Shards)
	perKeys := max(1, (cfg.MaxKeys+cfg.Shards-1)/cfg.Shards)
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
	d.workers = make([]workerCounts, max(deps.Workers, 1))
	if deps.Metrics != nil {
		d.registerMetrics(deps.Metrics)
	}
	return d
}

// Name implements ingest.Processor.
func (d *Detector) Name() string { return "detect" }

// Start runs the event log.
func (d *Detector) Start(context.Context) error {
	if d.log != nil {
		d.log.start()
	}
	return nil
}

// Stop ends the event log (the log keeps what it holds for queries).
func (d *Detector) Stop(context.Context) error {
	if d.log != nil {
		d.log.stop()
	}
	return nil
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
}

// Threshold returns the current threshold for kind (KindChange or KindAbove) and m, and
// whether the rule is on.
func (d *Detector) Threshold(kind event.Kind, m event.Measurement) (uint64, bool) {
	if kind == event.KindAbove {
		return d.above[m].Load(), d.aboveOn[m].Load()
	}
	return d.change[m].Load(), d.changeOn[m].Load()
}

// Process implements ingest.Processor: the fast path.
func (d *Detector) Process(worker int, r *telemetry.Report) {
	c := &d.workers[worker].local
	c[cReports]++
	if r.Has&telemetry.HasNodeID != 0 {
		if r.Has&telemetry.HasSeq != 0 {
			d.seq(c, r)
		}
		if r.Flags&telemetry.FlagDrop != 0 {
			d.drop(c, r)
		}
	}
	hops := r.HopList()
	if len(hops) == 0 {
		return
	}
	// One event value serves every hop and the flow (zeroing one per hop cost more than the
	// lookups): hop sets the key fields it uses and clears them again; flow runs last.
	var e event.Event
	for i := range hops {
		if hops[i].Fields&telemetry.FNodeID != 0 {
			d.hop(c, r, &hops[i], &e)
		}
	}
	if r.Has&telemetry.HasFlow != 0 {
		d.flow(c, r, hops, &e)
	}
}

// check applies the rules to value x of one key: e carries the key, scope, measurement and
// times; the events raised are published. The key's above state is bit of *above (kept
// apart from v, so that a value's state is two words).
func (d *Detector) check(c *[nCounts]uint64, v *val, above *uint16, bit uint16, x uint64, isNew bool, e *event.Event) {
	c[cValues]++
	m := e.Measurement
	prevCur := v.cur
	if isNew {
		*v = val{ref: x, cur: x}
		*above &^= bit
		prevCur = 0
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindNewKey, 0, x, 0
		d.publish(c, e)
	} else {
		v.cur = x
		t := d.change[m].Load()
		diff := x - v.ref
		if x < v.ref {
			diff = v.ref - x
		}
		if diff > t {
			e.Kind, e.Prev, e.Value, e.Threshold = event.KindChange, v.ref, x, t
			v.ref = x
			d.publish(c, e)
		}
	}
	a := d.above[m].Load()
	if x > a {
		if *above&bit == 0 {
			*above |= bit
			e.Kind, e.Prev, e.Value, e.Threshold = event.KindAbove, prevCur, x, a
			d.publish(c, e)
		}
	} else if *above&bit != 0 {
		*above &^= bit
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindBelow, prevCur, x, a
		d.publish(c, e)
	}
}

func (d *Detector) publish(c *[nCounts]uint64, e *event.Event) {
	c[cEvent0+int(e.Kind)]++
	if d.bus != nil {
		d.bus.Publish(e)
	}
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

func (d *Detector) swShard(sw uint32) *shard { return d.shards[shardOf(switchHash(sw), d.mask)] }

// hop updates the switch metrics one hop carries, under its switch's shard lock.
func (d *Detector) hop(c *[nCounts]uint64, r *telemetry.Report, h *telemetry.Hop, e *event.Event) {
	const qf = telemetry.FQueueOccupancy | telemetry.FQueueCongestion
	f := h.Fields
	if f&(qf|telemetry.FTxUtil|telemetry.FBufferOccupancy) == 0 {
		return
	}
	e.Time, e.DevTime, e.Scope = r.RecvTime, hopDev(h), event.ScopeSwitch
	e.Key.Switch = h.NodeID
	s := d.swShard(h.NodeID)
	s.mu.Lock()
	if f&qf != 0 {
		en := s.sw(swKey{sw: h.NodeID, id: uint32(h.QueueID), kind: kQueue}, r.RecvTime)
		en.touch(r.RecvTime, e.DevTime)
		e.Key.Queue = h.QueueID
		if f&telemetry.FQueueOccupancy != 0 {
			e.Measurement = event.QueueOccupancy
			d.check(c, &en.v[0], &en.above, 1, uint64(h.QueueOccupancy), en.has&1 == 0, e)
			en.has |= 1
		}
		if f&telemetry.FQueueCongestion != 0 {
			e.Measurement = event.QueueCongestion
			d.check(c, &en.v[1], &en.above, 2, uint64(h.QueueCongestion), en.has&2 == 0, e)
			en.has |= 2
		}
		e.Key.Queue = 0
	}
	if f&telemetry.FTxUtil != 0 {
		port := uint32(0)
		if f&telemetry.FEgressPort != 0 {
			port = h.EgressPort
		}
		en := s.sw(swKey{sw: h.NodeID, id: port, kind: kPort}, r.RecvTime)
		en.touch(r.RecvTime, e.DevTime)
		e.Key.Port, e.Measurement = port, event.TxUtilization
		d.check(c, &en.v[0], &en.above, 1, uint64(h.TxUtil), en.has&1 == 0, e)
		en.has |= 1
		e.Key.Port = 0
	}
	if f&telemetry.FBufferOccupancy != 0 {
		en := s.sw(swKey{sw: h.NodeID, id: uint32(h.BufferID), kind: kBuffer}, r.RecvTime)
		en.touch(r.RecvTime, e.DevTime)
		e.Key.Buffer, e.Measurement = h.BufferID, event.BufferOccupancy
		d.check(c, &en.v[0], &en.above, 1, uint64(h.BufferOccupancy), en.has&1 == 0, e)
		en.has |= 1
		e.Key.Buffer = 0
	}
	s.mu.Unlock()
	e.Key.Switch = 0
}

func (en *swEntry) touch(now int64, dev uint64) {
	if en.first == 0 {
		en.first = now
	}
	en.last, en.dev = now, dev
}

// drop counts a dropped-packet report per (reporting node, reason).
func (d *Detector) drop(c *[nCounts]uint64, r *telemetry.Report) {
	reason := uint8(0)
	if r.Has&telemetry.HasDropReason != 0 {
		reason = r.DropReason
	}
	var e event.Event
	e.Time, e.DevTime, e.Scope, e.Measurement = r.RecvTime, r.IngressTS, event.ScopeSwitch, event.Drops
	e.Key.Switch, e.Key.Reason = r.NodeID, reason
	s := d.swShard(r.NodeID)
	s.mu.Lock()
	en := s.sw(swKey{sw: r.NodeID, id: uint32(reason), kind: kDrop}, r.RecvTime)
	en.touch(r.RecvTime, r.IngressTS)
	d.check(c, &en.v[0], &en.above, 1, en.v[0].cur+1, en.has == 0, &e)
	en.has = 1
	s.mu.Unlock()
}

// seq counts reports missing from the sequence of (node, hw_id): a jump forward by n > 1 adds
// n−1. A step backwards (reordering, or a restarted reporter) only resynchronizes.
func (d *Detector) seq(c *[nCounts]uint64, r *telemetry.Report) {
	var e event.Event
	e.Time, e.DevTime, e.Scope, e.Measurement = r.RecvTime, r.IngressTS, event.ScopeSwitch, event.SeqGaps
	e.Key.Switch, e.Key.HWID = r.NodeID, r.HWID
	s := d.swShard(r.NodeID)
	s.mu.Lock()
	en := s.sw(swKey{sw: r.NodeID, id: uint32(r.HWID), kind: kSeq}, r.RecvTime)
	en.touch(r.RecvTime, r.IngressTS)
	gaps := en.v[0].cur
	if en.seqOK {
		if step := r.Seq - en.seq; step > 1 && step < 1<<31 {
			gaps += uint64(step - 1)
		}
	}
	en.seq, en.seqOK = r.Seq, true
	d.check(c, &en.v[0], &en.above, 1, gaps, en.has == 0, &e)
	en.has = 1
	s.mu.Unlock()
}

// flow updates a flow's path, end-to-end latency and per-hop latencies.
func (d *Detector) flow(c *[nCounts]uint64, r *telemetry.Report, hops []telemetry.Hop, e *event.Event) {
	e.Time, e.Key.Flow = r.RecvTime, r.Flow
	// The path source to sink: hops are newest (sink side) first.
	n := len(hops)
	e.NPath = uint8(min(n, 255))
	var lat uint64
	nlat := 0
	for i := 0; i < n; i++ {
		h := &hops[n-1-i]
		if i < event.MaxPath {
			e.Path[i] = h.NodeID
		}
		if h.Fields&telemetry.FHopLatency != 0 {
			lat += uint64(h.HopLatency)
			nlat++
		}
	}
	if e.NPath > event.MaxPath {
		e.NPath = event.MaxPath
	}
	ph := pathHash(hops)
	dev := r.IngressTS
	if r.Has&telemetry.HasIngressTS == 0 {
		dev = hopDev(&hops[0])
	}
	e.DevTime = dev

	fh := telemetry.FlowHash(&r.Flow)
	s := d.shards[shardOf(fh, d.mask)]
	s.mu.Lock()
	en, isNew := s.flow(fh, &r.Flow, r.RecvTime)
	if isNew {
		en.first = r.RecvTime
	}
	en.last, en.dev = r.RecvTime, dev
	en.reports++

	// Path: new key, or a change of the node list.
	e.Scope, e.Measurement = event.ScopeE2E, event.FlowPath
	c[cValues]++
	pathChanged := !isNew && ph != en.pathHash
	if isNew {
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindNewKey, 0, ph, 0
		d.publish(c, e)
	} else if pathChanged {
		e.Kind, e.Prev, e.Value, e.Threshold = event.KindPathChange, en.pathHash, ph, 0
		d.publish(c, e)
		// Per-hop state is keyed by (flow, switch): a switch on both paths keeps its state
		// at its new position, a switch new to the path will be a new key.
		d.rehop(en, hops)
	}
	en.pathHash, en.npath = ph, uint8(min(n, 255))

	// End-to-end latency: the sum of the hop latencies present.
	if nlat > 0 {
		e.Measurement = event.FlowLatency
		d.check(c, &en.lat, &en.above, latAbove, lat, !en.hasLat, e)
		en.hasLat = true
	}

	e.Scope, e.Measurement = event.ScopeSwitch, event.FlowHopLatency
	var ok uint8
	for i := 0; i < min(n, MaxTrackedHops); i++ {
		h := &hops[n-1-i]
		en.path[i] = h.NodeID
		if h.Fields&telemetry.FHopLatency == 0 {
			continue
		}
		e.Key.Switch, e.DevTime = h.NodeID, hopDev(h)
		d.check(c, &en.hop[i], &en.above, 1<<i, uint64(h.HopLatency), en.hopOK&(1<<i) == 0, e)
		ok |= 1 << i
	}
	for i := n; i < MaxTrackedHops; i++ {
		en.path[i] = 0
	}
	en.hopOK = ok
	s.mu.Unlock()
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
