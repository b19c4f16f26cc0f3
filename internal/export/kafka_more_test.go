package export_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

func BenchmarkKafkaBrokerLimit(b *testing.B) {
	k := kfaketest.Start(b, 3, 4)
	r := kafkaReport(1, 1)
	value, err := proto.Marshal(&kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion,
		Body: &kafkapb.Message_Report{Report: kafka.ReportItemMessage(&r)}})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 200)
	for f := range keys {
		r := kafkaReport(f, 0)
		keys[f] = kafka.AppendFlowKey(nil, &r.Flow)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		cl.Produce(context.Background(), &kgo.Record{Topic: "intake.reports", Key: keys[i%len(keys)], Value: value}, promise)
	}
	if err := cl.Flush(context.Background()); err != nil || failed.Load() != 0 {
		b.Fatalf("flush: %v, %d failed", err, failed.Load())
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(len(value)), "value-bytes")
}

// startKafka starts a sink of cfg; Stop is the test's.
func startKafka(t *testing.T, cfg config.Export, deps kafka.Deps) *kafka.Sink {
	t.Helper()
	s, err := kafka.New(cfg.Kafka, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func stopKafka(t *testing.T, s *kafka.Sink) kafka.Counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return s.Counts()
}

func dtaReport(recv int64, d telemetry.DTA, key, data string) telemetry.Report {
	r := telemetry.Report{Format: telemetry.FormatDTA, RecvTime: recv, DTA: d}
	r.DTA.KeyLen, r.DTA.DataLen = uint8(copy(r.DTA.Key[:], key)), uint8(copy(r.DTA.Data[:], data))
	return r
}

// TestKafkaDTAAndLabel: DTA reports and INT-label exports reach the reports topic with
// their decoded content (every primitive's fields; the items source first) and their own
// keys (the DTA key, an Append's list, the export's newest switch), so that they spread
// over the partitions.
func TestKafkaDTAAndLabel(t *testing.T) {
	reports := []telemetry.Report{
		dtaReport(11, telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 2, Immediate: true}, "\x0a\x00\x00\x01", "\xde\xad\xbe\xef"),
		dtaReport(12, telemetry.DTA{Op: telemetry.DTAKeyIncrement, HeaderLen: 3, Seq: 9, Retransmit: true, Redundancy: 1, Counter: 1000}, "\x0a\x00\x00\x02", ""),
		dtaReport(13, telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 2, Hop: 3}, "\x0a\x00\x00\x03", "\x00\x00\x01\x00"),
		dtaReport(14, telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 7}, "", "\x00\x00\x00\x05"),
		{Format: telemetry.FormatLabel, RecvTime: 15, LabelSpecific: true, NLabels: 3, Labels: [telemetry.MaxLabelItems]telemetry.LabelItem{
			{SwitchID: 3, IngressPort: 1, EgressPort: 2, IngressTS: 300, EgressTS: 310, EnqTS: 305, EnqQDepth: 30, DeqTimedelta: 5, DeqQDepth: 31},
			{SwitchID: 2, IngressPort: 3, EgressPort: 4, IngressTS: 200, EgressTS: 210, EnqTS: 205, EnqQDepth: 20, DeqTimedelta: 4, DeqQDepth: 21},
			{SwitchID: 1, IngressPort: 5, EgressPort: 6, IngressTS: 100, EgressTS: 110, EnqTS: 105, EnqQDepth: 10, DeqTimedelta: 3, DeqQDepth: 11},
		}},
	}
	want := map[string]*kafkapb.Report{ // by key (hex)
		"0a000001": {RecvTimeNs: 11, Format: "dta", Dta: &kafkapb.DTA{Op: "key-write", Key: []byte{10, 0, 0, 1},
			Data: []byte{0xde, 0xad, 0xbe, 0xef}, Redundancy: 2, Immediate: true, HeaderLen: 2}},
		"0a000002": {RecvTimeNs: 12, Format: "dta", Dta: &kafkapb.DTA{Op: "key-increment", Key: []byte{10, 0, 0, 2},
			Redundancy: 1, Counter: 1000, HeaderLen: 3, Seq: 9, Retransmit: true}},
		"0a000003": {RecvTimeNs: 13, Format: "dta", Dta: &kafkapb.DTA{Op: "postcard", Key: []byte{10, 0, 0, 3},
			Data: []byte{0, 0, 1, 0}, Hop: 3, HeaderLen: 2}},
		"00000007": {RecvTimeNs: 14, Format: "dta", Dta: &kafkapb.DTA{Op: "append", Data: []byte{0, 0, 0, 5}, ListId: 7, HeaderLen: 2}},
		"00000003": {RecvTimeNs: 15, Format: "int-label", LabelsTotal: 3, LabelSpecific: true, Labels: []*kafkapb.LabelItem{
			{SwitchId: 1, IngressPort: 5, EgressPort: 6, IngressTs: 100, EgressTs: 110, EnqTs: 105, EnqQdepth: 10, DeqTimedelta: 3, DeqQdepth: 11},
			{SwitchId: 2, IngressPort: 3, EgressPort: 4, IngressTs: 200, EgressTs: 210, EnqTs: 205, EnqQdepth: 20, DeqTimedelta: 4, DeqQdepth: 21},
			{SwitchId: 3, IngressPort: 1, EgressPort: 2, IngressTs: 300, EgressTs: 310, EnqTs: 305, EnqQdepth: 30, DeqTimedelta: 5, DeqQdepth: 31},
		}},
	}
	for _, enc := range []string{"protobuf", "json"} {
		t.Run(enc, func(t *testing.T) {
			k := kfaketest.Start(t, 3, 4)
			cfg := kafkaConfig(k.Brokers)
			cfg.Kafka.Encoding = enc
			s := startKafka(t, cfg, kafka.Deps{Workers: 1})
			proc := s.Reports()
			for i := range reports {
				proc.Process(0, &reports[i])
			}
			if c := stopKafka(t, s); c.Sent["report"] != uint64(len(reports)) {
				t.Fatalf("sent %d of %d: %v", c.Sent["report"], len(reports), c.Dropped["report"])
			}
			got := consumeAll(t, k.Brokers, "g", 3*time.Second, "intake.reports")
			if len(got) != len(want) {
				t.Fatalf("consumed %d reports, want %d", len(got), len(want))
			}
			parts := map[int32]bool{}
			for _, m := range got {
				key := fmt.Sprintf("%x", m.Key)
				w, ok := want[key]
				if !ok {
					t.Fatalf("key %s: %v", key, m.Msg)
				}
				if rep := m.Msg.GetReport(); !proto.Equal(rep, w) {
					t.Errorf("key %s:\n got %v\nwant %v", key, rep, w)
				}
				parts[m.Partition] = true
			}
			if len(parts) < 2 {
				t.Errorf("five keys in one partition")
			}
		})
	}
}

