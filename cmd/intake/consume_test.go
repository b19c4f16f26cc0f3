package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/telemetry"
)

// TestConsume produces three events and a report through the Kafka sink to kfakebroker and
// reads them back with intake consume, as a table and as JSON.
func TestConsume(t *testing.T) {
	k := kfaketest.Start(t, 3, 2)
	cfg := export.DefaultConfig()
	cfg.Kafka.Brokers, cfg.Kafka.Reports = k.Brokers, "full"
	s, err := export.NewKafka(cfg, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e := event.Event{Time: int64(100 + i), Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
			Key: event.Key{Switch: 4}, Value: uint64(500 + i), Threshold: 400}
		s.Events().Offer(&e)
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
