// Package kafka is the Kafka sink (export.kafka, docs/kafka.md): decoded reports, the
// pipeline's events and periodic snapshots and the flow cache's evicted records, each to its
// own topic (Sink), with the Kafka client's logs on slog and its metrics on intake's
// registry; and the reader of those topics, `intake consume` (Consumer).
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/twmb/franz-go/plugin/kprom"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/smallfile"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/telemetry"
)

// The Kafka sink (docs/kafka.md) produces four kinds of messages, each to its own topic:
// decoded reports (ingest workers, through Reports, a processor), detector events and
// periodic snapshots (the export pipeline, through Offer), and evicted flow
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

var compression = map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
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

// Sink is the Kafka output. It is a collector component (Start, Stop); its three
// inputs are Offer (an export.EventSink), Reports (an export.ReportSink: an ingest
// processor) and OfferRecord (an export.RecordSink).
type Sink struct {
	cfg    Config
	topics [numKafkaKinds]string
	json   bool
	member string
	log    *slog.Logger

	// rings are the reports queues, one per ingest worker (Reports); wake wakes the
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
	lastErr  export.LastError

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

// Deps are what the Kafka sink takes beside its configuration.
type Deps struct {
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

// New builds the sink of k (enabled: brokers set); it connects at Start.
func New(k Config, deps Deps) (*Sink, error) {
	s := &Sink{cfg: k, json: k.Encoding == "json", member: deps.Member, log: deps.Logger,
		topics: [numKafkaKinds]string{k.Topics.Reports, k.Topics.Events, k.Topics.Snapshots, k.Topics.Flows},
		wake:   make(chan struct{}, 1), room: make(chan struct{}, 1), limit: int64(k.Buffered),
		events: make(chan event.Event, k.Queue), snaps: make(chan event.Event, k.Queue), flows: make(chan kafkaBytes, k.Queue)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.lastErr.Log = s.log
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
	s.opts = append(opts, kgo.MaxBufferedRecords(max(kinds, 1)*k.Buffered), kgo.WithLogger(newKgoLogger(s.log)))
	if reg := deps.Metrics; reg != nil {
		// The client's own metrics (connections, bytes, batches, request latency by
		// broker), intake_export_kafka_client_*: registered when the client is made at
		// Start, unregistered when Stop closes it.
		s.opts = append(s.opts, kgo.WithHooks(kprom.NewMetrics("intake", kprom.Subsystem("export_kafka_client"),
			kprom.Registerer(reg.Registerer()), kprom.Gatherer(reg.Gatherer()))))
	}
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
func (k *Config) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(compression[k.Compression]),
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
	more, err := k.AuthOpts()
	return append(opts, more...), err
}

// AuthOpts are the SASL and TLS options (shared by the sink and KafkaConsume).
func (k *Config) AuthOpts() ([]kgo.Opt, error) {
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
func (t *TLS) config() (*tls.Config, error) {
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
func (s *Sink) Name() string { return "kafka" }

// Start creates the producer, checks the topics (checkTopics) and starts the sender.
func (s *Sink) Start(ctx context.Context) error {
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
func (s *Sink) checkTopics(ctx context.Context, c *kgo.Client) error {
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
func (s *Sink) createTopics(ctx context.Context, c *kgo.Client, topics []string, keys map[string][]string) error {
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
func (s *Sink) Stop(ctx context.Context) error {
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