// TestKafkaHopOrder: a report's hops are written source first, as intake.proto says and as
// flow records have them (telemetry.Report keeps them newest first), the kafkapb.MaxHops
// nearest the source of a longer path.
func TestKafkaHopOrder(t *testing.T) {
	for _, n := range []int{1, 3, kafkapb.MaxHops, 12} {
		var r telemetry.Report
		r.Format, r.NHops = telemetry.FormatTR20, uint8(n)
		for i := range n { // newest first: the sink n, ..., the source 1
			r.Hops[i] = telemetry.Hop{NodeID: uint32(n - i), HopLatency: uint32(100 * (n - i))}
		}
		m := kafka.ReportItemMessage(&r)
		var nodes, lats []uint32
		for _, h := range m.GetHops() {
			nodes, lats = append(nodes, h.GetNodeId()), append(lats, h.GetHopLatency())
		}
		var want, wantLat []uint32
		for i := 1; i <= min(n, kafkapb.MaxHops); i++ {
			want, wantLat = append(want, uint32(i)), append(wantLat, uint32(100*i))
		}
		if fmt.Sprint(nodes) != fmt.Sprint(want) || fmt.Sprint(lats) != fmt.Sprint(wantLat) || m.GetHopsTotal() != uint32(n) {
			t.Errorf("%d hops: nodes %v latencies %v total %d, want %v %v %d", n, nodes, lats, m.GetHopsTotal(), want, wantLat, n)
		}
	}
	// A flow record of the same path: the same order.
	rec := record.Record{Hops: []record.HopRecord{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}}
	var r telemetry.Report
	r.NHops = 3
	for i := range 3 {
		r.Hops[i].NodeID = uint32(3 - i)
	}
	fm, rm := kafka.RecordMessage(&rec), kafka.ReportItemMessage(&r)
	for i := range 3 {
		if fm.GetHops()[i].GetNodeId() != rm.GetHops()[i].GetNodeId() {
			t.Fatalf("hop %d: flow record node %d, report node %d", i+1, fm.GetHops()[i].GetNodeId(), rm.GetHops()[i].GetNodeId())
		}
	}
}

