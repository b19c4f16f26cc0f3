package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export/kafkapb"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/internal/smallfile"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/record"
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
// dropped (failed). Each kind (topic) may have at most `buffered` records in the producer:
// the sender takes no more of a kind that is at its limit, and the producer's own buffer
// holds every kind's limit, so Produce never waits and a topic in trouble (missing, its
// leaders unreachable) fills its own queue only, never another's. Every offered message
// ends counted exactly once: sent, or dropped queue_full, failed or shutdown; docs/kafka.md
// has the accounting.

// Kinds of Kafka messages, the kind label of the counters.
const (
	kafkaReport = iota
	kafkaEvent
	kafkaSnapshot
	kafkaFlow
	numKafkaKinds
)

var kafkaKindNames = [numKafkaKinds]string{"report", "event", "snapshot", "flow"}

// kafkaTopicKeys are the configuration keys of the kinds' topics (export.kafka.topics.*).
var kafkaTopicKeys = [numKafkaKinds]string{"reports", "events", "snapshots", "flows"}

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
// (pointer-free, so the queue holds it inline): the header, and the report's hops source
// first, or a DTA report's primitive (dta), or an INT-label export's items source first
// (labels).
type kafkaReportItem struct {
	recv      int64
	ingressTS uint64
	node, seq uint32
	format    telemetry.Format
	hwID      uint8
	hasFlow   bool
	nhops     uint8
	total     uint8
	// An INT-label export's items: labels holds nlabels of labelsTotal; labelSwitch is the
	// switch of the newest item, the message key.
	nlabels, labelsTotal uint8
	labelSpecific        bool
	labelSwitch          uint8
	flow                 telemetry.FlowKey
	// hops is also where dta and labels keep a DTA report's primitive and an INT-label
	// export's items: a report has one of the three, and a ring's slot stays the size a
	// report of hops needs (the slots of the workers' rings are written on the hot path,
	// and a larger slot makes each report cost the worker more: docs/performance.md,
	// "Figures behind choices in the code").
	hops [kafkapb.MaxHops]kafkaHop
}

// dta is the primitive of a DTA report, in the item's hops.
func (it *kafkaReportItem) dta() *telemetry.DTA { return (*telemetry.DTA)(unsafe.Pointer(&it.hops)) }

// labels are the items of an INT-label export, in the item's hops.
func (it *kafkaReportItem) labels() *[kafkapb.MaxHops]telemetry.LabelItem {
	return (*[kafkapb.MaxHops]telemetry.LabelItem)(unsafe.Pointer(&it.hops))
}

// dta and labels fit in hops, aligned: a negative array length fails the build otherwise.
var (
	_ [unsafe.Sizeof(kafkaReportItem{}.hops) - unsafe.Sizeof(telemetry.DTA{})]byte
	_ [unsafe.Sizeof(kafkaReportItem{}.hops) - unsafe.Sizeof([kafkapb.MaxHops]telemetry.LabelItem{})]byte
	_ [unsafe.Alignof(kafkaHop{}) - unsafe.Alignof(telemetry.DTA{})]byte
	_ [unsafe.Alignof(kafkaHop{}) - unsafe.Alignof(telemetry.LabelItem{})]byte
)

