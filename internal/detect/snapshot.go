package detect

import (
	"cmp"
	"slices"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/telemetry"
)

// Snapshot is the periodic push (INTCollector §III-E1): it calls fn with a KindPeriodic
// event for the latest value of every live key, so that a silent key is known to be alive,
// and with a KindExpire event for every value of a key not updated since now−expire, which
// it forgets. It runs on the normal path: each shard is locked while it is walked, never
// more than one at a time; fn must not block. It returns the number of periodic values.
func (d *Detector) Snapshot(now int64, fn func(*event.Event)) int {
	cut := int64(-1 << 63)
	if d.cfg.Expire > 0 {
		cut = now - int64(d.cfg.Expire)
	}
	n := 0
	for _, s := range d.shards {
		s.mu.Lock()
		n += s.walk(&s.fl, cut, func(i int32, kind event.Kind) int { return flowValues(&s.fe[i], kind, now, fn) },
			func(i int32) int64 { return s.fe[i].last }, s.removeFlow)
		n += s.walk(&s.sl, cut, func(i int32, kind event.Kind) int { return swValues(&s.se[i], kind, now, fn) },
			func(i int32) int64 { return s.se[i].last }, s.removeSw)
		s.mu.Unlock()
	}
	d.withKernel(func(k Kernel) { n += d.kernelSnapshot(k, now, cut, fn) })
	return n
}

// walk visits the entries of one of s's tables, oldest first: values reports an entry's
// values as periodic, or as expiring when it was last updated before cut, and then remove
// forgets it. It returns the number of periodic values.
func (s *shard) walk(l *lru, cut int64, values func(int32, event.Kind) int, last func(int32) int64, remove func(int32)) int {
	n := 0
	for i := l.tail; i >= 0; {
		prev := l.l[i].prev
		if last(i) < cut {
			values(i, event.KindExpire)
			remove(i)
			s.expired++
		} else {
			n += values(i, event.KindPeriodic)
		}
		i = prev
	}
	return n
}

func flowValues(en *flowEntry, kind event.Kind, now int64, fn func(*event.Event)) int {
	var e event.Event
	e.Time, e.DevTime, e.Kind, e.Key.Flow = now, en.dev, kind, en.key
	e.Scope, e.Measurement, e.Value = event.ScopeE2E, event.FlowPath, en.pathHash
	e.NPath = uint8(min(int(en.npath), MaxTrackedHops))
	copy(e.Path[:], en.path[:e.NPath])
	fn(&e)
	n := 1
	e.NPath = 0
	if en.hasLat {
		e.Measurement, e.Value = event.FlowLatency, en.lat.cur
		fn(&e)
		n++
	}
	e.Scope, e.Measurement = event.ScopeSwitch, event.FlowHopLatency
	for i := 0; i < MaxTrackedHops; i++ {
		if en.hopOK&(1<<i) != 0 {
			e.Key.Switch, e.Value = en.path[i], en.hop[i].cur
			fn(&e)
			n++
		}
	}
	return n
}

func swValues(en *swEntry, kind event.Kind, now int64, fn func(*event.Event)) int {
	var e event.Event
	e.Time, e.DevTime, e.Kind, e.Scope = now, en.dev, kind, event.ScopeSwitch
	e.Key.Switch = en.key.sw
	var ms [2]event.Measurement
	switch en.key.kind {
	case kQueue:
		e.Key.Queue = uint16(en.key.id)
		ms = [2]event.Measurement{event.QueueOccupancy, event.QueueCongestion}
	case kPort:
		e.Key.Port = en.key.id
		ms[0] = event.TxUtilization
	case kBuffer:
		e.Key.Buffer = uint8(en.key.id)
		ms[0] = event.BufferOccupancy
	case kDrop:
		e.Key.Reason = uint8(en.key.id)
		ms[0] = event.Drops
	case kSeq:
		e.Key.HWID = uint8(en.key.id)
		ms[0] = event.SeqGaps
	}
	n := 0
	for i, m := range ms {
		if m != event.MeasNone && en.has&(1<<i) != 0 {
			e.Measurement, e.Value = m, en.v[i].cur
			fn(&e)
			n++
		}
	}
	return n
}

