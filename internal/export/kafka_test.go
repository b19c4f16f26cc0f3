package export_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// The Kafka tests run a Kafka-protocol cluster as a process of its own (kfaketest).

func kafkaConfig(brokers []string) config.Export {
	cfg := config.DefaultExport()
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
func consumeAll(t *testing.T, brokers []string, group string, idle time.Duration, topics ...string) []kafka.Consumed {
	t.Helper()
	var got []kafka.Consumed
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := kafka.Consumer{Config: kafka.Config{Brokers: brokers}, Topics: topics,
		Group: group, Idle: idle}.Consume(ctx, func(c *kafka.Consumed) error {
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
			s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2})
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
				if wantMsg := kafka.ReportItemMessage(&r); !proto.Equal(rep, wantMsg) {
					t.Fatalf("report round trip:\n got %v\nwant %v", rep, wantMsg)
				}
				if wantKey := kafka.AppendFlowKey(nil, &r.Flow); string(m.Key) != string(wantKey) {
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
					if !proto.Equal(b.Event, kafka.EventMessage(&e)) {
						t.Fatalf("event round trip: %v", b.Event)
					}
					if string(m.Key) != string(binary.BigEndian.AppendUint32(nil, e.Key.Switch)) {
						t.Fatalf("event key %x", m.Key)
					}
				case *kafkapb.Message_Snapshot:
					e := kafkaEvent(int(b.Snapshot.GetValue()), event.KindPeriodic)
					if !proto.Equal(b.Snapshot, kafka.EventMessage(&e)) {
						t.Fatalf("snapshot round trip: %v", b.Snapshot)
					}
				case *kafkapb.Message_Flow:
					r := kafkaRecord(int(b.Flow.GetFlow().GetSrcPort()) - 1000)
					if !proto.Equal(b.Flow, kafka.RecordMessage(&r)) || b.Flow.GetHops()[0].GetMetrics()[0] != "hop_latency" {
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
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2})
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
			testutil.Eventually(t, 30*time.Second, "a third of the reports sent", func() bool {
				return s.Counts().Sent["report"] >= total/3
			})
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
		t.Fatalf("sent %d of %d; in flight %d, Queued %d", sent, total, c.InFlight, c.Queued)
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
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2})
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
	if proc.(*kafka.Reports).QueueDrops() != d["queue_full"] {
		t.Fatalf("QueueDrops %d, want %d", proc.(*kafka.Reports).QueueDrops(), d["queue_full"])
	}
	// No broker: no event value stored, every one dropped (queue full or at shutdown).
	if vc := export.ValueSink(sink).ValueCounts(); vc.Events != 0 || sumDrops(vc.Dropped) != 100 || vc.Dropped["queue_full"] < 100-10-5-1 {
		t.Fatalf("event values %+v, want 100 dropped, most queue_full", vc)
	}
}

func TestKafkaSampled(t *testing.T) {
	cfg := kafkaConfig([]string{"127.0.0.1:1"})
	cfg.Kafka.Reports, cfg.Kafka.SampleEvery = "sampled", 10
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2})
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
	if s, _ := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2}); s.Reports() != nil {
		t.Fatal("reports off: a processor")
	}
}

func TestKafkaConfigErrors(t *testing.T) {
	for _, c := range []struct {
		set  func(*kafka.Config)
		want string
	}{
		{func(k *kafka.Config) { k.Brokers = []string{"localhost"} }, `kafka.brokers[0]: "localhost": must be host:port`},
		{func(k *kafka.Config) { k.Reports = "all" }, `kafka.reports: "all": must be off, sampled or full`},
		{func(k *kafka.Config) { k.SampleEvery = 0 }, `kafka.sample_every: 0: must be at least 1`},
		{func(k *kafka.Config) { k.Encoding = "avro" }, `kafka.encoding: "avro": must be protobuf or json`},
		{func(k *kafka.Config) { k.Compression = "brotli" }, `kafka.compression: "brotli": must be none, gzip, snappy, lz4 or zstd`},
		{func(k *kafka.Config) { k.Acks = "1" }, `kafka.acks: "1": must be all, leader or none`},
		{func(k *kafka.Config) { k.BatchBytes = 10 }, `kafka.batch_bytes: 10: must be 1024-1073741824`},
		{func(k *kafka.Config) { k.Linger = -1 }, `kafka.linger: -1ns: must be 0 or positive`},
		{func(k *kafka.Config) { k.Queue = 0 }, `kafka.queue: 0: must be 1-4194304`},
		{func(k *kafka.Config) { k.Buffered = 0 }, `kafka.buffered: 0: must be 1-16777216`},
		{func(k *kafka.Config) { k.DeliveryTimeout = 0 }, `kafka.delivery_timeout: 0s: must be at least 1ms`},
		{func(k *kafka.Config) { k.SASL.Mechanism = "GSSAPI" }, `kafka.sasl.mechanism: "GSSAPI": must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{func(k *kafka.Config) { k.SASL.Mechanism = "PLAIN" }, `kafka.sasl.username: "": must be set with kafka.sasl.mechanism PLAIN`},
		{func(k *kafka.Config) { k.SASL.Username = "u" }, `kafka.sasl.mechanism: "": must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with kafka.sasl.username`},
		{func(k *kafka.Config) { k.TLS.CA = "/x" }, `kafka.tls.enabled: false: must be true with the other kafka.tls keys`},
		{func(k *kafka.Config) { k.TLS.Enabled, k.TLS.Cert = true, "/c" }, `kafka.tls.cert: "/c", kafka.tls.key: "": must be set together`},
		{func(k *kafka.Config) { k.TLS.Enabled, k.TLS.CA = true, "/nonexistent" }, `kafka.tls.ca: "/nonexistent": must be a readable PEM file of CA certificates: open /nonexistent: no such file or directory`},
	} {
		cfg := config.DefaultExport()
		cfg.Kafka.Brokers = []string{"127.0.0.1:9092"}
		c.set(&cfg.Kafka)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
	cfg := config.DefaultExport()
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
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 1})
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
