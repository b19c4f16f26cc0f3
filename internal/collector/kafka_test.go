package collector

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
)

// TestKafka runs generated reports through a collector whose export.kafka points at three
// brokers (kfakebroker, a process of its own): every decoded report, every event the
// pipeline exported and every evicted flow record is acknowledged, and a consumer group
// reads exactly those back.
func TestKafka(t *testing.T) {
	k := kfaketest.Start(t, 3, 4)
	cfg := testConfig(t)
	cfg.HTTP.Address = ""
	cfg.Listeners = []ingest.Listener{{Format: "report", Port: 32766}}
	cfg.Export.Kafka.Brokers = k.Brokers
	cfg.Export.Kafka.Reports = "full"
	cfg.Export.Kafka.Queue = 1 << 16
	cfg.FlowCache.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = true, false, false
	cfg.FlowCache.Rows, cfg.FlowCache.Buckets = 2, 4 // 64 flows in 8 places: evictions
	c, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range c.all() {
		names = append(names, x.Name())
	}
	if got, want := strings.Join(names, " "), "kafka export detect flowcache history ingest"; got != want {
		t.Fatalf("start order %q, want %q", got, want)
	}

	gc := gen.DefaultConfig()
	gc.Format, gc.Mode, gc.Hops, gc.Flows, gc.Switches = "tr2.0", "md", 4, 64, 8
	g, err := gen.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	frame := pcap.UDPFrame{Src: netip.MustParseAddrPort("10.0.3.1:4000"), Dst: netip.MustParseAddrPort("10.0.0.100:32766")}
	var fb []byte
	reports := 0
	if err := g.Walk(3000, func(i uint64, b []byte, rs []telemetry.Report) error {
		reports += len(rs)
		fb = pcap.AppendUDPFrame(fb[:0], &frame, b)
		return w.WritePacket(time.Unix(1_700_000_000, int64(i)*1000), fb)
	}, nil); err != nil {
		t.Fatal(err)
	}
	rd, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunCapture(context.Background(), rd); err != nil {
		t.Fatal(err)
	}
	kc := c.Kafka.Counts()
	events, _ := c.Export.Offered()
	want := map[string]uint64{"report": uint64(reports), "event": events, "flow": kc.Offered["flow"]}
	if c.Status().ReportsDecoded != uint64(reports) || events == 0 || kc.Offered["flow"] == 0 {
		t.Fatalf("decoded %d of %d reports, %d events, %d flow records", c.Status().ReportsDecoded, reports, events, kc.Offered["flow"])
	}
	for kind, n := range want {
		if kc.Offered[kind] != n || kc.Sent[kind] != n {
			t.Errorf("%s: offered %d, sent %d, want %d (dropped %v)", kind, kc.Offered[kind], kc.Sent[kind], n, kc.Dropped[kind])
		}
	}
	d := c.Drops()
	if k := d.Sections["kafka"]; k == nil || k["flow.failed"] != 0 || d.Sections["export"]["kafka.queue_full"] != 0 {
		t.Errorf("drops %+v", d)
	}
	got := map[string]uint64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := (kafka.Consumer{Config: kafka.Config{Brokers: k.Brokers},
		Topics: []string{"intake.reports", "intake.events", "intake.flows"}, Group: "check", Idle: 3 * time.Second}).Consume(ctx,
		func(m *kafka.Consumed) error {
			if m.Err != nil {
				t.Fatalf("%s@%d: %v", m.Topic, m.Offset, m.Err)
			}
			got[strings.TrimSuffix(strings.TrimPrefix(m.Topic, "intake."), "s")]++
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	for kind, n := range want {
		if got[kind] != n {
			t.Errorf("consumed %d %s messages, want %d", got[kind], kind, n)
		}
	}
}