// HopState is one hop of a flow as GET /api/v1/flow shows it: its number from the source
// (1: the first switch of the path, as every hop list intake shows, docs/hops.md) and the
// hop latency the flow's newest report carried there.
type HopState struct {
	Hop        int    `json:"hop"`
	SwitchID   uint32 `json:"switch_id"`
	HopLatency uint64 `json:"hop_latency"`
}

// FlowState is a flow's latest values as GET /api/v1/flow shows them. Hops are source first
// and only those whose hop latency the newest report carried (Hop numbers them in the
// path). Switch metrics of the switches on its path are in Queues, Ports and Buffers: each
// the latest value of a switch key, from whichever flow's report set it, not this flow's.
type FlowState struct {
	Src         string        `json:"src"`
	Dst         string        `json:"dst"`
	Sport       uint16        `json:"sport"`
	Dport       uint16        `json:"dport"`
	Proto       uint8         `json:"proto"`
	Path        []uint32      `json:"path"`
	PathLen     int           `json:"path_len"`
	FlowLatency *uint64       `json:"flow_latency"`
	Hops        []HopState    `json:"hops"`
	Reports     uint64        `json:"reports"`
	FirstSeen   time.Time     `json:"first_seen"`
	LastSeen    time.Time     `json:"last_seen"`
	Queues      []SwitchValue `json:"queues"`
	Ports       []SwitchValue `json:"ports"`
	Buffers     []SwitchValue `json:"buffers"`
}

// SwitchValue is one switch key's latest values.
type SwitchValue struct {
	SwitchID        uint32    `json:"switch_id"`
	QueueID         *uint16   `json:"queue_id,omitempty"`
	Port            *uint32   `json:"port,omitempty"`
	BufferID        *uint8    `json:"buffer_id,omitempty"`
	QueueOccupancy  *uint64   `json:"queue_occupancy,omitempty"`
	QueueCongestion *uint64   `json:"queue_congestion,omitempty"`
	TxUtilization   *uint64   `json:"tx_utilization,omitempty"`
	BufferOccupancy *uint64   `json:"buffer_occupancy,omitempty"`
	LastSeen        time.Time `json:"last_seen"`
}

// Flow returns the latest state of flow k, and the switch keys of the switches on its path.
func (d *Detector) Flow(k telemetry.FlowKey) (FlowState, bool) {
	h := telemetry.FlowHash(&k)
	s := d.shards[shardOf(h, d.mask)]
	s.mu.Lock()
	i := s.lookupFlow(h, &k)
	var en flowEntry
	if i >= 0 {
		en = s.fe[i]
	}
	s.mu.Unlock()
	if i < 0 {
		ok := false
		d.withKernel(func(kern Kernel) {
			var kf KernelFlow
			if kf, ok = kern.Flow(k); ok {
				en = *kf.entry()
			}
		})
		if !ok {
			return FlowState{}, false
		}
	}
	fs := FlowState{
		Src: k.SrcAddr().String(), Dst: k.DstAddr().String(), Sport: k.SrcPort, Dport: k.DstPort, Proto: k.Proto,
		PathLen: int(en.npath), Reports: en.reports,
		FirstSeen: time.Unix(0, en.first).UTC(), LastSeen: time.Unix(0, en.last).UTC(),
		Path: make([]uint32, min(int(en.npath), MaxTrackedHops)), Hops: []HopState{},
		Queues: []SwitchValue{}, Ports: []SwitchValue{}, Buffers: []SwitchValue{},
	}
	copy(fs.Path, en.path[:])
	if en.hasLat {
		v := en.lat.cur
		fs.FlowLatency = &v
	}
	for i, id := range fs.Path {
		if en.hopOK&(1<<i) != 0 {
			fs.Hops = append(fs.Hops, HopState{Hop: i + 1, SwitchID: id, HopLatency: en.hop[i].cur})
		}
	}
	seen := map[uint32]bool{}
	for _, id := range fs.Path {
		if seen[id] {
			continue
		}
		seen[id] = true
		d.switchValues(id, &fs)
	}
	var ens []*swEntry // the kernel's keys of the path's switches, in the same order: by kind, then id
	if d.withKernel(func(kern Kernel) {
		kern.Keys(func(kk *KernelKey) bool {
			if seen[kk.Switch] {
				ens = append(ens, kk.entry())
			}
			return true
		})
	}) {
		slices.SortFunc(ens, func(a, b *swEntry) int {
			return cmp.Or(cmp.Compare(slices.Index(fs.Path, a.key.sw), slices.Index(fs.Path, b.key.sw)), cmp.Compare(a.key.id, b.key.id))
		})
		for _, en := range ens {
			appendSwitchValue(&fs, en)
		}
	}
	return fs, true
}

