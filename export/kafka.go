package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export/kafkapb"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/telemetry"
)

// The Kafka sink (docs/kafka.md) produces four kinds of messages, each to its own topic:
// decoded reports (ingest workers, through KafkaReports, a processor), detector events and
// periodic snapshots (the export pipeline, through KafkaSink.Events), and evicted flow
// records (the flow cache's drain goroutine, OfferRecord). Every message is a
// kafkapb.Message keyed by its flow key (or its switch), so a flow's messages land in one
// partition in order and a consumer group can share the partitions.
//
// The offering side only copies into a bounded queue per kind (full: dropped, counted
// queue_full); one sender goroutine encodes and hands records to the franz-go producer,
// which batches per partition, compresses, retries (a broker down, a leader moving) until
// delivery_timeout, and reports each record's outcome to a callback that counts it sent or
// dropped (failed). The sender may wait for the producer's buffer (buffered records); the
// queues, not ingest, absorb that. Every offered message ends counted exactly once: sent,
// or dropped queue_full, failed or shutdown; docs/kafka.md has the accounting.

// Kinds of Kafka messages, the kind label of the counters.
const (
	kafkaReport = iota
	kafkaEvent
	kafkaSnapshot
	kafkaFlow
	numKafkaKinds
)

var kafkaKindNames = [numKafkaKinds]string{"report", "event", "snapshot", "flow"}

// Drop reasons of the Kafka counters.
const (
	kafkaDropQueue = iota
	kafkaDropFailed
	kafkaDropShutdown
	numKafkaDrops
)

var kafkaDropNames = [numKafkaDrops]string{"queue_full", "failed", "shutdown"}

var kafkaCompression = map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}

// kafkaReportItem is the part of a report the reports topic carries, copied by the worker
// (pointer-free, so the queue holds it inline).
type kafkaReportItem struct {
	recv      int64
	ingressTS uint64
	node, seq uint32
	format    telemetry.Format
	hwID      uint8
	hasFlow   bool
	nhops     uint8
	total     uint8
	flow      telemetry.FlowKey
	hops      [kafkapb.MaxHops]kafkaHop
}

type kafkaHop struct {
	node, in, eg, lat, qocc, tx uint32
	qid                         uint8
	egTS                        uint64
}

// kafkaBytes is a message already encoded (flow records: encoded by the offerer, because a
// record's hops are the cache's memory), with its key.
type kafkaBytes struct {
	key, value []byte
}

// KafkaSink is the Kafka output. It is a collector component (Start, Stop); its three
// inputs are Events (an export.Sink), Reports (an ingest processor) and OfferRecord (a flow
// cache sink).
type KafkaSink struct {
	cfg    Kafka
	topics [numKafkaKinds]string
	json   bool

	// rings are the reports queues, one per ingest worker (KafkaReports); wake wakes the
	// sender when it sleeps (sleeping) and a worker queued a report.
	rings    []*reportRing
	wake     chan struct{}
	sleeping atomic.Bool
	events   chan event.Event // events and snapshots
	flows    chan kafkaBytes

	offered [numKafkaKinds]atomic.Uint64
	sent    [numKafkaKinds]atomic.Uint64
	dropped [numKafkaKinds][numKafkaDrops]atomic.Uint64
	// inflight counts records handed to the producer whose outcome is not known yet.
	inflight atomic.Int64
	lastErr  lastError

	promise [numKafkaKinds]func(*kgo.Record, error)
	// key and value are the sender's record being made, from slab; wire is its scratch.
	key, value []byte
	slab       slab
	wire       reportWire
	client     *kgo.Client
	opts       []kgo.Opt

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	stopCtx  context.Context
	// prodCtx bounds the sender's wait for the producer's buffer: cancelled when Stop's
	// context ends.
	prodCtx    context.Context
	prodCancel context.CancelFunc
	pool       sync.Pool // *kgo.Record, returned by the promise
}