// TestKafkaMissingTopic: a topic the brokers do not have stops Start with an error naming
// it and its key, or is created with create_topics; a cluster that refuses to create it
// stops Start too.
func TestKafkaMissingTopic(t *testing.T) {
	noEvents := []string{"intake.reports", "intake.snapshots", "intake.flows"}
	t.Run("refused", func(t *testing.T) {
		k := kfaketest.StartTopics(t, 1, 2, noEvents...)
		s, err := kafka.New(kafkaConfig(k.Brokers).Kafka, kafka.Deps{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Start(context.Background())
		want := `kafka: topic "intake.events" (export.kafka.topics.events) does not exist on the brokers (` + k.Brokers[0] +
			`): create it, or set export.kafka.create_topics: true`
		if err == nil || err.Error() != want {
			s.Stop(context.Background())
			t.Fatalf("Start: %v\nwant %s", err, want)
		}
		cfg := kafkaConfig(k.Brokers)
		cfg.Kafka.Topics.Snapshots = "intake.events"
		s, _ = kafka.New(cfg.Kafka, kafka.Deps{Workers: 1})
		err = s.Start(context.Background())
		want = `kafka: topic "intake.events" (export.kafka.topics.events, export.kafka.topics.snapshots) does not exist`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Start: %v\nwant %s ...", err, want)
		}
	})
	t.Run("created", func(t *testing.T) {
		k := kfaketest.StartTopics(t, 3, 2)
		cfg := kafkaConfig(k.Brokers)
		cfg.Kafka.CreateTopics = true
		s := startKafka(t, cfg, kafka.Deps{Workers: 1})
		e := kafkaEvent(3, event.KindChange)
		s.Offer(&e)
		p := kafkaEvent(4, event.KindPeriodic)
		s.Offer(&p)
		r := kafkaReport(1, 1)
		s.Reports().Process(0, &r)
		rec := kafkaRecord(1)
		s.OfferRecord(&rec)
		c := stopKafka(t, s)
		for _, kind := range []string{"report", "event", "snapshot", "flow"} {
			if c.Sent[kind] != 1 {
				t.Errorf("%s: sent %d, dropped %v", kind, c.Sent[kind], c.Dropped[kind])
			}
		}
		if got := consumeAll(t, k.Brokers, "g", 10*time.Second, kfaketest.Topics...); len(got) != 4 {
			t.Errorf("consumed %d messages from the created topics, want 4", len(got))
		}
	})
	t.Run("create refused", func(t *testing.T) {
		k := kfaketest.StartTopics(t, 1, 2, noEvents...)
		k.Command(t, "refuse create")
		cfg := kafkaConfig(k.Brokers)
		cfg.Kafka.CreateTopics = true
		s, _ := kafka.New(cfg.Kafka, kafka.Deps{Workers: 1})
		err := s.Start(context.Background())
		want := `kafka: topic "intake.events" (export.kafka.topics.events) does not exist, and the brokers refused to create it: TOPIC_AUTHORIZATION_FAILED`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Start: %v\nwant %s...", err, want)
		}
	})
}

// deleteTopic deletes topic from the cluster, as an operator might while intake runs.
func deleteTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Topics) == 1 {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
}