// switchValues appends the queue, port and buffer keys of switch sw to fs, each kind in
// ascending id order.
func (d *Detector) switchValues(sw uint32, fs *FlowState) {
	s := d.swShard(sw)
	s.mu.Lock()
	var ids []int32
	for i := s.sl.head; i >= 0; i = s.sl.l[i].next {
		if s.se[i].key.sw == sw {
			ids = append(ids, i)
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return cmp.Compare(s.se[a].key.id, s.se[b].key.id) })
	defer s.mu.Unlock()
	for _, i := range ids {
		appendSwitchValue(fs, &s.se[i])
	}
}

// appendSwitchValue appends switch key en's latest values to fs's queues, ports or buffers.
func appendSwitchValue(fs *FlowState, en *swEntry) {
	k := en.key
	sv := SwitchValue{SwitchID: k.sw, LastSeen: time.Unix(0, en.last).UTC()}
	get := func(j int) *uint64 {
		if en.has&(1<<j) == 0 {
			return nil
		}
		v := en.v[j].cur
		return &v
	}
	switch k.kind {
	case kQueue:
		q := uint16(k.id)
		sv.QueueID, sv.QueueOccupancy, sv.QueueCongestion = &q, get(0), get(1)
		fs.Queues = append(fs.Queues, sv)
	case kPort:
		p := k.id
		sv.Port, sv.TxUtilization = &p, get(0)
		fs.Ports = append(fs.Ports, sv)
	case kBuffer:
		b := uint8(k.id)
		sv.BufferID, sv.BufferOccupancy = &b, get(0)
		fs.Buffers = append(fs.Buffers, sv)
	}
}

// Stats are the detector's counters.
type Stats struct {
	Reports      uint64            `json:"reports"`
	Values       uint64            `json:"values"` // M_all
	Events       map[string]uint64 `json:"events"`
	Flows        int               `json:"flows"`
	Keys         int               `json:"keys"`
	EvictedFlows uint64            `json:"evicted_flows"`
	EvictedKeys  uint64            `json:"evicted_keys"`
	Expired      uint64            `json:"expired"`
	// Streams are the live event streams' counters (absent without the API).
	Streams *StreamStats `json:"streams,omitempty"`
	// Kernel are the XDP program's counters (detect.kernel), included in Reports, Values
	// and Events above; absent without it.
	Kernel *KernelCounts `json:"kernel,omitempty"`
}

func (d *Detector) sum(i int) uint64 {
	var n uint64
	for w := range d.workers {
		n += d.workers[w].pub[i].Load()
	}
	return n
}

// Stats returns the counters as published at the workers' last Flush.
func (d *Detector) Stats() Stats {
	st := Stats{Reports: d.sum(cReports), Values: d.sum(cValues), Events: map[string]uint64{}}
	for k := event.KindNewKey; k <= event.KindBelow; k++ {
		st.Events[k.String()] = d.sum(cEvent0 + int(k))
	}
	for _, s := range d.shards {
		s.mu.Lock()
		st.Flows += s.fl.n
		st.Keys += s.sl.n
		st.EvictedFlows += s.evictedFlows
		st.EvictedKeys += s.evictedKeys
		st.Expired += s.expired
		s.mu.Unlock()
	}
	if d.log != nil {
		ss := d.log.StreamStats()
		st.Streams = &ss
	}
	if kc, ok := d.kernelCounts(); ok {
		st.Kernel = &kc
		ef, ek := d.kern.expiredFlows.Load(), d.kern.expiredKeys.Load()
		st.Flows += int(kc.NewFlows - min(ef, kc.NewFlows))
		st.Keys += int(kc.NewKeys - min(ek, kc.NewKeys))
		st.Expired += ef + ek
		st.Reports += kc.Reports
		st.Values += kc.Values
		for k := event.KindNewKey; k <= event.KindBelow; k++ {
			st.Events[k.String()] += kc.Events[k]
		}
	}
	return st
}

