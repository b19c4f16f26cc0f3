// Package event owns intake's shared event model: the Event value that the event detector
// (package detect) raises on the hot path, and the fan-out Bus that carries events to every
// consumer (the exporters, the API's event log and live stream, the flow cache's Redis
// export).
//
// Event kinds follow the papers: a new metric key and a change beyond a per-measurement
// threshold |V(t2) − V(t1)| > T(m) (INTCollector §III-D), a path change (INTCollector
// §III-C, flow path), and a threshold crossing, the current value above a per-measurement
// threshold (the SmartNIC sink's "T" events, §III-C; its "C" events are KindChange). Each
// is raised per switch (ScopeSwitch) or end to end (ScopeE2E: the sum of hop latencies, the
// path as the list of node ids); flow-level keys without a value comparison use ScopeFlow.
//
// # The Bus
//
// The Bus is the SmartNIC sink's event rings R_I in software: each subscribed Consumer owns
// one bounded ring (a power-of-two number of Events, preallocated). Publish copies the event
// into every consumer's ring without allocating and without a lock (a bounded multi-producer
// ring after Vyukov, so several ingest workers publish concurrently); a full ring drops the
// event for that consumer only and counts it (Consumer.Overflow). Publish never blocks: a
// slow consumer loses events, never slows ingest.
//
// A consumer either polls (Poll, non-blocking, copies up to len(dst) events) or blocks
// (Wait, until something was published or the context ends). A consumer that has just
// found events lingers: for the next Linger (1 ms) publishers do not wake it, a timer does,
// so that a busy bus costs the ingest workers no wake-ups. Subscribe and Unsubscribe may
// be called at any time, also while publishing; a consumer sees the events published after
// its Subscribe returned.
//
// For example, a consumer that exports hop latency, queue occupancy and tx utilization T and
// C events (the SmartNIC sink's Redis export):
//
//	c := bus.Subscribe("redis", 1<<16)
//	defer bus.Unsubscribe(c)
//	buf := make([]event.Event, 256)
//	for c.Wait(ctx) {
//		for _, e := range buf[:c.Poll(buf)] {
//			if (e.Kind == event.KindAbove || e.Kind == event.KindChange) &&
//				(e.Measurement == event.FlowHopLatency || e.Measurement == event.QueueOccupancy ||
//					e.Measurement == event.TxUtilization) {
//				// e.Key.Switch, e.Key.Flow, e.Value, e.Prev, e.Threshold, e.Time ...
//			}
//		}
//	}
//
// Kind, Scope and Measurement names (String) are stable: they are the JSON values, the
// InfluxDB tags and measurement names, and the API's filter values.
package event

import (
	"strconv"

	"github.com/intake-int/intake/telemetry"
)

// Kind is what happened.
type Kind uint8

const (
	KindNone       Kind = iota
	KindNewKey          // a metric key (ids, m) not seen before (INTCollector §III-D)
	KindPathChange      // a flow's path (list of node ids) differs from the last one
	KindChange          // |V(t2) − V(t1)| > T(m), per switch or end to end (INTCollector; SmartNIC C)
	KindAbove           // the value crossed above the threshold (SmartNIC T): was ≤ T or unknown, now > T
	KindBelow           // the value fell back to ≤ the above-threshold after an Above event
	KindPeriodic        // not an event: a live key's latest value in a periodic push (INTCollector §III-E1)
	KindExpire          // a key not updated for detect.expire was forgotten
	NumKinds
)

var kindNames = [...]string{"none", "new_key", "path_change", "change", "above", "below", "periodic", "expire"}

// String returns the kind's stable name ("new_key", "path_change", "change", "above", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if i > 0 && n == s {
			return Kind(i), true
		}
	}
	return KindNone, false
}

// KindNames lists the names of the real event kinds (not none).
func KindNames() []string { return append([]string(nil), kindNames[1:]...) }

// Scope says what an event's value describes.
type Scope uint8

const (
	ScopeSwitch Scope = iota // one switch or switch component (per hop for flow-switch metrics)
	ScopeE2E                 // a flow end to end: the sum of hop latencies, or its path
	ScopeFlow                // a flow key as such (new flow)
)

var scopeNames = [...]string{"switch", "e2e", "flow"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "unknown"
}

// Measurement is a metric's measurement, named as in intake's InfluxDB schema.
type Measurement uint8