// TestKafkaTopicIsolation: with the events topic gone while intake runs, its messages fail
// and its queue fills, and every report, snapshot and flow record still reaches its topic:
// one topic's trouble takes no room of another's.
func TestKafkaTopicIsolation(t *testing.T) {
	k := kfaketest.Start(t, 3, 4)
	cfg := kafkaConfig(k.Brokers)
	cfg.Kafka.Queue, cfg.Kafka.Buffered, cfg.Kafka.DeliveryTimeout = 8192, 1000, 4*time.Second
	s := startKafka(t, cfg, kafka.Deps{Workers: 1})
	deleteTopic(t, k.Brokers, "intake.events")
	// 10k reports/s for 3s; the ring holds 0.8s of them. The race detector slows the
	// sender below that: 2k/s, the ring holding it all, checks the sink's goroutines.
	reports, every := 30000, 100*time.Microsecond
	if raceEnabled {
		reports, every = 6000, 500*time.Microsecond
	}
	const events = 2000
	snapshots, records := uint64(reports/10), uint64(reports/100)
	sink, proc := s, s.Reports()
	start := time.Now()
	for i := range events {
		e := kafkaEvent(i, event.KindChange)
		sink.Offer(&e)
	}
	for i := range reports {
		r := kafkaReport(i%200, i/200)
		proc.Process(0, &r)
		if i%10 == 9 {
			p := kafkaEvent(i/10, event.KindPeriodic)
			sink.Offer(&p)
		}
		if i%100 == 99 {
			rec := kafkaRecord(i / 100 % 250)
			s.OfferRecord(&rec)
			time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		}
	}
	c := stopKafka(t, s)
	t.Logf("%s: %+v", time.Since(start).Round(time.Millisecond), c)
	want := map[string]uint64{"report": uint64(reports), "snapshot": snapshots, "flow": records}
	for kind, n := range want {
		if c.Offered[kind] != n || c.Sent[kind] != n {
			t.Errorf("%s: offered %d, sent %d of %d, dropped %v", kind, c.Offered[kind], c.Sent[kind], n, c.Dropped[kind])
		}
	}
	if c.Offered["event"] != events || c.Sent["event"] != 0 || sumDrops(c.Dropped["event"]) != events || c.Dropped["event"]["failed"] == 0 {
		t.Errorf("events: offered %d, sent %d, dropped %v", c.Offered["event"], c.Sent["event"], c.Dropped["event"])
	}
}

// TestKafkaClientMetrics: the Kafka client's own metrics (kprom) are on the sink's registry,
// intake_export_kafka_client_*, from Start (bytes written to the broker once a message was
// sent) until Stop, which takes them off again (a restart registers them anew).
func TestKafkaClientMetrics(t *testing.T) {
	k := kfaketest.StartTopics(t, 1, 1)
	cfg := kafkaConfig(k.Brokers)
	cfg.Kafka.CreateTopics = true
	reg := metrics.NewRegistry()
	client := func() map[string]bool {
		var buf bytes.Buffer
		reg.WriteText(&buf)
		names := map[string]bool{}
		for _, l := range strings.Split(buf.String(), "\n") {
			if n, _, ok := strings.Cut(l, " "); ok && strings.HasPrefix(n, "intake_export_kafka_client_") {
				n, _, _ = strings.Cut(n, "{")
				names[n] = true
			}
		}
		return names
	}
	for round := 1; round <= 2; round++ {
		s := startKafka(t, cfg, kafka.Deps{Workers: 1, Metrics: reg})
		e := kafkaEvent(round, event.KindChange)
		s.Offer(&e)
		testutil.Eventually(t, 30*time.Second, "the event sent", func() bool { return s.Counts().Sent["event"] == 1 })
		if got := client(); !got["intake_export_kafka_client_write_bytes_total"] || !got["intake_export_kafka_client_connects_total"] {
			t.Fatalf("round %d: client metrics %v, want write_bytes_total and connects_total among them", round, got)
		}
		stopKafka(t, s)
		if got := client(); len(got) != 0 {
			t.Fatalf("round %d: after Stop, client metrics %v", round, got)
		}
	}
}
