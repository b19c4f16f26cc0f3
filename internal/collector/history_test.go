package collector_test

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/history"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
)

// historyPeriod is the tests' history period. The tests take the samples themselves, at
// the ends of periods far in the future (History.Sample), with reports stamped inside
// them: exact whatever the machine's load; the ticker's first sample is an hour away.
const historyPeriod = time.Hour

// historyConfig has the flow cache and the detector, and a history of 5 periods.
func historyConfig(cfg *config.Config) {
	cfg.DTA.Enabled, cfg.Label.Enabled = false, false
	cfg.FlowCache.Rows, cfg.FlowCache.Buckets = 16, 4
	cfg.History.Period, cfg.History.Retention = historyPeriod, 5*historyPeriod
}

// historyClock is the tests' periods: start is the current period's start, ten thousand
// periods from now.
type historyClock struct{ start int64 }

func newHistoryClock() *historyClock {
	p := int64(historyPeriod)
	return &historyClock{start: (time.Now().UnixNano()/p + 10000) * p}
}

// next ends the current period: every collector in cs samples it. It returns its time.
func (hc *historyClock) next(cs ...*collector.Collector) int64 {
	hc.start += int64(historyPeriod)
	for _, c := range cs {
		c.History.Sample(hc.start)
	}
	return hc.start
}

// feed has c process reports at once, in the current period (the flow cache and the
// detector, when on, flushed).
func (hc *historyClock) feed(c *collector.Collector, rs ...*telemetry.Report) {
	for i, r := range rs {
		r.RecvTime = hc.start + int64(i) + 1
		c.FlowCache.Process(0, r)
		if c.Detector != nil {
			c.Detector.Process(0, r)
		}
	}
	c.FlowCache.Flush(0)
	if c.Detector != nil {
		c.Detector.Flush(0)
	}
}

// dropReport is a dropped-packet report from node.
func dropReport(node uint32) *telemetry.Report {
	return &telemetry.Report{Has: telemetry.HasNodeID, NodeID: node, Flags: telemetry.FlagDrop}
}

func historyGet(t *testing.T, addr, q string) history.JSON {
	t.Helper()
	code, body := get(t, addr, "/api/v1/history?"+q)
	var h history.JSON
	if err := json.Unmarshal([]byte(body), &h); code != 200 || err != nil {
		t.Fatalf("%s: %d %s %v", q, code, body, err)
	}
	return h
}

var (
	flow1 = history.FlowKeyJSON{Src: "10.0.0.1", Dst: "10.0.0.2", Sport: 1000, Dport: 80, Proto: 17}
	flow2 = history.FlowKeyJSON{Src: "10.0.0.1", Dst: "10.0.0.2", Sport: 2000, Dport: 80, Proto: 17}
)

