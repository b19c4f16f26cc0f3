package export_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/export/kafkapb"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// The Kafka tests run a Kafka-protocol cluster as a process of its own (kfaketest).

func kafkaConfig(brokers []string) export.Config {
	cfg := export.DefaultConfig()
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.Reports = "full"
	cfg.Kafka.Queue = 1 << 17
	cfg.Kafka.DeliveryTimeout = 60 * time.Second
	return cfg
}

// testReport is report i of flow f (f < 250): two hops, seq i.
func kafkaReport(f, i int) telemetry.Report {
	var r telemetry.Report
	r.Format = telemetry.FormatTR10
	r.NodeID, r.Seq, r.RecvTime, r.IngressTS, r.HWID = 7, uint32(i), int64(1e18)+int64(i), uint64(1000+i), 2
	r.Has |= telemetry.HasFlow
	r.Flow = telemetry.FlowKey{SrcPort: uint16(1000 + f), DstPort: 80, Proto: 6}
	src, dst := netip.MustParseAddr("10.0.0.1").As16(), netip.AddrFrom4([4]byte{10, 1, 0, byte(f)}).As16()
	r.Flow.Src, r.Flow.Dst = src, dst
	r.NHops = 2
	for h := range 2 {
		r.Hops[h] = telemetry.Hop{NodeID: uint32(h + 1), IngressPort: 1, EgressPort: 2, HopLatency: uint32(100*h + i),
			QueueID: 3, QueueOccupancy: 40, TxUtil: 50, EgressTS: uint64(2000 + i)}
	}
	return r
}

func kafkaRecord(f int) record.Record {
	r := kafkaReport(f, 0)
	rec := record.Record{Flow: r.Flow, Reason: record.ReasonIdle, Packets: uint64(10 + f), First: 5, Last: 9,
		LatLatest: 300, LatSum: 3000, LatCount: 10, Hops: []record.HopRecord{{NodeID: 1}, {NodeID: 2}}}
	rec.Hops[0].Latest[record.HopLatency], rec.Hops[0].Count[record.HopLatency], rec.Hops[0].Sum[record.HopLatency] = 100, 10, 1000
	return rec
}

func kafkaEvent(i int, kind event.Kind) event.Event {
	e := event.Event{Time: int64(i), Kind: kind, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
		Key: event.Key{Switch: uint32(i % 5), Queue: 1}, Prev: 1, Value: uint64(i), Threshold: 10}
	return e
}

