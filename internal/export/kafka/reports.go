package kafka

import (
	"slices"
	"sync/atomic"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// ValueCounts is the Kafka sink's reduction accounting (ValueSink): a value is stored once
// the brokers acknowledged its message (events topic: events; snapshots topic: periodic
// values), dropped by the reason its message was.
func (s *Sink) ValueCounts() export.ValueCounts {
	c := export.ValueCounts{Events: s.sent[kafkaEvent].Load(), Periodic: s.sent[kafkaSnapshot].Load(), Dropped: map[string]uint64{}}
	for why, wn := range kafkaDropNames {
		c.Dropped[wn] = s.droppedOf(kafkaEvent, why) + s.droppedOf(kafkaSnapshot, why)
	}
	return c
}

// Offer queues an event or a periodic value (snapshots topic), or counts it dropped (an
// EventSink: the pipeline offers them).
func (s *Sink) Offer(e *event.Event) {
	kind := eventKind(e)
	if s.topics[kind] == "" || e.Kind == event.KindExpire {
		return
	}
	s.offered[kind].Add(1)
	q := s.events
	if kind == kafkaSnapshot {
		q = s.snaps
	}
	select {
	case q <- *e:
	default:
		s.dropped[kind][kafkaDropQueue].Add(1)
	}
}

// OfferRecord encodes an evicted flow record and queues it (a RecordSink). A live record
// (Reason none) is not a flow record and is skipped.
func (s *Sink) OfferRecord(r *record.Record) {
	if s.topics[kafkaFlow] == "" || r.Reason == record.ReasonNone {
		return
	}
	s.offered[kafkaFlow].Add(1)
	if len(s.flows) == cap(s.flows) { // full: save the encoding
		s.dropped[kafkaFlow][kafkaDropQueue].Add(1)
		return
	}
	m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Flow{Flow: RecordMessage(r)}}
	v, _ := s.encode(nil, m)
	select {
	case s.flows <- kafkaBytes{key: AppendFlowKey(make([]byte, 0, FlowKeyLen), &r.Flow), value: v}:
	default:
		s.dropped[kafkaFlow][kafkaDropQueue].Add(1)
	}
}

// Reports is the sink's ingest processor: every report (full) or one in sample_every
// per worker (sampled) is copied into the worker's own ring (single producer, single
// consumer: no lock, no allocation, no shared cache line on the way in).
type Reports struct {
	s     *Sink
	every uint64
}

// reportRing is one worker's queue of reports and its counters, written by that worker
// alone.
type reportRing struct {
	head atomic.Uint64 // next to read: the sender's
	_    [56]byte
	tail atomic.Uint64 // next to write: the worker's
	// seen counts reports for sampling; headSeen is the head the worker last read (it
	// reads the sender's cache line only when the ring looks full).
	seen, headSeen  uint64
	offered, filled atomic.Uint64 // filled: dropped, queue full
	_               [24]byte
	mask            uint64
	buf             []kafkaReportItem
}

func newReportRing(size int) *reportRing {
	n := 1
	for n < size {
		n <<= 1
	}
	return &reportRing{mask: uint64(n - 1), buf: make([]kafkaReportItem, n)}
}

func (r *reportRing) len() uint64 { return r.tail.Load() - r.head.Load() }

// drain hands at most max queued items (all: max < 0) to fn, in order, each released after
// fn returns, and returns how many.
func (r *reportRing) drain(max int, fn func(*kafkaReportItem)) int {
	h, t := r.head.Load(), r.tail.Load()
	n := 0
	for ; h < t && n != max; h, n = h+1, n+1 {
		fn(&r.buf[h&r.mask])
		r.head.Store(h + 1)
	}
	return n
}

// Reports returns the processor that offers decoded reports (nil when reports are off), a
// *Reports. Its workers have a ring of about queue/workers reports each.
func (s *Sink) Reports() ingest.Processor {
	if s.topics[kafkaReport] == "" {
		return nil
	}
	every := uint64(1)
	if s.cfg.Reports == "sampled" {
		every = uint64(s.cfg.SampleEvery)
	}
	return &Reports{s: s, every: every}
}

// Name labels the processor.
func (p *Reports) Name() string { return "kafka" }

// QueueDrops is the reports dropped because a queue was full.
func (p *Reports) QueueDrops() uint64 { return p.s.droppedOf(kafkaReport, kafkaDropQueue) }

// Process copies r's summary into the worker's ring, or counts it dropped; it never waits.
func (p *Reports) Process(worker int, r *telemetry.Report) {
	q := p.s.rings[worker]
	if p.every > 1 {
		q.seen++
		if q.seen%p.every != 0 {
			return
		}
	}
	q.offered.Store(q.offered.Load() + 1) // this worker's alone: no read-modify-write needed
	t := q.tail.Load()
	if t-q.headSeen > q.mask {
		if q.headSeen = q.head.Load(); t-q.headSeen > q.mask {
			q.filled.Store(q.filled.Load() + 1)
			return
		}
	}
	fillReportItem(&q.buf[t&q.mask], r)
	q.tail.Store(t + 1)
	if p.s.sleeping.Load() {
		select {
		case p.s.wake <- struct{}{}:
		default:
		}
	}
}