// TestHistory: a collector fed known reports over several periods answers exact points per
// switch and per flow, each at the end of its period; range, from/to and the switch and
// flow filters select them; the oldest period goes once the retention is full, and a
// restarted history is empty.
func TestHistory(t *testing.T) {
	c := collectortest.Start(t, historyConfig)
	addr := c.API.Addr()
	hc := newHistoryClock()
	next := func() int64 { return hc.next(c) }
	feed := func(rs ...*telemetry.Report) { hc.feed(c, rs...) }
	next() // a period with nothing in it
	// Period A: flow 1 over switches 1 > 2, twice (end-to-end latency 30 then 70).
	feed(collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 10, 5, 7}, collectortest.FlowHop{2, 20, 0, 8}),
		collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 30, 6, 7}, collectortest.FlowHop{2, 40, 3, 9}))
	ta := next()
	// Period B: flow 1 once more (110), flow 2 over 1 > 3 three times (300), and two drop
	// reports from switch 2.
	feed(collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 50, 2, 7}, collectortest.FlowHop{2, 60, 1, 1}))
	for range 3 {
		feed(collectortest.FlowReport(2000, 0, collectortest.FlowHop{1, 100, 9, 2}, collectortest.FlowHop{3, 200, 4, 4}))
	}
	feed(dropReport(2), dropReport(2))
	tb := next()
	next() // period C: nothing
	if ta%int64(historyPeriod) != 0 || tb != ta+int64(historyPeriod) {
		t.Fatalf("sample times %d, %d: want consecutive multiples of %v", ta, tb, historyPeriod)
	}

	type sp = history.SwitchPointJSON
	type fp = history.FlowPointJSON
	sw1 := history.SwitchJSON{SwitchID: 1, Points: []sp{
		{TNS: ta, HopLatencyMeanNS: 30, HopLatencyMaxNS: 30, QueueOccupancyMax: 6, TxUtilizationMax: 7, Reports: 2, Flows: 1},
		{TNS: tb, HopLatencyMeanNS: 75, HopLatencyMaxNS: 100, QueueOccupancyMax: 9, TxUtilizationMax: 7, Reports: 4, Flows: 2}}}
	sw2 := history.SwitchJSON{SwitchID: 2, Points: []sp{
		{TNS: ta, HopLatencyMeanNS: 40, HopLatencyMaxNS: 40, QueueOccupancyMax: 3, TxUtilizationMax: 9, Reports: 2, Flows: 1},
		{TNS: tb, HopLatencyMeanNS: 60, HopLatencyMaxNS: 60, QueueOccupancyMax: 1, TxUtilizationMax: 1, Reports: 1, Drops: 2, Flows: 1}}}
	sw3 := history.SwitchJSON{SwitchID: 3, Points: []sp{
		{TNS: tb, HopLatencyMeanNS: 200, HopLatencyMaxNS: 200, QueueOccupancyMax: 4, TxUtilizationMax: 4, Reports: 3, Flows: 1}}}
	f1 := history.FlowJSON{Flow: flow1, Text: "10.0.0.1:1000 > 10.0.0.2:80 udp", Points: []fp{
		{TNS: ta, LatencyMeanNS: 50, LatencyLatestNS: 70, Packets: 2},
		{TNS: tb, LatencyMeanNS: 110, LatencyLatestNS: 110, Packets: 1}}}
	f2 := history.FlowJSON{Flow: flow2, Text: "10.0.0.1:2000 > 10.0.0.2:80 udp", Points: []fp{
		{TNS: tb, LatencyMeanNS: 300, LatencyLatestNS: 300, Packets: 3}}}

	all := "from=0&to=" + strconv.FormatInt(tb+1, 10)
	for q, want := range map[string]history.JSON{
		all: {Switches: []history.SwitchJSON{sw1, sw2, sw3}, Flows: []history.FlowJSON{f1, f2}},
		// Equal reports over the range: by text.
		"from=" + strconv.FormatInt(tb, 10) + "&to=" + strconv.FormatInt(tb, 10): {
			Switches: []history.SwitchJSON{{SwitchID: 1, Points: sw1.Points[1:]}, {SwitchID: 2, Points: sw2.Points[1:]}, sw3},
			Flows:    []history.FlowJSON{f2, {Flow: flow1, Text: f1.Text, Points: f1.Points[1:]}}},
		"from=0&to=" + strconv.FormatInt(ta, 10): {
			Switches: []history.SwitchJSON{{SwitchID: 1, Points: sw1.Points[:1]}, {SwitchID: 2, Points: sw2.Points[:1]}},
			Flows:    []history.FlowJSON{{Flow: flow1, Text: f1.Text, Points: f1.Points[:1]}}},
		all + "&switch=2": {Switches: []history.SwitchJSON{sw2}, Flows: []history.FlowJSON{}},
		all + "&flow=" + url.QueryEscape("10.0.0.1:2000 → 10.0.0.2:80 UDP"):       {Switches: []history.SwitchJSON{}, Flows: []history.FlowJSON{f2}},
		all + "&src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=udp&switch=3": {Switches: []history.SwitchJSON{sw3}, Flows: []history.FlowJSON{f1}},
		all + "&switch=9": {Switches: []history.SwitchJSON{}, Flows: []history.FlowJSON{}},
		// flows=N keeps the N with the most reports (3 each here: then by text).
		all + "&flows=1": {Switches: []history.SwitchJSON{sw1, sw2, sw3}, Flows: []history.FlowJSON{f1}},
		all + "&flows=0": {Switches: []history.SwitchJSON{sw1, sw2, sw3}, Flows: []history.FlowJSON{f1, f2}},
	} {
		got := historyGet(t, addr, q)
		want.PeriodNS, want.FromNS, want.ToNS = int64(historyPeriod), got.FromNS, got.ToNS
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Errorf("%s:\n got %s\nwant %s", q, gj, wj)
		}
	}

	// range: back from now, capped at the retention; the default is the retention.
	before := time.Now().UnixNano()
	for q, span := range map[string]time.Duration{"": 5 * historyPeriod, "range=24h": 5 * historyPeriod, "range=300ms": 300 * time.Millisecond} {
		got := historyGet(t, addr, q)
		if got.ToNS < before || got.ToNS > time.Now().UnixNano() || got.ToNS-got.FromNS != int64(span) {
			t.Errorf("%q: from %d to %d, want %v up to now", q, got.FromNS, got.ToNS, span)
		}
	}
	for q, want := range map[string]string{
		"range=soon":  `{"error":"parameter range: \"soon\": must be a positive duration such as 15m (at most history.retention, 5h0m0s)","param":"range","value":"soon"}`,
		"from=x":      `{"error":"parameter from: \"x\": must be a time in Unix nanoseconds","param":"from","value":"x"}`,
		"from=5&to=4": `{"error":"parameter from: \"5\": must be at most to (4)","param":"from","value":"5"}`,
		"flows=-1":    `{"error":"parameter flows: \"-1\": must be the number of flows to keep, 0 (all) or more","param":"flows","value":"-1"}`,
		"switch=-1":   `{"error":"parameter switch: \"-1\": must be a switch id 0-4294967295","param":"switch","value":"-1"}`,
		"proto=udp":   `{"error":"parameter src: \"\": must be an IPv4 or IPv6 address","param":"src"}`,
		"flow=nope":   `{"error":"parameter flow: \"nope\": must be a flow \"SRC:SPORT \u003e DST:DPORT PROTO\" (\"\u003e\", \"-\u003e\" or \"→\"; PROTO tcp, udp, icmp, icmpv6, sctp or 0-255) or src,dst,sport,dport,proto","param":"flow","value":"nope"}`,
		"n=1":         `{"error":"unknown parameter n (allowed: range, from, to, switch, flows, src, dst, sport, dport, proto, flow)","param":"n","value":"1"}`,
	} {
		code, body := get(t, addr, "/api/v1/history?"+q)
		var v any
		json.Unmarshal([]byte(body), &v)
		b, _ := json.Marshal(v)
		if code != 400 || string(b) != want {
			t.Errorf("%s: %d %s\nwant 400 %s", q, code, b, want)
		}
	}

	// Retention: 5 periods (empty ones count). Three more (6 after the empty first) and
	// period A is gone, B still there.
	for range 3 {
		next()
	}
	got := historyGet(t, addr, all)
	if len(got.Switches) != 3 || len(got.Switches[0].Points) != 1 || got.Switches[0].Points[0].TNS != tb || len(got.Flows) != 2 || got.Flows[0].Flow != flow2 {
		t.Errorf("after the retention: %+v", got)
	}

	// A restart starts empty.
	if err := c.History.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.History.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := historyGet(t, addr, all); len(got.Switches) != 0 || len(got.Flows) != 0 || c.History.Newest() != 0 {
		t.Errorf("after a restart: %+v", got)
	}
}

// TestHistoryTicks: the history samples by itself at every multiple of its period.
func TestHistoryTicks(t *testing.T) {
	const period = 20 * time.Millisecond
	c := collectortest.Start(t, func(cfg *config.Config) {
		historyConfig(cfg)
		cfg.History.Period, cfg.History.Retention = period, 10*period
	})
	testutil.Eventually(t, 5*time.Second, "three samples", func() bool { return c.History.Samples() >= 3 })
	if n := c.History.Newest(); n%int64(period) != 0 || n > time.Now().UnixNano() {
		t.Errorf("newest sample at %d: not a multiple of %v in the past", n, period)
	}
}
