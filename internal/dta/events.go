package dta

import (
	"context"
	"encoding/binary"

	"github.com/intake-int/intake/event"
)

// Detected events → an Append list (DTA Table 2: "events → Append"). The event detector
// (package detect) publishes on the event bus; cmd/intake subscribes an EventWriter when
// `dta.int.event_list` names a list, and every event (periodic pushes aside: they are not
// events) becomes one entry of EventBytes, big-endian (docs/dta-layout.md):
//
//	offset 0  kind (event.Kind: 1 new_key, 2 path_change, 3 change, 4 above, 5 below, 7 expire)
//	       1  scope (0 switch, 1 e2e, 2 flow)
//	       2  measurement (event.Measurement, 1 flow_latency ... 9 seq_gaps)
//	       3  the 8-bit id of the measurement's key: buffer, reason or hw id; else 0
//	       4  switch id (32 bits; 0 when the key has none)
//	       8  the wider id (32 bits): egress port (tx_utilization) or the 16-bit queue id
//	          (queue_occupancy, queue_congestion), else 0
//	      12  flow id: the low 32 bits of Hash64(seed, flow key) (the key of the paths and
//	          Key-Increment stores, FlowKeyBytes), 0 for keys without a flow
//	      16  value (64 bits; a path's is its PathHash)
//	      24  time, Unix ns (the collector's receive time of the report that raised it)

// EventBytes is the width of an event entry: append.value_bytes must be at least this.
const EventBytes = 32

// EncodeEvent writes e's entry into b.
func EncodeEvent(b *[EventBytes]byte, e *event.Event, seed uint64) {
	b[0], b[1], b[2] = byte(e.Kind), byte(e.Scope), byte(e.Measurement)
	var sub uint8
	var sw, id, flow uint32
	switch e.Measurement {
	case event.QueueOccupancy, event.QueueCongestion:
		id = uint32(e.Key.Queue)
	case event.TxUtilization:
		id = e.Key.Port
	case event.BufferOccupancy:
		sub = e.Key.Buffer
	case event.Drops:
		sub = e.Key.Reason
	case event.SeqGaps:
		sub = e.Key.HWID
	}
	b[3] = sub
	if e.Measurement.HasSwitch() {
		sw = e.Key.Switch
	}
	if e.Measurement.HasFlow() {
		var kb [40]byte
		flow = uint32(Hash64(seed, FlowKeyBytes(&kb, &e.Key.Flow)))
	}
	binary.BigEndian.PutUint32(b[4:], sw)
	binary.BigEndian.PutUint32(b[8:], id)
	binary.BigEndian.PutUint32(b[12:], flow)
	binary.BigEndian.PutUint64(b[16:], e.Value)
	binary.BigEndian.PutUint64(b[24:], uint64(e.Time))
}

// EventWriter appends events to one list with a batcher of its own: it runs in the bus
// consumer's goroutine, beside the ingest workers, which never write that list.
type EventWriter struct {
	t    *Translator
	b    *Batcher
	list int
	rec  [EventBytes]byte
}

// EventWriter returns the writer of the configured event list, or nil when
// `int.event_list` is -1.
func (t *Translator) EventWriter() *EventWriter {
	l := t.Cfg.INT.EventList
	if l < 0 {
		return nil
	}
	return &EventWriter{t: t, b: t.St.AP.NewBatcher(t.Cfg.Append.Batch), list: l}
}

// Add queues e's entry and reports whether it is one (periodic pushes are not, nor the
// immediate notifications the translator raises itself: the list is the detector's). It
// does not allocate.
func (w *EventWriter) Add(e *event.Event) bool {
	if e.Kind == event.KindPeriodic || e.Kind == event.KindNone || e.Kind == event.KindImmediate {
		return false
	}
	EncodeEvent(&w.rec, e, w.t.Cfg.Seed)
	w.b.Add(w.list, w.rec[:])
	w.t.events.Add(1)
	return true
}

// Flush writes the partial batch, after each poll of the bus: an event waits for no other.
func (w *EventWriter) Flush() { w.b.Flush() }

// eventRing is the bus ring of the event list's consumer, in events.
const eventRing = 1 << 14

// startEvents subscribes to the bus and appends its events to dta.int.event_list until
// stopEvents (when both are set).
func (t *Translator) startEvents() {
	w := t.EventWriter()
	if w == nil || t.bus == nil {
		return
	}
	t.consumer = t.bus.Subscribe("dta", eventRing)
	ctx, cancel := context.WithCancel(context.Background())
	t.evDone = make(chan struct{})
	c := t.consumer
	go func() {
		defer close(t.evDone)
		buf := make([]event.Event, 256)
		drain := func() {
			for n := c.Poll(buf); n > 0; n = c.Poll(buf) {
				if t.St.Offline() != nil {
					t.offlineEvents.Add(uint64(n))
					continue
				}
				t.guarded("event list", func() {
					for i := range buf[:n] {
						w.Add(&buf[i])
					}
					w.Flush()
				})
			}
		}
		for c.Wait(ctx) {
			drain()
		}
		drain()
	}()
	t.evCancel = cancel
}

// stopEvents leaves the bus and waits for the consumer to append what it holds.
func (t *Translator) stopEvents() {
	if t.consumer == nil {
		return
	}
	t.bus.Unsubscribe(t.consumer)
	t.evCancel()
	<-t.evDone
	t.consumer = nil
}