// NewKafka builds the sink of cfg.Kafka (enabled: brokers set) for workers ingest workers
// (the reports processor's rings); it connects at Start.
func NewKafka(cfg Config, workers int, reg *metrics.Registry) (*KafkaSink, error) {
	k := cfg.Kafka
	s := &KafkaSink{cfg: k, json: k.Encoding == "json",
		topics: [numKafkaKinds]string{k.Topics.Reports, k.Topics.Events, k.Topics.Snapshots, k.Topics.Flows},
		wake:   make(chan struct{}, 1), events: make(chan event.Event, k.Queue), flows: make(chan kafkaBytes, k.Queue)}
	if k.Reports == "off" {
		s.topics[kafkaReport] = ""
	} else {
		workers = max(workers, 1)
		s.rings = make([]*reportRing, workers)
		for i := range s.rings {
			s.rings[i] = newReportRing(max(k.Queue/workers, 1))
		}
	}
	s.pool.New = func() any { return new(kgo.Record) }
	for kind := range s.promise {
		s.promise[kind] = func(r *kgo.Record, err error) { s.delivered(kind, r, err) }
	}
	opts, err := k.clientOpts()
	if err != nil {
		return nil, err
	}
	s.opts = opts
	if reg != nil {
		off := reg.Counter("intake_export_kafka_offered_messages_total", "Messages offered to the Kafka sink, by kind.", "kind")
		sent := reg.Counter("intake_export_kafka_sent_messages_total", "Messages the Kafka brokers acknowledged, by kind.", "kind")
		drop := reg.Counter("intake_export_kafka_dropped_messages_total", "Messages the Kafka sink dropped, by kind and reason.", "kind", "reason")
		for kind, name := range kafkaKindNames {
			sent.Func(func() float64 { return float64(s.sent[kind].Load()) }, name)
			off.Func(func() float64 { return float64(s.offeredOf(kind)) }, name)
			for why, wn := range kafkaDropNames {
				drop.Func(func() float64 { return float64(s.droppedOf(kind, why)) }, name, wn)
			}
		}
		reg.Gauge("intake_export_kafka_inflight_messages", "Messages handed to the Kafka producer and not yet acknowledged or failed.").
			Func(func() float64 { return float64(s.inflight.Load()) })
	}
	return s, nil
}

// clientOpts are the producer's options from the configuration.
func (k *Kafka) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(kafkaCompression[k.Compression]),
		kgo.ProducerBatchMaxBytes(int32(k.BatchBytes)), kgo.MaxBufferedRecords(k.Buffered),
		kgo.RecordDeliveryTimeout(k.DeliveryTimeout), kgo.ProduceRequestTimeout(min(k.DeliveryTimeout, 10*time.Second)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil))}
	if k.Linger > 0 {
		opts = append(opts, kgo.ProducerLinger(k.Linger))
	}
	switch k.Acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	}
	more, err := k.authOpts()
	return append(opts, more...), err
}

// authOpts are the SASL and TLS options (shared by the sink and KafkaConsume).
func (k *Kafka) authOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	var m sasl.Mechanism
	switch k.SASL.Mechanism {
	case "PLAIN":
		m = plain.Auth{User: k.SASL.Username, Pass: k.SASL.Password}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: k.SASL.Username, Pass: k.SASL.Password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = scram.Auth{User: k.SASL.Username, Pass: k.SASL.Password}.AsSha512Mechanism()
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	tc, err := k.TLS.config()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

// config is the TLS configuration (nil when TLS is off).
func (t *KafkaTLS) config() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca: %q: must be a readable PEM file of CA certificates: %v", t.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca: %q: must be a PEM file of CA certificates: none found", t.CA)
		}
		tc.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.cert: %q: must be a PEM certificate with its key in kafka.tls.key (%q): %v", t.Cert, t.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Name is the sink's name in the export status.
func (s *KafkaSink) Name() string { return "kafka" }

// SetLogger sets where the sink logs delivery errors. Call before Start.
func (s *KafkaSink) SetLogger(l *slog.Logger) { s.lastErr.log = l }

