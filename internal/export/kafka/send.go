package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/telemetry"
)

func (s *Sink) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// run moves queued messages to the producer until Stop, then until the queues are empty
// or Stop's context ends (what is queued then is dropped, reason shutdown). It takes a
// kind's messages only while that kind has room in the producer (inflight below limit),
// and sleeps only when nothing it may take is queued: a worker that queues a report wakes
// it (sleeping is set before the rings are checked a last time and read by the worker after
// it queued, so no report waits for the next one), and so does a delivery that gives a
// kind room again.
func (s *Sink) run() {
	defer close(s.done)
	var buf []byte
	stopping := false
	for {
		if !stopping && s.stopping() {
			stopping = true
		}
		if stopping && s.stopCtx.Err() != nil {
			s.dropQueued()
			return
		}
		if s.move(&buf) > 0 {
			continue
		}
		if stopping && s.queued() == 0 {
			return
		}
		stop, deadline := s.stop, (<-chan struct{})(nil)
		if stopping {
			stop, deadline = nil, s.stopCtx.Done()
		}
		events, snaps, flows := s.events, s.snaps, s.flows
		if !s.hasRoom(kafkaEvent) {
			events = nil
		}
		if !s.hasRoom(kafkaSnapshot) {
			snaps = nil
		}
		if !s.hasRoom(kafkaFlow) {
			flows = nil
		}
		s.sleeping.Store(true)
		if !s.hasRoom(kafkaReport) || s.ringsEmpty() {
			select {
			case <-s.wake:
			case <-s.room:
			case e := <-events:
				buf = s.produceEvent(buf, &e)
			case e := <-snaps:
				buf = s.produceEvent(buf, &e)
			case b := <-flows:
				s.produce(kafkaFlow, b.key, b.value)
			case <-stop:
			case <-deadline:
			}
		}
		s.sleeping.Store(false)
	}
}

// reportBurst is the most reports the sender takes from one worker's ring before it looks
// at the other queues.
const reportBurst = 256

// move hands the producer what is queued of the kinds that have room: up to reportBurst
// reports of each ring, one event, one snapshot and one flow record. It returns how many.
func (s *Sink) move(buf *[]byte) int {
	n := 0
	for _, r := range s.rings {
		if room := s.limit - s.inflight[kafkaReport].Load(); room > 0 {
			n += r.drain(int(min(room, reportBurst)), func(it *kafkaReportItem) { *buf = s.produceReport(*buf, it) })
		}
	}
	if s.hasRoom(kafkaEvent) {
		select {
		case e := <-s.events:
			*buf = s.produceEvent(*buf, &e)
			n++
		default:
		}
	}
	if s.hasRoom(kafkaSnapshot) {
		select {
		case e := <-s.snaps:
			*buf = s.produceEvent(*buf, &e)
			n++
		default:
		}
	}
	if s.hasRoom(kafkaFlow) {
		select {
		case b := <-s.flows:
			s.produce(kafkaFlow, b.key, b.value)
			n++
		default:
		}
	}
	return n
}

// hasRoom reports whether the producer may take another message of kind.
func (s *Sink) hasRoom(kind int) bool { return s.inflight[kind].Load() < s.limit }

// inFlight is the records handed to the producer whose outcome is not known yet.
func (s *Sink) inFlight() int64 {
	var n int64
	for kind := range s.inflight {
		n += s.inflight[kind].Load()
	}
	return n
}

func (s *Sink) ringsEmpty() bool {
	for _, r := range s.rings {
		if r.len() > 0 {
			return false
		}
	}
	return true
}

// queued is the messages waiting in the queues.
func (s *Sink) queued() int {
	return s.queuedReports() + len(s.events) + len(s.snaps) + len(s.flows)
}

func (s *Sink) dropQueued() {
	for _, r := range s.rings {
		s.dropped[kafkaReport][kafkaDropShutdown].Add(uint64(r.drain(-1, func(*kafkaReportItem) {})))
	}
	for {
		select {
		case <-s.events:
			s.dropped[kafkaEvent][kafkaDropShutdown].Add(1)
		case <-s.snaps:
			s.dropped[kafkaSnapshot][kafkaDropShutdown].Add(1)
		case <-s.flows:
			s.dropped[kafkaFlow][kafkaDropShutdown].Add(1)
		default:
			return
		}
	}
}

// produce hands one record to the producer; key and value are the record's own. The
// producer's buffer holds every kind's limit, so this does not wait.
func (s *Sink) produce(kind int, key, value []byte) {
	r := s.pool.Get().(*kgo.Record)
	*r = kgo.Record{Topic: s.topics[kind], Key: key, Value: value}
	s.inflight[kind].Add(1)
	s.client.Produce(s.prodCtx, r, s.promise[kind])
}