// registerMetrics adds the detector's series to reg.
func (d *Detector) registerMetrics(reg *metrics.Registry) {
	kern := func(f func(KernelCounts) uint64) uint64 {
		if kc, ok := d.kernelCounts(); ok {
			return f(kc)
		}
		return 0
	}
	reg.Counter("intake_detect_reports_total", "Reports the event detector processed (in user space and, with detect.kernel, in the XDP program).").
		Func(func() float64 {
			return float64(d.sum(cReports) + kern(func(k KernelCounts) uint64 { return k.Reports }))
		})
	reg.Counter("intake_detect_values_total", "Metric values seen by the event detector (INTCollector M_all).").
		Func(func() float64 { return float64(d.sum(cValues) + kern(func(k KernelCounts) uint64 { return k.Values })) })
	ev := reg.Counter("intake_detect_events_total", "Events raised, by kind.", "kind")
	for k := event.KindNewKey; k <= event.KindBelow; k++ {
		i := cEvent0 + int(k)
		ev.Func(func() float64 { return float64(d.sum(i) + kern(func(kc KernelCounts) uint64 { return kc.Events[k] })) }, k.String())
	}
	lost := reg.Counter("intake_detect_kernel_lost_total", "With detect.kernel: events lost because the ring to user space was full (ring), and key updates lost because a kernel table was full (table).", "reason")
	lost.Func(func() float64 { return float64(kern(func(k KernelCounts) uint64 { return k.RingFull })) }, "ring")
	lost.Func(func() float64 { return float64(kern(func(k KernelCounts) uint64 { return k.TableFull })) }, "table")
	reg.Gauge("intake_detect_keys", "Metric keys held, by table.", "table").Func(func() float64 { return float64(d.Stats().Flows) }, "flows")
	reg.Gauge("intake_detect_keys", "Metric keys held, by table.", "table").Func(func() float64 { return float64(d.Stats().Keys) }, "switch")
	evc := reg.Counter("intake_detect_evictions_total", "Keys evicted because the table was full, by table.", "table")
	evc.Func(func() float64 { return float64(d.Stats().EvictedFlows) }, "flows")
	evc.Func(func() float64 { return float64(d.Stats().EvictedKeys) }, "switch")
	reg.Counter("intake_detect_expired_total", "Keys forgotten after detect.expire without an update.").
		Func(func() float64 { return float64(d.Stats().Expired) })
	// The event log (and its streams) exists once RegisterAPI has run: read at scrape time.
	stream := func(f func(*Log) float64) func() float64 {
		return func() float64 {
			if d.log == nil {
				return 0
			}
			return f(d.log)
		}
	}
	reg.Gauge("intake_event_streams", "Live event streams open (GET /api/v1/events/stream).").
		Func(stream(func(l *Log) float64 { return float64(l.streams.Load()) }))
	reg.Counter("intake_event_streams_refused_total", "Event streams refused because detect.max_streams were open.").
		Func(stream(func(l *Log) float64 { return float64(l.refused.Load()) }))
	sd := reg.Counter("intake_event_streams_dropped_total", "Event streams the collector closed, by reason (behind: a whole ring behind; slow: a write to the client blocked).", "reason")
	sd.Func(stream(func(l *Log) float64 { return float64(l.behind.Load()) }), "behind")
	sd.Func(stream(func(l *Log) float64 { return float64(l.slow.Load()) }), "slow")
}