// Start creates the producer (it connects in the background: brokers down at start are
// retried like brokers that go down later) and the sender.
func (s *KafkaSink) Start(context.Context) error {
	c, err := kgo.NewClient(s.opts...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	s.client = c
	s.stop, s.done, s.stopOnce, s.stopCtx = make(chan struct{}), make(chan struct{}), sync.Once{}, nil
	s.prodCtx, s.prodCancel = context.WithCancel(context.Background())
	go s.run()
	return nil
}

// Stop sends what is queued and waits for the brokers' acknowledgements until ctx ends;
// what is still queued or unacknowledged then is dropped (reason shutdown).
func (s *KafkaSink) Stop(ctx context.Context) error {
	if s.client == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		s.stopCtx = ctx
		close(s.stop)
	})
	unwatch := context.AfterFunc(ctx, s.prodCancel)
	<-s.done
	err := s.client.Flush(ctx)
	// Close fails what is still buffered; the promises (which count it dropped, shutdown)
	// run on the producer's goroutine, after Close returns.
	s.client.Close()
	for deadline := time.Now().Add(10 * time.Second); s.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	unwatch()
	s.prodCancel()
	s.client = nil
	if err != nil {
		return fmt.Errorf("kafka: flush: %w", err)
	}
	return nil
}

func (s *KafkaSink) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// run moves queued messages to the producer until Stop, then drains the queues. It sleeps
// only when every queue is empty: a worker that queues a report then wakes it (sleeping is
// set before the rings are checked a last time and read by the worker after it queued, so
// no report waits for the next one).
func (s *KafkaSink) run() {
	defer close(s.done)
	var buf []byte
	for {
		n := 0
		for _, r := range s.rings {
			n += r.drain(reportBurst, func(it *kafkaReportItem) { buf = s.produceReport(buf, it) })
		}
		select {
		case e := <-s.events:
			buf = s.produceEvent(buf, &e)
			continue
		case b := <-s.flows:
			s.produce(kafkaFlow, b.key, b.value)
			continue
		case <-s.stop:
			s.drain(&buf)
			return
		default:
		}
		if n > 0 {
			continue
		}
		s.sleeping.Store(true)
		if s.ringsEmpty() {
			select {
			case <-s.wake:
			case e := <-s.events:
				buf = s.produceEvent(buf, &e)
			case b := <-s.flows:
				s.produce(kafkaFlow, b.key, b.value)
			case <-s.stop:
			}
		}
		s.sleeping.Store(false)
	}
}

// reportBurst is the most reports the sender takes from one worker's ring before it looks
// at the other queues.
const reportBurst = 256

func (s *KafkaSink) ringsEmpty() bool {
	for _, r := range s.rings {
		if r.len() > 0 {
			return false
		}
	}
	return true
}

// drain produces what is queued at Stop, or drops it once Stop's context has ended.
func (s *KafkaSink) drain(buf *[]byte) {
	for {
		if s.stopCtx != nil && s.stopCtx.Err() != nil {
			s.dropQueued()
			return
		}
		n := 0
		for _, r := range s.rings {
			n += r.drain(reportBurst, func(it *kafkaReportItem) { *buf = s.produceReport(*buf, it) })
		}
		select {
		case e := <-s.events:
			*buf = s.produceEvent(*buf, &e)
		case b := <-s.flows:
			s.produce(kafkaFlow, b.key, b.value)
		default:
			if n == 0 {
				return
			}
		}
	}
}

func (s *KafkaSink) dropQueued() {
	for _, r := range s.rings {
		s.dropped[kafkaReport][kafkaDropShutdown].Add(uint64(r.drain(-1, func(*kafkaReportItem) {})))
	}
	for {
		select {
		case e := <-s.events:
			s.dropped[eventKind(&e)][kafkaDropShutdown].Add(1)
		case <-s.flows:
			s.dropped[kafkaFlow][kafkaDropShutdown].Add(1)
		default:
			return
		}
	}
}

// produce hands one record to the producer. It waits while the producer's buffer is full
// (Buffered records), which the queues absorb. key and value are the record's own.
func (s *KafkaSink) produce(kind int, key, value []byte) {
	r := s.pool.Get().(*kgo.Record)
	*r = kgo.Record{Topic: s.topics[kind], Key: key, Value: value}
	s.inflight.Add(1)
	s.client.Produce(s.prodCtx, r, s.promise[kind])
}