// delivered counts one record's outcome (the producer's callback), and wakes the sender
// when the record's kind was at its limit.
func (s *Sink) delivered(kind int, r *kgo.Record, err error) {
	switch {
	case err == nil:
		s.sent[kind].Add(1)
	case s.stopping() && (errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)):
		// Cut short by Stop (its deadline, or the client closed with it still buffered).
		s.dropped[kind][kafkaDropShutdown].Add(1)
		s.lastErr.Set("kafka", err)
	default:
		s.dropped[kind][kafkaDropFailed].Add(1)
		s.lastErr.Set("kafka", fmt.Errorf("%s: %w", r.Topic, err))
	}
	*r = kgo.Record{}
	s.pool.Put(r)
	if s.inflight[kind].Add(-1) == s.limit-1 {
		select {
		case s.room <- struct{}{}:
		default:
		}
	}
}

func eventKind(e *event.Event) int {
	if e.Kind == event.KindPeriodic {
		return kafkaSnapshot
	}
	return kafkaEvent
}

// encode marshals m in the configured encoding into a new slice (the record owns it).
func (s *Sink) encode(scratch []byte, m *kafkapb.Message) ([]byte, []byte) {
	if s.json {
		b, err := kafkapb.JSON(m)
		if err != nil {
			panic(err) // every field is a plain value: protojson cannot fail on it
		}
		return b, scratch
	}
	if scratch == nil { // the caller keeps no scratch: the marshalled bytes are the value
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		return b, nil
	}
	scratch, err := proto.MarshalOptions{}.MarshalAppend(scratch[:0], m)
	if err != nil {
		panic(err)
	}
	return append([]byte(nil), scratch...), scratch
}

func (s *Sink) produceReport(buf []byte, it *kafkaReportItem) []byte {
	buf = s.encodeReport(buf, it)
	s.produce(kafkaReport, s.key, s.value)
	return buf
}

// encodeReport sets s.key and s.value to it's record (slices of the sender's slab: the
// record owns them).
func (s *Sink) encodeReport(buf []byte, it *kafkaReportItem) []byte {
	if s.json {
		m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Report{Report: ReportMessage(it)}}
		s.value, buf = s.encode(buf, m)
	} else {
		buf = s.wire.appendReportMessage(buf[:0], it)
		s.value = append(s.slab.take(len(buf)), buf...)
	}
	s.key = appendReportKey(s.slab.take(reportKeyLen(it)), it)
	return buf
}

// reportKeyLen is the length of it's message key (appendReportKey).
func reportKeyLen(it *kafkaReportItem) int {
	switch {
	case it.format == telemetry.FormatDTA && it.dta().Op != telemetry.DTAAppend:
		return int(it.dta().KeyLen)
	case it.format == telemetry.FormatDTA || it.format == telemetry.FormatLabel || !it.hasFlow:
		return 4
	}
	return FlowKeyLen
}

// appendReportKey appends it's message key: a DTA report's key as sent (an Append's list
// id, 4 bytes big endian), an INT-label export's switch (its newest item's, as in a
// cluster's partitioning, 4 bytes big endian), else the flow (FlowKeyLen bytes) or,
// without a flow, the reporting node (4 bytes big endian).
func appendReportKey(b []byte, it *kafkaReportItem) []byte {
	switch {
	case it.format == telemetry.FormatDTA && it.dta().Op == telemetry.DTAAppend:
		return binary.BigEndian.AppendUint32(b, it.dta().ListID)
	case it.format == telemetry.FormatDTA:
		return append(b, it.dta().KeyBytes()...)
	case it.format == telemetry.FormatLabel:
		return binary.BigEndian.AppendUint32(b, uint32(it.labelSwitch))
	case it.hasFlow:
		return AppendFlowKey(b, &it.flow)
	}
	return binary.BigEndian.AppendUint32(b, it.node)
}

// ReportKey appends the message key the sink gives r (appendReportKey).
func ReportKey(b []byte, r *telemetry.Report) []byte {
	var it kafkaReportItem
	fillReportItem(&it, r)
	return appendReportKey(b, &it)
}

func (s *Sink) produceEvent(buf []byte, e *event.Event) []byte {
	kind := eventKind(e)
	m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion}
	em := EventMessage(e)
	em.Member = s.member
	if kind == kafkaSnapshot {
		m.Body = &kafkapb.Message_Snapshot{Snapshot: em}
	} else {
		m.Body = &kafkapb.Message_Event{Event: em}
	}
	v, buf := s.encode(buf, m)
	s.produce(kind, EventKey(nil, e), v)
	return buf
}

// FlowKeyLen is the length of a flow's message key: source and destination address (16
// bytes each, IPv4 as ::ffff:a.b.c.d), source and destination port (big endian) and protocol.
const FlowKeyLen = 16 + 16 + 2 + 2 + 1

// AppendFlowKey appends k as a message key (FlowKeyLen bytes).
func AppendFlowKey(b []byte, k *telemetry.FlowKey) []byte {
	src, dst := k.SrcAddr().As16(), k.DstAddr().As16()
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	b = binary.BigEndian.AppendUint16(b, k.SrcPort)
	b = binary.BigEndian.AppendUint16(b, k.DstPort)
	return append(b, k.Proto)
}

// EventKey appends e's message key: its flow key for the flow measurements, else its switch
// (4 bytes, big endian).
func EventKey(b []byte, e *event.Event) []byte {
	if e.Measurement.HasFlow() {
		return AppendFlowKey(b, &e.Key.Flow)
	}
	return binary.BigEndian.AppendUint32(b, e.Key.Switch)
}
