package main

import (
	"context"
	"net"
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
		// Times in RFC 3339, not Unix ns (issue 31).
		want := []string{"intake.events", f[1], f[2], "event", "1970-01-01T00:00:00.00000010" + string(rune('0'+i)) + "Z", "switch", "4", "above", "queue_occupancy", "50" + string(rune('0'+i))}
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
	// The message's time in RFC 3339 under recv_time, not Unix ns under recv_time_ns (issue 31).
	want := `{"topic":"intake.reports","partition":P,"offset":0,"key":"00000009","message":{"report":{"format":"tr2.0","hops":[{}],"hops_total":1,"node_id":9,"recv_time":"1970-01-01T00:00:00.000001234Z","seq":77},"schema_version":1}}`
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
		"report 1970-01-01T00:00:00.000000011Z dta key 0a000001 dta key-write redundancy=2 data=deadbeef",
		"report 1970-01-01T00:00:00.000000014Z dta list 7 dta append data=00000005",
		"report 1970-01-01T00:00:00.000000015Z switch 3 int-label items=2 specific 1:5>6 q=11 lat=3 t=110; 3:1>2 q=31 lat=5 t=310",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant rows\n%s", out, strings.Join(want, "\n"))
	}
	code, out, errb = runVerb("consume", "--brokers", brokers, "--topic", "lab.events", "-n", "1", "--idle", "20s")
	if f := strings.Fields(out); code != 0 || strings.Join(f[len(f)-7:], " ") != "1970-01-01T00:00:00.000000100Z switch 4 above queue_occupancy member=c1 500" {
		t.Errorf("exit %d: %q %s", code, out, errb)
	}
	code, out, _ = runVerb("consume", "--brokers", brokers, "--topic", "lab.events", "-n", "1", "--idle", "20s", "--json")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), ""), `"member":"c1"`) {
		t.Errorf("JSON: exit %d: %q", code, out)
	}
}

// deadAddr is a loopback TCP address nothing listens on (a port taken and released).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// TestConsumeFails: consume says what it connected to, and ends with a clear message and
// exit status within --timeout when it cannot read: a broker that refuses connections, one
// that never answers, a topic the brokers do not have, a kind the configuration turns off.
// Before, it printed its header and waited forever or exited 0.
func TestConsumeFails(t *testing.T) {
	dead := deadAddr(t)
	code, out, errs := runVerb("consume", "--brokers", dead, "--timeout", "5s")
	if want := "intake consume: kafka: no answer from the brokers " + dead + " within 5s: unable to dial: dial tcp " + dead + ": connect: connection refused\n"; code != 1 || out != "" || errs != want {
		t.Errorf("refused: exit %d, %q, %q\nwant %q", code, out, errs, want)
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	code, out, errs = runVerb("consume", "--brokers", silent.Addr().String(), "--timeout", "1s")
	if el := time.Since(start); code != 1 || out != "" || !strings.HasPrefix(errs, "intake consume: kafka: no answer from the brokers "+silent.Addr().String()+" within 1s: ") || el > 5*time.Second {
		t.Errorf("silent: exit %d after %s, %q, %q", code, el, out, errs)
	}

	k := kfaketest.StartTopics(t, 2, 3, "intake.events")
	brokers := strings.Join(k.Brokers, ",")
	code, out, errs = runVerb("consume", "--brokers", brokers, "--topic", "nosuch", "--timeout", "5s")
	if want := `intake consume: kafka: topic "nosuch" does not exist on the brokers ` + brokers + "\n"; code != 1 || out != "" || errs != want {
		t.Errorf("missing topic: exit %d, %q, %q\nwant %q", code, out, errs, want)
	}
	sorted := slices.Clone(k.Brokers)
	slices.Sort(sorted)
	code, out, errs = runVerb("consume", "--brokers", brokers, "--idle", "300ms")
	if want := "intake consume: connected to " + strings.Join(sorted, ",") + " (2 brokers); reading intake.events (3 partitions) every partition from the start, committing nothing\n"; code != 0 || !strings.HasPrefix(out, "TOPIC ") || errs != want {
		t.Errorf("empty topic: exit %d, %q, %q\nwant %q", code, out, errs, want)
	}

	for _, c := range []struct{ yaml, topic, want string }{
		{"", "events", "export.kafka.brokers is empty (the Kafka sink is off)"},
		{"brokers: [" + k.Brokers[0] + "]", "reports", "export.kafka.reports is off"},
		{"brokers: [" + k.Brokers[0] + "], topics: {snapshots: ''}", "snapshots", "export.kafka.topics.snapshots is empty"},
	} {
		cfg := writeFile(t, "intake.yaml", "export:\n  kafka: {"+c.yaml+"}\n")
		code, out, errs := runVerb("consume", "--config", cfg, "--brokers", brokers, "--topic", c.topic)
		if want := "intake consume: --topic " + c.topic + ": " + c.want + " in " + cfg + ": the collector writes no " + c.topic + "\n"; code != 2 || out != "" || errs != want {
			t.Errorf("%s: exit %d, %q, %q\nwant %q", c.yaml, code, out, errs, want)
		}
	}
	cfg := writeFile(t, "intake.yaml", "flowcache: {enabled: false}\nexport:\n  kafka: {brokers: ["+k.Brokers[0]+"]}\n")
	if code, _, errs := runVerb("consume", "--config", cfg, "--topic", "flows"); code != 2 || !strings.Contains(errs, ": flowcache.enabled is false in ") {
		t.Errorf("flows off: exit %d, %q", code, errs)
	}
}
