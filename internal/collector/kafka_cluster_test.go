package collector

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
)

// memberCaptures generates reports of flows over switches and writes each to the capture
// of the member among n that owns it (partition.ReportOwner), as switches that send by owner
// would.
func memberCaptures(t *testing.T, n int) []*bytes.Buffer {
	t.Helper()
	gc := gen.DefaultConfig()
	gc.Format, gc.Mode, gc.Hops, gc.Flows, gc.Switches = "tr2.0", "md", 4, 64, 8
	g, err := gen.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]*bytes.Buffer, n)
	ws := make([]*pcap.Writer, n)
	for i := range bufs {
		bufs[i] = &bytes.Buffer{}
		if ws[i], err = pcap.NewWriter(bufs[i], pcap.LinkEthernet, pcap.Nanosecond); err != nil {
			t.Fatal(err)
		}
	}
	frame := pcap.UDPFrame{Src: netip.MustParseAddrPort("10.0.3.1:4000"), Dst: netip.MustParseAddrPort("10.0.0.100:32766")}
	var fb []byte
	if err := g.Walk(2000, func(i uint64, b []byte, rs []telemetry.Report) error {
		fb = pcap.AppendUDPFrame(fb[:0], &frame, b)
		return ws[partition.ReportOwner(&rs[0], n)].WritePacket(time.Unix(1_700_000_000, int64(i)*1000), fb)
	}, nil); err != nil {
		t.Fatal(err)
	}
	return bufs
}

// TestKafkaClusterMembers runs two cluster members, each on the reports it owns, into one
// Kafka cluster. A switch's queue or port that flows of both members cross is a new key to
// both: it is announced once by each, and every event says which member it comes from; a
// flow's events come from its owner alone. Each member's stop summary has its Kafka
// counters.
func TestKafkaClusterMembers(t *testing.T) {
	k := kfaketest.Start(t, 3, 4)
	members := []cluster.Member{{Name: "c0", API: "127.0.0.1:1"}, {Name: "c1", API: "127.0.0.1:2"}}
	caps := memberCaptures(t, len(members))
	exported := map[string]uint64{}
	for i, m := range members {
		cfg := testConfig(t) // http.address set, as a member needs; NoHTTP leaves the server out
		cfg.Listeners = []ingest.Listener{{Format: "report", Port: 32766}}
		cfg.Export.Kafka.Brokers = k.Brokers
		cfg.FlowCache.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = false, false, false
		cfg.Cluster.Self, cfg.Cluster.Members = m.Name, members
		c, err := New(cfg, Options{NoHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		rd, err := pcap.NewReader(caps[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.RunCapture(context.Background(), rd); err != nil {
			t.Fatal(err)
		}
		kc := c.Kafka.Counts()
		exported[m.Name] = kc.Sent["event"]
		if kc.Sent["event"] == 0 || kc.Offered["event"] != kc.Sent["event"] {
			t.Fatalf("%s: events offered %d, sent %d", m.Name, kc.Offered["event"], kc.Sent["event"])
		}
		// The stop summary's Kafka part (cmd/intake's TestSummaryText prints it): events and
		// snapshots to their topics, all sent, the flows topic with none, nothing dropped or
		// pending.
		sk := c.Summary().Kafka
		if sk == nil || len(sk.Topics) != 3 || sk.Topics["event"] != "intake.events" || sk.Topics["snapshot"] != "intake.snapshots" ||
			sk.Topics["flow"] != "intake.flows" || sk.Sent["event"] != kc.Sent["event"] || sk.Offered["event"] != kc.Sent["event"] ||
			sk.Sent["snapshot"] != kc.Sent["snapshot"] || sk.Offered["snapshot"] != kc.Sent["snapshot"] || sk.Offered["flow"] != 0 || sk.Sent["flow"] != 0 || sk.Queued != 0 || sk.InFlight != 0 {
			t.Errorf("%s: stop summary's Kafka counts %+v", m.Name, sk)
		} else {
			for _, kind := range []string{"event", "snapshot", "flow"} {
				for why, n := range sk.Dropped[kind] {
					if n != 0 {
						t.Errorf("%s: stop summary: %d %ss dropped (%s)", m.Name, n, kind, why)
					}
				}
			}
		}
	}

	announced := map[string]map[string]int{} // message key and new key → member → times
	got := map[string]uint64{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := (kafka.Consumer{Config: kafka.Config{Brokers: k.Brokers},
		Topics: []string{"intake.events"}, Idle: 3 * time.Second}).Consume(ctx, func(c *kafka.Consumed) error {
		if c.Err != nil {
			return c.Err
		}
		e := c.Msg.GetEvent()
		got[e.GetMember()]++
		if e.GetScope() == "switch" && e.GetKind() == "new_key" {
			id := fmt.Sprintf("%x %s switch=%d port=%d queue=%d buffer=%d reason=%d hw_id=%d", c.Key, e.GetMeasurement(),
				e.GetSwitchId(), e.GetPort(), e.GetQueue(), e.GetBuffer(), e.GetReason(), e.GetHwId())
			if announced[id] == nil {
				announced[id] = map[string]int{}
			}
			announced[id][e.GetMember()]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(exported) {
		t.Errorf("events by member: consumed %v, members sent %v", got, exported)
	}
	both := 0
	for id, by := range announced {
		flow := len(id) > 2*kafka.FlowKeyLen && id[2*kafka.FlowKeyLen] == ' '
		for member, n := range by {
			if n != 1 || (member != "c0" && member != "c1") {
				t.Errorf("%s announced %v, want once by each member that sees it", id, by)
			}
		}
		if flow && len(by) != 1 {
			t.Errorf("flow event %s announced %v, want by its owner alone", id, by)
		}
		if !flow && len(by) == 2 {
			both++
		}
	}
	if both == 0 {
		t.Fatalf("no switch key announced by both members: %v", announced)
	}
	t.Logf("%d new keys, %d of them announced by both members", len(announced), both)
}