// delivered counts one record's outcome (the producer's callback).
func (s *KafkaSink) delivered(kind int, r *kgo.Record, err error) {
	s.inflight.Add(-1)
	switch {
	case err == nil:
		s.sent[kind].Add(1)
	case s.stopping() && (errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)):
		// Cut short by Stop (its deadline, or the client closed with it still buffered).
		s.dropped[kind][kafkaDropShutdown].Add(1)
		s.lastErr.set("kafka", err)
	default:
		s.dropped[kind][kafkaDropFailed].Add(1)
		s.lastErr.set("kafka", fmt.Errorf("%s: %w", r.Topic, err))
	}
	*r = kgo.Record{}
	s.pool.Put(r)
}

func eventKind(e *event.Event) int {
	if e.Kind == event.KindPeriodic {
		return kafkaSnapshot
	}
	return kafkaEvent
}

// encode marshals m in the configured encoding into a new slice (the record owns it).
func (s *KafkaSink) encode(scratch []byte, m *kafkapb.Message) ([]byte, []byte) {
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

func (s *KafkaSink) produceReport(buf []byte, it *kafkaReportItem) []byte {
	buf = s.encodeReport(buf, it)
	s.produce(kafkaReport, s.key, s.value)
	return buf
}

// encodeReport sets s.key and s.value to it's record (slices of the sender's slab: the
// record owns them).
func (s *KafkaSink) encodeReport(buf []byte, it *kafkaReportItem) []byte {
	if s.json {
		m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Report{Report: ReportMessage(it)}}
		s.value, buf = s.encode(buf, m)
	} else {
		buf = s.wire.appendReportMessage(buf[:0], it)
		s.value = append(s.slab.take(len(buf)), buf...)
	}
	if it.hasFlow {
		s.key = AppendFlowKey(s.slab.take(FlowKeyLen), &it.flow)
	} else {
		s.key = binary.BigEndian.AppendUint32(s.slab.take(4), it.node)
	}
	return buf
}