const (
	MeasNone        Measurement = iota
	FlowLatency                 // per flow: sum of hop latencies (e2e)
	FlowHopLatency              // per flow and switch: hop latency
	FlowPath                    // per flow: the list of node ids, source to sink
	QueueOccupancy              // per (switch, queue)
	QueueCongestion             // per (switch, queue)
	TxUtilization               // per (switch, egress port)
	BufferOccupancy             // per (switch, buffer)
	Drops                       // per (switch, reason): dropped packets reported
	SeqGaps                     // per (node, hw_id): reports missing from the sequence
	NumMeasurements
)

var measNames = [...]string{"", "flow_latency", "flow_hop_latency", "flow_path", "queue_occupancy",
	"queue_congestion", "tx_utilization", "buffer_occupancy", "drops", "seq_gaps"}

// String returns the measurement's schema name ("flow_latency", "queue_occupancy", ...).
func (m Measurement) String() string {
	if int(m) < len(measNames) {
		return measNames[m]
	}
	return "unknown"
}

// ParseMeasurement is the inverse of Measurement.String.
func ParseMeasurement(s string) (Measurement, bool) {
	for i, n := range measNames {
		if i > 0 && n == s {
			return Measurement(i), true
		}
	}
	return MeasNone, false
}

// MeasurementNames lists the measurement names in order.
func MeasurementNames() []string { return append([]string(nil), measNames[1:]...) }

// Key identifies a metric's ids. Which fields count depends on the measurement:
//
//	flow_latency, flow_path        Flow
//	flow_hop_latency               Flow, Switch
//	queue_occupancy/_congestion    Switch, Queue
//	tx_utilization                 Switch, Port (egress)
//	buffer_occupancy               Switch, Buffer
//	drops                          Switch, Reason
//	seq_gaps                       Switch (the reporting node), HWID
//
// Queue is 16 bits, as telemetry.Hop.QueueID is; it sits in the two bytes FlowKey leaves
// before Switch, so a Key stays 52 bytes.
type Key struct {
	Flow   telemetry.FlowKey
	Queue  uint16
	Switch uint32
	Port   uint32
	Buffer uint8
	Reason uint8
	HWID   uint8
}

// HasFlow reports whether the measurement is keyed by a flow.
func (m Measurement) HasFlow() bool { return m == FlowLatency || m == FlowHopLatency || m == FlowPath }

// HasSwitch reports whether the measurement is keyed by a switch.
func (m Measurement) HasSwitch() bool { return m != FlowLatency && m != FlowPath && m != MeasNone }

// MaxPath is the number of node ids an Event carries; a longer path is cut (NPath keeps the
// true length).
const MaxPath = 16

// Event is one event (or one periodic value, KindPeriodic). It is a pointer-free value, so
// that the rings hold it inline and the GC never scans them.
type Event struct {
	Time        int64  // Unix ns: the collector's receive time of the report that raised it
	DevTime     uint64 // the INT data's timestamp (hop egress ts, or report ingress ts), device ns; 0 if none
	Kind        Kind
	Scope       Scope
	Measurement Measurement
	Key         Key
	// Prev is the last exported value (0 for a new key); Value the new one. For flow_path
	// they are the path hashes (PathHash); the new path is in Path.
	Prev, Value uint64
	// Threshold is T(m) for change events, the above-threshold for above/below events.
	Threshold uint64
	NPath     uint8
	Path      [MaxPath]uint32 // flow_path: node ids, source to sink
}

// PathList returns the node ids carried (at most MaxPath).
func (e *Event) PathList() []uint32 { return e.Path[:min(int(e.NPath), MaxPath)] }

// AppendPath appends the path as node ids joined by ':' (source to sink), the form of
// INTCollector's path field.
func AppendPath(b []byte, path []uint32) []byte {
	for i, id := range path {
		if i > 0 {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return b
}

// PathHash is the fixed hash of a path's node ids, the value of flow_path events: FNV-1a
// taken a 32-bit node id at a time (one multiply per hop on the hot path, not four),
// PathHashStep over the ids source to sink from PathHashBasis.
func PathHash(path []uint32) uint64 {
	h := uint64(PathHashBasis)
	for _, id := range path {
		h = PathHashStep(h, id)
	}
	return h
}

// PathHashBasis is PathHash of the empty path (the FNV-64 offset basis).
const PathHashBasis = 14695981039346656037

// PathHashStep adds node id to path hash h (the FNV-64 prime).
func PathHashStep(h uint64, id uint32) uint64 { return (h ^ uint64(id)) * 1099511628211 }