func sumDrops(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// consumeAll reads the topics with a consumer group until idle for idle (the first fetch
// included: decoding tens of thousands of messages takes seconds under the race detector).
func consumeAll(t *testing.T, brokers []string, group string, idle time.Duration, topics ...string) []export.Consumed {
	t.Helper()
	var got []export.Consumed
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := export.KafkaConsume(ctx, export.ConsumeOptions{Kafka: export.Kafka{Brokers: brokers}, Topics: topics,
		Group: group, Idle: idle}, func(c *export.Consumed) error {
		if c.Err != nil {
			return fmt.Errorf("%s[%d]@%d: %v", c.Topic, c.Partition, c.Offset, c.Err)
		}
		got = append(got, *c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKafkaDelivery produces every kind of message to three brokers with four partitions
// per topic and reads them back with a consumer group: exact counts, a flow's messages in
// one partition in order, and every message equal to what was offered.
func TestKafkaDelivery(t *testing.T) {
	for _, enc := range []string{"protobuf", "json"} {
		t.Run(enc, func(t *testing.T) {
			k := kfaketest.Start(t, 3, 4)
			cfg := kafkaConfig(k.Brokers)
			cfg.Kafka.Encoding = enc
			s, err := export.NewKafka(cfg, export.KafkaDeps{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			const flows, perFlow, events, periodic, records = 20, 50, 300, 200, 40
			proc := s.Reports()
			for i := range perFlow {
				for f := range flows {
					r := kafkaReport(f, i)
					proc.Process(f%2, &r) // a flow stays on one worker, as in ingest
				}
			}
			sink := s
			for i := range events {
				e := kafkaEvent(i, event.KindChange)
				sink.Offer(&e)
			}
			for i := range periodic {
				e := kafkaEvent(i, event.KindPeriodic)
				sink.Offer(&e)
			}
			expire := kafkaEvent(0, event.KindExpire)
			sink.Offer(&expire) // not exported
			for f := range records {
				r := kafkaRecord(f)
				s.OfferRecord(&r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			c := s.Counts()
			want := map[string]uint64{"report": flows * perFlow, "event": events, "snapshot": periodic, "flow": records}
			for kind, n := range want {
				if c.Offered[kind] != n || c.Sent[kind] != n || sumDrops(c.Dropped[kind]) != 0 {
					t.Errorf("%s: offered %d sent %d dropped %v, want %d sent, none dropped", kind, c.Offered[kind], c.Sent[kind], c.Dropped[kind], n)
				}
			}
			if st := s.SinkStatus(); st.Sent != events+periodic || st.LastError != "" { // the pipeline's kinds
				t.Errorf("status %+v", st)
			}
			// The reduction accounting: the values whose messages the brokers acknowledged.
			if vc := export.ValueSink(sink).ValueCounts(); vc.Events != events || vc.Periodic != periodic || sumDrops(vc.Dropped) != 0 {
				t.Errorf("values stored %+v, want %d events and %d periodic", vc, events, periodic)
			}

			got := consumeAll(t, k.Brokers, "g-"+enc, 5*time.Second, "intake.reports", "intake.events", "intake.snapshots", "intake.flows")
			byTopic := map[string]int{}
			partOf := map[string]int32{}
			lastSeq := map[string]int{}
			parts := map[int32]bool{}
			for _, m := range got {
				byTopic[m.Topic]++
				if m.Msg.GetSchemaVersion() != kafkapb.SchemaVersion {
					t.Fatalf("schema_version %d", m.Msg.GetSchemaVersion())
				}
				if m.Topic != "intake.reports" {
					continue
				}
				key := string(m.Key)
				if p, ok := partOf[key]; ok && p != m.Partition {
					t.Fatalf("flow %x in partitions %d and %d", m.Key, p, m.Partition)
				}
				partOf[key] = m.Partition
				parts[m.Partition] = true
				rep := m.Msg.GetReport()
				seq := int(rep.GetSeq())
				if prev, ok := lastSeq[key]; ok && seq != prev+1 {
					t.Fatalf("flow %s: seq %d after %d", kafkapb.FlowString(rep.GetFlow()), seq, prev)
				}
				lastSeq[key] = seq
				f := int(rep.GetFlow().GetSrcPort()) - 1000
				r := kafkaReport(f, seq)
				if wantMsg := export.ReportItemMessage(&r); !proto.Equal(rep, wantMsg) {
					t.Fatalf("report round trip:\n got %v\nwant %v", rep, wantMsg)
				}
				if wantKey := export.AppendFlowKey(nil, &r.Flow); string(m.Key) != string(wantKey) {
					t.Fatalf("key %x, want %x", m.Key, wantKey)
				}
			}
			wantTopics := map[string]int{"intake.reports": flows * perFlow, "intake.events": events, "intake.snapshots": periodic, "intake.flows": records}
			for tp, n := range wantTopics {
				if byTopic[tp] != n {
					t.Errorf("consumed %d from %s, want %d", byTopic[tp], tp, n)
				}
			}
			if len(partOf) != flows || len(parts) < 2 {
				t.Errorf("%d flows over %d partitions, want %d flows over more than one", len(partOf), len(parts), flows)
			}
			// The group committed: a second read of the group finds nothing new.
			if again := consumeAll(t, k.Brokers, "g-"+enc, 3*time.Second, "intake.reports"); len(again) != 0 {
				t.Errorf("group read %d messages again after its commit", len(again))
			}
			// The other kinds' round trip.
			for _, m := range got {
				switch b := m.Msg.GetBody().(type) {
				case *kafkapb.Message_Event:
					e := kafkaEvent(int(b.Event.GetValue()), event.KindChange)
					if !proto.Equal(b.Event, export.EventMessage(&e)) {
						t.Fatalf("event round trip: %v", b.Event)
					}
					if string(m.Key) != string(binary.BigEndian.AppendUint32(nil, e.Key.Switch)) {
						t.Fatalf("event key %x", m.Key)
					}
				case *kafkapb.Message_Snapshot:
					e := kafkaEvent(int(b.Snapshot.GetValue()), event.KindPeriodic)
					if !proto.Equal(b.Snapshot, export.EventMessage(&e)) {
						t.Fatalf("snapshot round trip: %v", b.Snapshot)
					}
				case *kafkapb.Message_Flow:
					r := kafkaRecord(int(b.Flow.GetFlow().GetSrcPort()) - 1000)
					if !proto.Equal(b.Flow, export.RecordMessage(&r)) || b.Flow.GetHops()[0].GetMetrics()[0] != "hop_latency" {
						t.Fatalf("flow round trip: %v", b.Flow)
					}
				}
			}
		})
	}
}

// TestKafkaBrokerKilled removes a broker while messages flow: the producer retries on the
// partitions' new leaders, and every message offered is counted once, sent or dropped; the
// consumer group reads every one counted sent.
func TestKafkaBrokerKilled(t *testing.T) {
	k := kfaketest.Start(t, 3, 6)
	cfg := kafkaConfig(k.Brokers)
	cfg.Kafka.DeliveryTimeout = 20 * time.Second // the queues (1<<16 reports per worker) hold every report
	s, err := export.NewKafka(cfg, export.KafkaDeps{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	proc := s.Reports()
	const total = 60000
	start := time.Now()
	for i := range total {
		// Once a third is offered, wait until it is acknowledged (the producer then has
		// connections to every partition's leader) and kill the leader of partition 0
		// (a broker may lead none): the two thirds still to come are offered after the
		// kill, so some go to it and are refused.
		if i == total/3 {
			for deadline := time.Now().Add(30 * time.Second); s.Counts().Sent["report"] < total/3; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d sent after 30s", s.Counts().Sent["report"], total/3)
				}
			}
			leader := strings.TrimPrefix(k.Command(t, "leader intake.reports 0"), "leader ")
			k.Command(t, "kill "+leader)
		}
		r := kafkaReport(i%200, i/200)
		proc.Process(0, &r)
		if i%1000 == 999 {
			time.Sleep(20 * time.Millisecond) // ~50k/s
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	c := s.Counts()
	offered, sent, dropped := c.Offered["report"], c.Sent["report"], c.Dropped["report"]
	t.Logf("%s: offered %d, sent %d, dropped %v", time.Since(start).Round(time.Millisecond), offered, sent, dropped)
	if offered != total || sent+sumDrops(dropped) != offered {
		t.Fatalf("offered %d = sent %d + dropped %v does not hold (want %d offered)", offered, sent, dropped, total)
	}
	if sent < total/2 || c.InFlight != 0 || c.Queued != 0 {
		t.Fatalf("sent %d of %d; in flight %d, queued %d", sent, total, c.InFlight, c.Queued)
	}
	if a := k.Command(t, "refused"); a == "refused 0" {
		t.Fatalf("the killed broker refused no request of the sink: %q", a)
	} else {
		t.Log(a)
	}
	got := consumeAll(t, k.Brokers, "g-kill", 15*time.Second, "intake.reports")
	// A message counted failed or shutdown may still have been written (its acknowledgement
	// was lost): the group reads every sent one and at most those.
	lost := dropped["failed"] + dropped["shutdown"]
	if n := uint64(len(got)); n < sent || n > sent+lost {
		t.Fatalf("consumed %d, want %d sent (+ at most %d counted failed or shutdown)", n, sent, lost)
	}
	seen := map[string]bool{}
	for _, m := range got {
		id := fmt.Sprintf("%x/%d", m.Key, m.Msg.GetReport().GetSeq())
		if seen[id] {
			t.Fatalf("message %s read twice (idempotent writes)", id)
		}
		seen[id] = true
	}
}

// TestKafkaQueueFull fills the queues of a sink whose brokers do not answer: the offerer
// never waits, what does not fit is counted queue_full, and at Stop the rest is counted
// shutdown or failed.
func TestKafkaQueueFull(t *testing.T) {
	cfg := kafkaConfig([]string{"127.0.0.1:1"})
	cfg.Kafka.Queue, cfg.Kafka.Buffered = 10, 5
	s, err := export.NewKafka(cfg, export.KafkaDeps{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	proc := s.Reports()
	start := time.Now()
	for i := range 1000 {
		r := kafkaReport(1, i)
		proc.Process(0, &r)
	}
	sink := s
	for i := range 100 {
		e := kafkaEvent(i, event.KindChange)
		sink.Offer(&e)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 offers took %s: the offerer waited", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.Stop(ctx)
	c := s.Counts()
	d := c.Dropped["report"]
	if c.Offered["report"] != 1000 || c.Sent["report"] != 0 || sumDrops(d) != 1000 || d["queue_full"] < 1000-10-5-1 {
		t.Fatalf("offered %d sent %d dropped %v", c.Offered["report"], c.Sent["report"], d)
	}
	if proc.(*export.KafkaReports).QueueDrops() != d["queue_full"] {
		t.Fatalf("QueueDrops %d, want %d", proc.(*export.KafkaReports).QueueDrops(), d["queue_full"])
	}
	// No broker: no event value stored, every one dropped (queue full or at shutdown).
	if vc := export.ValueSink(sink).ValueCounts(); vc.Events != 0 || sumDrops(vc.Dropped) != 100 || vc.Dropped["queue_full"] < 100-10-5-1 {
		t.Fatalf("event values %+v, want 100 dropped, most queue_full", vc)
	}
}

func TestKafkaSampled(t *testing.T) {
	cfg := kafkaConfig([]string{"127.0.0.1:1"})
	cfg.Kafka.Reports, cfg.Kafka.SampleEvery = "sampled", 10
	s, err := export.NewKafka(cfg, export.KafkaDeps{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	proc := s.Reports()
	for i := range 1000 {
		r := kafkaReport(1, i)
		proc.Process(i%2, &r)
	}
	if n := s.Counts().Offered["report"]; n != 100 {
		t.Fatalf("sampled 1 in 10 of 1000: offered %d, want 100", n)
	}
	cfg.Kafka.Reports = "off"
	if s, _ := export.NewKafka(cfg, export.KafkaDeps{Workers: 2}); s.Reports() != nil {
		t.Fatal("reports off: a processor")
	}
}

func TestKafkaConfigErrors(t *testing.T) {
	for _, c := range []struct {
		set  func(*export.Kafka)
		want string
	}{
		{func(k *export.Kafka) { k.Brokers = []string{"localhost"} }, `kafka.brokers[0]: "localhost": must be host:port`},
		{func(k *export.Kafka) { k.Reports = "all" }, `kafka.reports: "all": must be off, sampled or full`},
		{func(k *export.Kafka) { k.SampleEvery = 0 }, `kafka.sample_every: 0: must be at least 1`},
		{func(k *export.Kafka) { k.Encoding = "avro" }, `kafka.encoding: "avro": must be protobuf or json`},
		{func(k *export.Kafka) { k.Compression = "brotli" }, `kafka.compression: "brotli": must be none, gzip, snappy, lz4 or zstd`},
		{func(k *export.Kafka) { k.Acks = "1" }, `kafka.acks: "1": must be all, leader or none`},
		{func(k *export.Kafka) { k.BatchBytes = 10 }, `kafka.batch_bytes: 10: must be 1024-1073741824`},
		{func(k *export.Kafka) { k.Linger = -1 }, `kafka.linger: -1ns: must be 0 or positive`},
		{func(k *export.Kafka) { k.Queue = 0 }, `kafka.queue: 0: must be 1-4194304`},
		{func(k *export.Kafka) { k.Buffered = 0 }, `kafka.buffered: 0: must be 1-16777216`},
		{func(k *export.Kafka) { k.DeliveryTimeout = 0 }, `kafka.delivery_timeout: 0s: must be at least 1ms`},
		{func(k *export.Kafka) { k.SASL.Mechanism = "GSSAPI" }, `kafka.sasl.mechanism: "GSSAPI": must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{func(k *export.Kafka) { k.SASL.Mechanism = "PLAIN" }, `kafka.sasl.username: "": must be set with kafka.sasl.mechanism PLAIN`},
		{func(k *export.Kafka) { k.SASL.Username = "u" }, `kafka.sasl.mechanism: "": must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with kafka.sasl.username`},
		{func(k *export.Kafka) { k.TLS.CA = "/x" }, `kafka.tls.enabled: false: must be true with the other kafka.tls keys`},
		{func(k *export.Kafka) { k.TLS.Enabled, k.TLS.Cert = true, "/c" }, `kafka.tls.cert: "/c", kafka.tls.key: "": must be set together`},
		{func(k *export.Kafka) { k.TLS.Enabled, k.TLS.CA = true, "/nonexistent" }, `kafka.tls.ca: "/nonexistent": must be a readable PEM file of CA certificates: open /nonexistent: no such file or directory`},
	} {
		cfg := export.DefaultConfig()
		cfg.Kafka.Brokers = []string{"127.0.0.1:9092"}
		c.set(&cfg.Kafka)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
	cfg := export.DefaultConfig()
	if err := cfg.Validate(); err != nil || cfg.Kafka.Enabled() {
		t.Fatalf("defaults: %v, enabled %v", err, cfg.Kafka.Enabled())
	}
}

// BenchmarkKafkaThroughput is the messages per second the sink delivers to kfakebroker (three
// brokers, four partitions, reports: full, lz4, acks all): reports offered as fast as the
// queue takes them, from the first offer to the last acknowledgement.
// BenchmarkKafkaBrokerLimit beside it is what the same broker takes from a bare franz-go
// producer of already encoded values of the same size: the broker's own limit.
func BenchmarkKafkaThroughput(b *testing.B) {
	k := kfaketest.Start(b, 3, 4)
	cfg := kafkaConfig(k.Brokers)
	cfg.Kafka.Queue = 1 << 16
	s, err := export.NewKafka(cfg, export.KafkaDeps{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	proc := s.Reports()
	reps := make([]telemetry.Report, 1000)
	for i := range reps {
		reps[i] = kafkaReport(i%200, i)
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		proc.Process(0, &reps[i%len(reps)])
		if i%4096 == 4095 {
			for s.Counts().Queued > 1<<15 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	if err := s.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	c := s.Counts()
	if c.Sent["report"] != uint64(b.N) {
		b.Fatalf("sent %d of %d: %v", c.Sent["report"], b.N, c.Dropped["report"])
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
}

func BenchmarkKafkaBrokerLimit(b *testing.B) {
	k := kfaketest.Start(b, 3, 4)
	r := kafkaReport(1, 1)
	value, err := proto.Marshal(&kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion,
		Body: &kafkapb.Message_Report{Report: export.ReportItemMessage(&r)}})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 200)
	for f := range keys {
		r := kafkaReport(f, 0)
		keys[f] = export.AppendFlowKey(nil, &r.Flow)
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
func startKafka(t *testing.T, cfg export.Config, deps export.KafkaDeps) *export.KafkaSink {
	t.Helper()
	s, err := export.NewKafka(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func stopKafka(t *testing.T, s *export.KafkaSink) export.KafkaCounts {
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
			s := startKafka(t, cfg, export.KafkaDeps{Workers: 1})
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
		m := export.ReportItemMessage(&r)
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
	fm, rm := export.RecordMessage(&rec), export.ReportItemMessage(&r)
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
		s, err := export.NewKafka(kafkaConfig(k.Brokers), export.KafkaDeps{Workers: 1})
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
		s, _ = export.NewKafka(cfg, export.KafkaDeps{Workers: 1})
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
		s := startKafka(t, cfg, export.KafkaDeps{Workers: 1})
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
		s, _ := export.NewKafka(cfg, export.KafkaDeps{Workers: 1})
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
	s := startKafka(t, cfg, export.KafkaDeps{Workers: 1})
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