type kafkaHop struct {
	node, in, eg, lat, qocc, tx uint32
	qid                         uint16
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
	member string
	log    *slog.Logger

	// rings are the reports queues, one per ingest worker (KafkaReports); wake wakes the
	// sender when it sleeps (sleeping) and a worker queued a report.
	rings    []*reportRing
	wake     chan struct{}
	sleeping atomic.Bool
	events   chan event.Event
	snaps    chan event.Event
	flows    chan kafkaBytes

	offered [numKafkaKinds]atomic.Uint64
	sent    [numKafkaKinds]atomic.Uint64
	dropped [numKafkaKinds][numKafkaDrops]atomic.Uint64
	// inflight counts each kind's records handed to the producer whose outcome is not known
	// yet; the sender keeps it at most limit (buffered). room wakes the sender when a kind
	// at its limit has room again.
	inflight [numKafkaKinds]atomic.Int64
	limit    int64
	room     chan struct{}
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

// KafkaDeps are what the Kafka sink takes beside its configuration.
type KafkaDeps struct {
	// Workers is the number of ingest workers: the reports processor has a ring for each.
	Workers int
	// Metrics registers the sink's counters (nil: none).
	Metrics *metrics.Registry
	// Logger takes delivery errors and the topic check's warning (nil: slog.Default()).
	Logger *slog.Logger
	// Member is this collector's name in a cluster (cluster.self), which every event and
	// snapshot carries; empty outside a cluster.
	Member string
}

// NewKafka builds the sink of cfg.Kafka (enabled: brokers set); it connects at Start.
func NewKafka(cfg Config, deps KafkaDeps) (*KafkaSink, error) {
	k := cfg.Kafka
	s := &KafkaSink{cfg: k, json: k.Encoding == "json", member: deps.Member, log: deps.Logger,
		topics: [numKafkaKinds]string{k.Topics.Reports, k.Topics.Events, k.Topics.Snapshots, k.Topics.Flows},
		wake:   make(chan struct{}, 1), room: make(chan struct{}, 1), limit: int64(k.Buffered),
		events: make(chan event.Event, k.Queue), snaps: make(chan event.Event, k.Queue), flows: make(chan kafkaBytes, k.Queue)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.lastErr.log = s.log
	if k.Reports == "off" {
		s.topics[kafkaReport] = ""
	} else {
		workers := max(deps.Workers, 1)
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
	// The producer's buffer holds every kind's limit: the sender's limits per kind, not
	// the buffer all kinds share, decide what waits.
	kinds := 0
	for _, t := range s.topics {
		if t != "" {
			kinds++
		}
	}
	s.opts = append(opts, kgo.MaxBufferedRecords(max(kinds, 1)*k.Buffered))
	if reg := deps.Metrics; reg != nil {
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
			Func(func() float64 { return float64(s.inFlight()) })
	}
	return s, nil
}

// clientOpts are the producer's options from the configuration.
func (k *Kafka) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(kafkaCompression[k.Compression]),
		kgo.ProducerBatchMaxBytes(int32(k.BatchBytes)),
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
		pem, err := smallfile.Read(t.CA, smallfile.MaxPEM)
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
		cert, err := smallfile.KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.cert: %q: must be a PEM certificate with its key in kafka.tls.key (%q): %v", t.Cert, t.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Name is the sink's name in the export status.
func (s *KafkaSink) Name() string { return "kafka" }

// Start creates the producer, checks the topics (checkTopics) and starts the sender.
func (s *KafkaSink) Start(ctx context.Context) error {
	c, err := kgo.NewClient(s.opts...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	if err := s.checkTopics(ctx, c); err != nil {
		c.Close()
		return err
	}
	s.client = c
	s.stop, s.done, s.stopOnce, s.stopCtx = make(chan struct{}), make(chan struct{}), sync.Once{}, nil
	s.prodCtx, s.prodCancel = context.WithCancel(context.Background())
	go s.run()
	return nil
}

// topicCheckTimeout bounds the topic check at Start (checkTopics).
const topicCheckTimeout = 10 * time.Second

// checkTopics asks the brokers for the sink's topics. A missing topic is created with the
// brokers' default partitions and replication when create_topics is set; otherwise, or
// when the brokers refuse to create it, Start fails with an error that names the topic and
// its configuration key, rather than every message to it failing later. Brokers that do
// not answer within topicCheckTimeout leave the topics unchecked (a warning): the sink then
// starts as it would with brokers that go down later, and the producer retries.
func (s *KafkaSink) checkTopics(ctx context.Context, c *kgo.Client) error {
	keys := map[string][]string{} // topic → the configuration keys that name it
	var topics []string
	for kind, t := range s.topics {
		if t == "" {
			continue
		}
		if keys[t] == nil {
			topics = append(topics, t)
		}
		keys[t] = append(keys[t], "export.kafka.topics."+kafkaTopicKeys[kind])
	}
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(topicCheckTimeout, s.cfg.DeliveryTimeout))
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		s.log.Warn("kafka: the brokers did not answer: topics not checked", "brokers", strings.Join(s.cfg.Brokers, ","), "error", err)
		return nil
	}
	var missing []string
	for _, rt := range resp.Topics {
		t := ""
		if rt.Topic != nil {
			t = *rt.Topic
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		default:
			return fmt.Errorf("kafka: topic %q (%s): %w", t, strings.Join(keys[t], ", "), err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	if !s.cfg.CreateTopics {
		verb := "does not exist"
		if len(missing) > 1 {
			verb = "do not exist"
		}
		return fmt.Errorf("kafka: %s %s on the brokers (%s): create it, or set export.kafka.create_topics: true",
			topicList(missing, keys), verb, strings.Join(s.cfg.Brokers, ","))
	}
	return s.createTopics(ctx, c, missing, keys)
}

// createTopics creates topics with the brokers' default partitions and replication.
func (s *KafkaSink) createTopics(ctx context.Context, c *kgo.Client, topics []string, keys map[string][]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(min(topicCheckTimeout, s.cfg.DeliveryTimeout).Milliseconds())
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t, -1, -1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		return fmt.Errorf("kafka: creating %s failed: %w", topicList(topics, keys), err)
	}
	for _, rt := range resp.Topics {
		err := kerr.ErrorForCode(rt.ErrorCode)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("kafka: topic %q (%s) does not exist, and the brokers refused to create it: %w",
				rt.Topic, strings.Join(keys[rt.Topic], ", "), err)
		}
		if err == nil {
			s.log.Info("kafka: created topic", "topic", rt.Topic, "partitions", rt.NumPartitions, "replication", rt.ReplicationFactor)
		}
	}
	return nil
}

// topicList names topics with their configuration keys: topic "a" (export.kafka.topics.
// events), or topics "a" (...), "b" (...).
func topicList(topics []string, keys map[string][]string) string {
	parts := make([]string, len(topics))
	for i, t := range topics {
		parts[i] = fmt.Sprintf("%q (%s)", t, strings.Join(keys[t], ", "))
	}
	if len(parts) == 1 {
		return "topic " + parts[0]
	}
	return "topics " + strings.Join(parts, ", ")
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
	for deadline := time.Now().Add(10 * time.Second); s.inFlight() > 0 && time.Now().Before(deadline); {
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

// run moves queued messages to the producer until Stop, then until the queues are empty
// or Stop's context ends (what is queued then is dropped, reason shutdown). It takes a
// kind's messages only while that kind has room in the producer (inflight below limit),
// and sleeps only when nothing it may take is queued: a worker that queues a report wakes
// it (sleeping is set before the rings are checked a last time and read by the worker after
// it queued, so no report waits for the next one), and so does a delivery that gives a
// kind room again.
func (s *KafkaSink) run() {
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
func (s *KafkaSink) move(buf *[]byte) int {
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
func (s *KafkaSink) hasRoom(kind int) bool { return s.inflight[kind].Load() < s.limit }

// inFlight is the records handed to the producer whose outcome is not known yet.
func (s *KafkaSink) inFlight() int64 {
	var n int64
	for kind := range s.inflight {
		n += s.inflight[kind].Load()
	}
	return n
}

func (s *KafkaSink) ringsEmpty() bool {
	for _, r := range s.rings {
		if r.len() > 0 {
			return false
		}
	}
	return true
}

// queued is the messages waiting in the queues.
func (s *KafkaSink) queued() int {
	return s.queuedReports() + len(s.events) + len(s.snaps) + len(s.flows)
}

func (s *KafkaSink) dropQueued() {
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
func (s *KafkaSink) produce(kind int, key, value []byte) {
	r := s.pool.Get().(*kgo.Record)
	*r = kgo.Record{Topic: s.topics[kind], Key: key, Value: value}
	s.inflight[kind].Add(1)
	s.client.Produce(s.prodCtx, r, s.promise[kind])
}

// delivered counts one record's outcome (the producer's callback), and wakes the sender
// when the record's kind was at its limit.
func (s *KafkaSink) delivered(kind int, r *kgo.Record, err error) {
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

func (s *KafkaSink) produceEvent(buf []byte, e *event.Event) []byte {
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

// ValueCounts is the Kafka sink's reduction accounting (ValueSink): a value is stored once
// the brokers acknowledged its message (events topic: events; snapshots topic: periodic
// values), dropped by the reason its message was.
func (s *KafkaSink) ValueCounts() ValueCounts {
	c := ValueCounts{Events: s.sent[kafkaEvent].Load(), Periodic: s.sent[kafkaSnapshot].Load(), Dropped: map[string]uint64{}}
	for why, wn := range kafkaDropNames {
		c.Dropped[wn] = s.droppedOf(kafkaEvent, why) + s.droppedOf(kafkaSnapshot, why)
	}
	return c
}

// Offer queues an event or a periodic value (snapshots topic), or counts it dropped (an
// EventSink: the pipeline offers them).
func (s *KafkaSink) Offer(e *event.Event) {
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
func (s *KafkaSink) OfferRecord(r *record.Record) {
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

// Reports returns the processor that offers decoded reports (nil when reports are off), a
// *KafkaReports. Its workers have a ring of about queue/workers reports each.
func (s *KafkaSink) Reports() ingest.Processor {
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

// KafkaCounts are the sink's counters by kind (report, event, snapshot, flow): the kind's
// topic (absent: the kind is off), messages offered, acknowledged (sent), and dropped by
// reason (queue_full, failed, shutdown); queued and in flight now. After Stop, offered =
// sent + dropped for every kind.
type KafkaCounts struct {
	Topics   map[string]string            `json:"topics"`
	Offered  map[string]uint64            `json:"offered"`
	Sent     map[string]uint64            `json:"sent"`
	Dropped  map[string]map[string]uint64 `json:"dropped"`
	Queued   int                          `json:"queued"`
	InFlight int64                        `json:"in_flight"`
}

// Counts returns the counters now.
func (s *KafkaSink) Counts() KafkaCounts {
	c := KafkaCounts{Topics: map[string]string{}, Offered: map[string]uint64{}, Sent: map[string]uint64{},
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

// SinkStatus is the sink's line in the export pipeline's status (StatusSink): the kinds the
// pipeline offers (events and snapshots), messages sent and dropped by reason (Retried
// stays 0: the producer retries inside delivery_timeout and reports only each message's
// outcome). Counts has every kind.
func (s *KafkaSink) SinkStatus() SinkStatus { return s.sinkStatus(kafkaEvent, kafkaSnapshot) }

// Drops returns the messages dropped that are not counted elsewhere, by
// "kafka.<kind>.<reason>" (the kafka section of GET /api/v1/status's drops), zero counts
// included: flow records, and reports but for queue_full (a full ring is the reports
// processor's queue: ingest counts it under processor_queues.kafka). Events and snapshots
// are the pipeline's (export.kafka.<reason>).
func (s *KafkaSink) Drops() map[string]uint64 {
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
	if slices.Contains(kinds, kafkaSnapshot) {
		st.Queued += len(s.snaps)
	}
	st.LastError, st.LastErrorTime = s.lastErr.get()
	return st
}