func (s *KafkaSink) produceEvent(buf []byte, e *event.Event) []byte {
	kind := eventKind(e)
	m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion}
	if kind == kafkaSnapshot {
		m.Body = &kafkapb.Message_Snapshot{Snapshot: EventMessage(e)}
	} else {
		m.Body = &kafkapb.Message_Event{Event: EventMessage(e)}
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

// Events is the sink's export.Sink side: the pipeline offers detector events and periodic
// values; the KafkaSink's own Start and Stop run it (the pipeline's are no-ops).
func (s *KafkaSink) Events() Sink { return kafkaEvents{s} }

type kafkaEvents struct{ s *KafkaSink }

func (k kafkaEvents) Name() string                { return "kafka" }
func (k kafkaEvents) Start(context.Context) error { return nil }
func (k kafkaEvents) Stop(context.Context) error  { return nil }
func (k kafkaEvents) SinkStatus() SinkStatus      { return k.s.sinkStatus(kafkaEvent, kafkaSnapshot) }
func (k kafkaEvents) Offer(e *event.Event)        { k.s.OfferEvent(e) }

// OfferEvent queues an event or a periodic value (snapshots topic), or counts it dropped.
func (s *KafkaSink) OfferEvent(e *event.Event) {
	kind := eventKind(e)
	if s.topics[kind] == "" || e.Kind == event.KindExpire {
		return
	}
	s.offered[kind].Add(1)
	select {
	case s.events <- *e:
	default:
		s.dropped[kind][kafkaDropQueue].Add(1)
	}
}

// OfferRecord encodes an evicted flow record and queues it (a flowcache sink: see
// FlowCache.AddSink).
func (s *KafkaSink) OfferRecord(r *flowcache.Record) {
	if s.topics[kafkaFlow] == "" || r.Reason == flowcache.ReasonNone {
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

// KafkaReports is the sink's ingest processor: every report (full) or one in sample_every
// per worker (sampled) is copied into the worker's own ring (single producer, single
// consumer: no lock, no allocation, no shared cache line on the way in).
type KafkaReports struct {
	s     *KafkaSink
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

// Reports returns the processor that offers decoded reports (nil when reports are off). Its
// workers have a ring of about queue/workers reports each.
func (s *KafkaSink) Reports() *KafkaReports {
	if s.topics[kafkaReport] == "" {
		return nil
	}
	every := uint64(1)
	if s.cfg.Reports == "sampled" {
		every = uint64(s.cfg.SampleEvery)
	}
	return &KafkaReports{s: s, every: every}
}

// Name labels the processor.
func (p *KafkaReports) Name() string { return "kafka" }

// QueueDrops is the reports dropped because a queue was full.
func (p *KafkaReports) QueueDrops() uint64 { return p.s.droppedOf(kafkaReport, kafkaDropQueue) }

// Process copies r's summary into the worker's ring, or counts it dropped; it never waits.
func (p *KafkaReports) Process(worker int, r *telemetry.Report) {
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

func fillReportItem(it *kafkaReportItem, r *telemetry.Report) {
	it.recv, it.ingressTS, it.node, it.seq, it.format, it.hwID = r.RecvTime, r.IngressTS, r.NodeID, r.Seq, r.Format, r.HWID
	it.hasFlow = r.Has&telemetry.HasFlow != 0
	it.flow = r.Flow
	n := min(int(r.NHops), telemetry.MaxHops)
	it.total = uint8(n)
	n = min(n, kafkapb.MaxHops)
	it.nhops = uint8(n)
	for i := range n {
		h, d := &r.Hops[i], &it.hops[i]
		d.node, d.in, d.eg, d.lat, d.qocc, d.tx = h.NodeID, h.IngressPort, h.EgressPort, h.HopLatency, h.QueueOccupancy, h.TxUtil
		d.qid, d.egTS = h.QueueID, h.EgressTS
	}
}

// KafkaCounts are the sink's counters by kind (report, event, snapshot, flow): messages
// offered, acknowledged (sent), and dropped by reason (queue_full, failed, shutdown);
// queued and in flight now. After Stop, offered = sent + dropped for every kind.
type KafkaCounts struct {
	Offered  map[string]uint64            `json:"offered"`
	Sent     map[string]uint64            `json:"sent"`
	Dropped  map[string]map[string]uint64 `json:"dropped"`
	Queued   int                          `json:"queued"`
	InFlight int64                        `json:"in_flight"`
}

// Counts returns the counters now.
func (s *KafkaSink) Counts() KafkaCounts {
	c := KafkaCounts{Offered: map[string]uint64{}, Sent: map[string]uint64{}, Dropped: map[string]map[string]uint64{},
		Queued: s.queuedReports() + len(s.events) + len(s.flows), InFlight: s.inflight.Load()}
	for kind, name := range kafkaKindNames {
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
func (s *KafkaSink) offeredOf(kind int) uint64 {
	n := s.offered[kind].Load()
	if kind == kafkaReport {
		for _, r := range s.rings {
			n += r.offered.Load()
		}
	}
	return n
}

func (s *KafkaSink) droppedOf(kind, why int) uint64 {
	n := s.dropped[kind][why].Load()
	if kind == kafkaReport && why == kafkaDropQueue {
		for _, r := range s.rings {
			n += r.filled.Load()
		}
	}
	return n
}

func (s *KafkaSink) queuedReports() int {
	n := 0
	for _, r := range s.rings {
		n += int(r.len())
	}
	return n
}

// SinkStatus is the sink's counters as one SinkStatus: messages of every kind, sent and
// dropped by reason (Retried stays 0: the producer retries inside delivery_timeout and
// reports only each message's outcome).
func (s *KafkaSink) SinkStatus() SinkStatus {
	return s.sinkStatus(kafkaReport, kafkaEvent, kafkaSnapshot, kafkaFlow)
}

// sinkStatus sums the counters of kinds. The export pipeline's status shows the kinds it
// offers (events and snapshots), so that its sink line is its own.
func (s *KafkaSink) sinkStatus(kinds ...int) SinkStatus {
	st := SinkStatus{Name: "kafka", Dropped: map[string]uint64{}}
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
	st.LastError, st.LastErrorTime = s.lastErr.get()
	return st
}