// fillReportItem copies what the message carries of r. r's hops and INT-label items are
// newest first; the message's are source first (hop 1 is the first INT switch the packet
// crossed), the kafkapb.MaxHops nearest the source of a longer list.
func fillReportItem(it *kafkaReportItem, r *telemetry.Report) {
	it.recv, it.ingressTS, it.node, it.seq, it.format, it.hwID = r.RecvTime, r.IngressTS, r.NodeID, r.Seq, r.Format, r.HWID
	it.hasFlow = r.Has&telemetry.HasFlow != 0
	it.flow = r.Flow
	it.nhops, it.total, it.nlabels, it.labelsTotal = 0, 0, 0, 0
	switch r.Format {
	case telemetry.FormatDTA:
		*it.dta() = r.DTA
	case telemetry.FormatLabel:
		n := min(int(r.NLabels), telemetry.MaxLabelItems)
		it.labelsTotal, it.nlabels, it.labelSpecific, it.labelSwitch = uint8(n), uint8(min(n, kafkapb.MaxHops)), r.LabelSpecific, 0
		if n > 0 {
			it.labelSwitch = r.Labels[0].SwitchID
		}
		ls := it.labels()
		for i := range int(it.nlabels) {
			ls[i] = r.Labels[n-1-i]
		}
	default:
		n := min(int(r.NHops), telemetry.MaxHops)
		it.total = uint8(n)
		it.nhops = uint8(min(n, kafkapb.MaxHops))
		for i := range int(it.nhops) {
			h, d := &r.Hops[n-1-i], &it.hops[i]
			d.node, d.in, d.eg, d.lat, d.qocc, d.tx = h.NodeID, h.IngressPort, h.EgressPort, h.HopLatency, h.QueueOccupancy, h.TxUtil
			d.qid, d.egTS = h.QueueID, h.EgressTS
		}
	}
}

// Counts are the sink's counters by kind (report, event, snapshot, flow): the kind's
// topic (absent: the kind is off), messages offered, acknowledged (sent), and dropped by
// reason (queue_full, failed, shutdown); queued and in flight now. After Stop, offered =
// sent + dropped for every kind.
type Counts struct {
	Topics   map[string]string            `json:"topics"`
	Offered  map[string]uint64            `json:"offered"`
	Sent     map[string]uint64            `json:"sent"`
	Dropped  map[string]map[string]uint64 `json:"dropped"`
	Queued   int                          `json:"queued"`
	InFlight int64                        `json:"in_flight"`
}

// Counts returns the counters now.
func (s *Sink) Counts() Counts {
	c := Counts{Topics: map[string]string{}, Offered: map[string]uint64{}, Sent: map[string]uint64{},
		Dropped: map[string]map[string]uint64{}, Queued: s.queued(), InFlight: s.inFlight()}
	for kind, name := range kafkaKindNames {
		if s.topics[kind] != "" {
			c.Topics[name] = s.topics[kind]
		}
		c.Offered[name], c.Sent[name] = s.offeredOf(kind), s.sent[kind].Load()
		d := map[string]uint64{}
		for why, wn := range kafkaDropNames {
			d[wn] = s.droppedOf(kind, why)
		}
		c.Dropped[name] = d
	}
	return c
}

// offeredOf and droppedOf add the workers' counters of reports to the sink's.
func (s *Sink) offeredOf(kind int) uint64 {
	n := s.offered[kind].Load()
	if kind == kafkaReport {
		for _, r := range s.rings {
			n += r.offered.Load()
		}
	}
	return n
}

func (s *Sink) droppedOf(kind, why int) uint64 {
	n := s.dropped[kind][why].Load()
	if kind == kafkaReport && why == kafkaDropQueue {
		for _, r := range s.rings {
			n += r.filled.Load()
		}
	}
	return n
}

func (s *Sink) queuedReports() int {
	n := 0
	for _, r := range s.rings {
		n += int(r.len())
	}
	return n
}

// SinkStatus is the sink's line in the export pipeline's status (StatusSink): the kinds the
// pipeline offers (events and snapshots), messages sent and dropped by reason (Retried
// stays 0: the producer retries inside delivery_timeout and reports only each message's
// outcome). Counts has every kind.
func (s *Sink) SinkStatus() export.SinkStatus { return s.sinkStatus(kafkaEvent, kafkaSnapshot) }

// Drops returns the messages dropped that are not counted elsewhere, by
// "kafka.<kind>.<reason>" (the kafka section of GET /api/v1/status's drops), zero counts
// included: flow records, and reports but for queue_full (a full ring is the reports
// processor's queue: ingest counts it under processor_queues.kafka). Events and snapshots
// are the pipeline's (export.kafka.<reason>).
func (s *Sink) Drops() map[string]uint64 {
	d := map[string]uint64{}
	for _, kind := range []int{kafkaReport, kafkaFlow} {
		for why, wn := range kafkaDropNames {
			if kind != kafkaReport || why != kafkaDropQueue {
				d["kafka."+kafkaKindNames[kind]+"."+wn] = s.droppedOf(kind, why)
			}
		}
	}
	return d
}

// sinkStatus sums the counters of kinds.
func (s *Sink) sinkStatus(kinds ...int) export.SinkStatus {
	st := export.SinkStatus{Name: "kafka", Dropped: map[string]uint64{}}
	for _, kind := range kinds {
		st.Sent += s.sent[kind].Load()
		switch kind {
		case kafkaReport:
			st.Queued += s.queuedReports()
		case kafkaFlow:
			st.Queued += len(s.flows)
		}
		for why, wn := range kafkaDropNames {
			st.Dropped[wn] += s.droppedOf(kind, why)
		}
	}
	if slices.Contains(kinds, kafkaEvent) {
		st.Queued += len(s.events)
	}
	if slices.Contains(kinds, kafkaSnapshot) {
		st.Queued += len(s.snaps)
	}
	st.LastError, st.LastErrorTime = s.lastErr.Get()
	return st
}
