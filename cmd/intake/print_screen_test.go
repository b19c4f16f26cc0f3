package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/telemetry"
)

// TestScreenText: the demo's screen, byte for byte, not on a terminal: the final screen's
// rates (none received), the events by kind, the slowest flows (end-to-end latency of the
// last report, slowest first, top 2 of 3: 2.0015 s, 3 µs, not 540 ns) and the slowest
// switches (mean hop latency: switch 1's (2000+40+2e9)/3 ns, switch 2's (1000+500+1.5e6)/3),
// and the source's lines.
func TestScreenText(t *testing.T) {
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTP.Address, cfg.DTA.DataDir = "", t.TempDir()
	c, err := collector.New(cfg, collector.Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	scr, err := newScreen(c, &b, "intake demo", "screen", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer scr.Close()
	now := time.Now().UnixNano()
	for i, lat := range [][]uint32{{1000, 2000}, {500, 40}, {1_500_000, 2_000_000_000}} {
		var r telemetry.Report
		r.Format, r.Has, r.RecvTime = telemetry.FormatTR20, telemetry.HasFlow, now
		r.Flow.SetIPv4([]byte{10, 0, 0, byte(i + 1)}, []byte{172, 16, 0, 1})
		r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(1000+i), 80, 17
		for j, l := range lat {
			h := r.AddHop() // newest first: the last switch of the path
			h.Fields, h.NodeID, h.HopLatency = telemetry.FNodeID|telemetry.FHopLatency, uint32(len(lat)-j), l
		}
		c.FlowCache.Process(0, &r)
	}
	for _, k := range []event.Kind{event.KindNewKey, event.KindNewKey, event.KindChange, event.KindAbove} {
		c.Bus.Publish(&event.Event{Kind: k})
	}
	scr.Final(time.Now().Add(-1000 * time.Hour)) // rates over 1000 h: 0
	scr.Draw(90*time.Second, "off", "fabric: 12 switches\n")
	want := `
intake demo   up 1m30s   http off   (stopped)
reports/s   0           (mean over the run)
received    0 packets, 0 reports   drops: kernel 0, decode errors 0, ingest 0, queues 0
events      new_key 2, path_change 0, change 1, above 1, below 0
flows       3 active in the last 5 s, through 2 switches

slowest flows (end-to-end latency of the last report)
  10.0.0.3:1002 > 172.16.0.1:80 udp                2.00 s   path 1 > 2
  10.0.0.1:1000 > 172.16.0.1:80 udp                3.0 µs   path 1 > 2

slowest hops (hop latency by switch, last second)
  switch 1        mean  666.67 ms   max     2.00 s   3 reports
  switch 2        mean   500.5 µs   max    1.50 ms   3 reports

fabric: 12 switches
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
