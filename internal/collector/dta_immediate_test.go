package collector_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
)

// A DTA report with the immediate flag (DTA §3: notify the collector) raises one immediate
// event, end to end: datagrams over loopback into a running collector, the event read on
// the API's live stream (SSE) and as an event message from Kafka (kfake in its own
// process). A report without the flag, sent first, raises none: the first event on the
// stream and the only one in Kafka is the flagged report's.
func TestDTAImmediateEvent(t *testing.T) {
	k := kfaketest.Start(t, 1, 1)
	cfg, err := config.Parse([]byte("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\n" +
		"http: {address: '127.0.0.1:0'}\ndta:\n  data_dir: " + t.TempDir() + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Export.Kafka.Brokers = k.Brokers
	start := time.Now().UnixNano()
	c := collectortest.Run(t, cfg)

	resp, err := http.Get("http://" + c.API.Addr() + "/api/v1/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := bufio.NewReader(resp.Body)
	if l, _ := stream.ReadString('\n'); l != ": intake event stream\n" {
		t.Fatalf("stream: %q", l)
	}

	send := collectortest.ReportSender(t, c.Receiver.ListenerAddr(0), cfg.Decoder)
	report := func(key uint32, immediate bool) telemetry.Report {
		r := collectortest.DTAReport(telemetry.DTAKeyWrite)
		r.DTA.Redundancy, r.DTA.KeyLen, r.DTA.DataLen, r.DTA.Immediate = 2, 4, 4, immediate
		binary.BigEndian.PutUint32(r.DTA.Key[:], key)
		binary.BigEndian.PutUint32(r.DTA.Data[:], 0x01020304)
		return r
	}
	send(report(0x0badcafe, false))
	send(report(0xdeadbeef, true))
	wantValue := dta.Hash64(dta.DefaultSeed, []byte{0xde, 0xad, 0xbe, 0xef})

	// The stream: the first data line is the flagged report's event, exactly.
	done := make(chan string, 1)
	go func() {
		for {
			l, err := stream.ReadString('\n')
			if err != nil || strings.HasPrefix(l, "data: ") {
				done <- strings.TrimPrefix(l, "data: ")
				return
			}
		}
	}()
	var line string
	select {
	case line = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the stream in 10 s")
	}
	var got detect.EventJSON
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatalf("%v: %q", err, line)
	}
	end := time.Now().UnixNano()
	if got.TimeNS < start || got.TimeNS > end {
		t.Errorf("time_ns %d, not between %d and %d", got.TimeNS, start, end)
	}
	if got.Kind != "immediate" || got.Scope != "flow" || got.Measurement != "" || got.Key != (detect.KeyJSON{}) ||
		got.Prev != uint64(telemetry.DTAKeyWrite) || got.Value != wantValue || got.Threshold != nil || got.Path != nil ||
		got.DevTime != 0 {
		t.Errorf("stream event %s, want kind immediate, scope flow, no measurement or key, prev 1, value %d", line, wantValue)
	}

	// Kafka: exactly one event message, the same event.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events []*kafka.Consumed
	if _, err := (kafka.Consumer{Config: kafka.Config{Brokers: k.Brokers}, Topics: []string{"intake.events"},
		Idle: 3 * time.Second}).Consume(ctx, func(m *kafka.Consumed) error {
		if m.Err != nil {
			t.Fatalf("%s@%d: %v", m.Topic, m.Offset, m.Err)
		}
		events = append(events, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("%d event messages, want 1", len(events))
	}
	e := events[0].Msg.GetEvent()
	if e == nil || e.Kind != "immediate" || e.Scope != "flow" || e.Measurement != "" || e.TimeNs != got.TimeNS ||
		e.Prev != uint64(telemetry.DTAKeyWrite) || e.Value != wantValue || e.Flow != nil || e.Path != nil ||
		e.SwitchId != 0 || e.Threshold != 0 || e.DevTime != 0 {
		t.Errorf("kafka event %v, want the stream's (time_ns %d, prev 1, value %d)", events[0].Msg, got.TimeNS, wantValue)
	}
	if key := events[0].Key; len(key) != 4 || binary.BigEndian.Uint32(key) != 0 {
		t.Errorf("kafka message key %x, want 00000000 (an event without a flow or switch)", key)
	}
}
