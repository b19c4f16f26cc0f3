package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/telemetry"
)

// TestConsume produces three events and a report through the Kafka sink to kfakebroker and
// reads them back with intake consume, as a table and as JSON.
func TestConsume(t *testing.T) {
	k := kfaketest.Start(t, 3, 2)
	cfg := config.DefaultExport()
	cfg.Kafka.Brokers, cfg.Kafka.Reports = k.Brokers, "full"
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := event.Event{Time: int64(100 + i), Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
			Key: event.Key{Switch: 4}, Value: uint64(500 + i), Threshold: 400}
		s.Offer(&e)
	}
	r := telemetry.Report{Format: telemetry.FormatTR20, NodeID: 9, Seq: 77, RecvTime: 1234, NHops: 1}
	s.Reports().Process(0, &r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(k.Brokers, ",")

	code, out, errb := runVerb("consume", "--brokers", brokers, "--topic", "events", "-n", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TOPIC") {
		t.Fatalf("table:\n%s", out)
	}
	// The three events share a key (switch 4): one partition, in order.
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		want := []string{"intake.events", f[1], f[2], "event", "10" + string(rune('0'+i)), "switch", "4", "above", "queue_occupancy", "50" + string(rune('0'+i))}
		if strings.Join(f, " ") != strings.Join(want, " ") || f[2] != string(rune('0'+i)) {
			t.Errorf("line %d: %q, want %q (offset %d)", i, strings.Join(f, " "), strings.Join(want, " "), i)
		}
	}

	// -n 1 ends the read at the report; --idle only bounds a read that gets nothing (a
	// group's join and first fetch can take seconds on a loaded machine).
	code, out, errb = runVerb("consume", "--brokers", brokers, "--topic", "reports", "--group", "g", "-n", "1", "--idle", "20s", "--json")
	if code != 0 || !strings.Contains(out, `"partition":`) {
		t.Fatalf("exit %d: %q %s", code, out, errb)
	}
	want := `{"topic":"intake.reports","partition":P,"offset":0,"key":"00000009","message":{"schema_version":1,"report":{"recv_time_ns":"1234","format":"tr2.0","node_id":9,"seq":77,"hops":[{}],"hops_total":1}}}`
	got := strings.TrimSpace(strings.Join(strings.Fields(out), ""))
	p := strings.Index(got, `"partition":`) + len(`"partition":`)
	got = got[:p] + "P" + got[p+1:]
	if got != want {
		t.Fatalf("JSON:\n%s\nwant\n%s", got, want)
	}
	// The group committed: nothing is left for it.
	if code, out, _ := runVerb("consume", "--brokers", brokers, "--topic", "reports", "--group", "g", "--idle", "2s", "--json"); code != 0 || out != "" {
		t.Fatalf("second read of the group: exit %d, %q", code, out)
	}
	if code, _, errb := runVerb("consume"); code != 2 || !strings.Contains(errb, "no brokers") {
		t.Fatalf("without brokers: exit %d, %q", code, errb)
	}
}

// TestConsumeContent: intake consume prints what DTA reports and INT-label exports carry,
// and the member of a cluster's events, from topics the sink created.
func TestConsumeContent(t *testing.T) {
	k := kfaketest.StartTopics(t, 1, 2)
	cfg := config.DefaultExport()
	cfg.Kafka.Brokers, cfg.Kafka.Reports, cfg.Kafka.CreateTopics = k.Brokers, "full", true
	cfg.Kafka.Topics = kafka.Topics{Reports: "lab.reports", Events: "lab.events"}
	s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: 1, Member: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	kw := telemetry.Report{Format: telemetry.FormatDTA, RecvTime: 11,
		DTA: telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 2, KeyLen: 4, DataLen: 4}}
	copy(kw.DTA.Key[:], []byte{10, 0, 0, 1})
	copy(kw.DTA.Data[:], []byte{0xde, 0xad, 0xbe, 0xef})
	ap := telemetry.Report{Format: telemetry.FormatDTA, RecvTime: 14,
		DTA: telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 7, DataLen: 4}}
	copy(ap.DTA.Data[:], []byte{0, 0, 0, 5})
	lb := telemetry.Report{Format: telemetry.FormatLabel, RecvTime: 15, LabelSpecific: true, NLabels: 2}
	lb.Labels[0] = telemetry.LabelItem{SwitchID: 3, IngressPort: 1, EgressPort: 2, EgressTS: 310, DeqTimedelta: 5, DeqQDepth: 31}
	lb.Labels[1] = telemetry.LabelItem{SwitchID: 1, IngressPort: 5, EgressPort: 6, EgressTS: 110, DeqTimedelta: 3, DeqQDepth: 11}
	for _, r := range []*telemetry.Report{&kw, &ap, &lb} {
		s.Reports().Process(0, r)
	}
	e := event.Event{Time: 100, Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
		Key: event.Key{Switch: 4}, Value: 500, Threshold: 400}
	s.Offer(&e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(k.Brokers, ",")
	code, out, errb := runVerb("consume", "--brokers", brokers, "--topic", "lab.reports", "-n", "3", "--idle", "20s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		rows = append(rows, strings.Join(strings.Fields(l)[3:], " ")) // without topic, partition, offset
	}
	slices.Sort(rows)
	want := []string{
		"report 11 dta key 0a000001 dta key-write redundancy=2 data=deadbeef",
		"report 14 dta list 7 dta append data=00000005",
		"report 15 switch 3 int-label items=2 specific 1:5>6 q=11 lat=3 t=110; 3:1>2 q=31 lat=5 t=310",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant rows\n%s", out, strings.Join(want, "\n"))
	}
	code, out, errb = runVerb("consume", "--brokers", brokers, "--topic", "lab.events", "-n", "1", "--idle", "20s")
	if f := strings.Fields(out); code != 0 || strings.Join(f[len(f)-7:], " ") != "100 switch 4 above queue_occupancy member=c1 500" {
		t.Errorf("exit %d: %q %s", code, out, errb)
	}
	code, out, _ = runVerb("consume", "--brokers", brokers, "--topic", "lab.events", "-n", "1", "--idle", "20s", "--json")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), ""), `"member":"c1"`) {
		t.Errorf("JSON: exit %d: %q", code, out)
	}
}
