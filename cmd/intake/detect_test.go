package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// serveDetect runs `intake serve` in-process with config text, returns its report listener
// and HTTP addresses, and stops it with SIGTERM at the test's end.
func serveDetect(t *testing.T, config string) (trAddr, httpAddr string) {
	t.Helper()
	cfg := writeFile(t, "serve.yaml", config)
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"serve", "--config", cfg}, &out, &errb) }()
	trAddr, httpAddr = serveReady(t, &errb, 10*time.Second)
	t.Cleanup(func() {
		sigterm()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop on SIGTERM")
		}
	})
	return trAddr, httpAddr
}

// receive-time stamps differ from run to run: the tests compare everything else exactly.
var (
	rfcTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	nsTime  = regexp.MustCompile(`"(time_ns)": \d+`)
)

func untime(s string) string {
	return nsTime.ReplaceAllString(rfcTime.ReplaceAllString(s, "TIME"), `"$1": NS`)
}

// TestQueryEventsAndFlow: two TR v2.0 reports over loopback into `intake serve` with the
// detector's defaults (T(m) = 50, drops and seq_gaps 0), then `intake query events` and
// `intake query flow`, in text and --json, and their errors.
func TestQueryEventsAndFlow(t *testing.T) {
	trAddr, httpAddr := serveDetect(t, serveTR)
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", trAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(r telemetry.Report) {
		b, err := enc.Append(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(b)
	}
	// waitEvents polls until the log holds n events, so each report is in before the next.
	waitEvents := func(n int) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("%d events in query events", n), func() bool {
			_, out, _ := runVerb("query", "events", "--api", httpAddr, "--json")
			return strings.Count(out, `"seq":`) == n
		})
	}
	// Report 1: path 1:2:3, every hop latency 1000, queue occupancy 40, tx utilization 55
	// (serve_test.go's trReport), sequence 1 of (node 5, hw_id 1).
	send(collectortest.TRReport())
	waitEvents(12) // seq_gaps; (queue, port) of 3 switches; path, flow latency, 3 hop latencies
	// Report 2: switch 2's hop latency 1100 (|Δ| 100 > 50), sequence 3 (one report missing).
	r := collectortest.TRReport()
	r.Seq = 3
	r.Hops[1].HopLatency = 1100
	send(r)
	waitEvents(15) // + seq_gaps 0→1, flow latency 3000→3100, switch 2's hop latency

	code, out, errs := runVerb("query", "events", "--api", httpAddr)
	// Latencies with their unit (issue 31: raw ns before).
	want := `TIME                            KIND     SCOPE   MEASUREMENT       KEY                                          PREV     VALUE      THRESHOLD
TIME  new_key  switch  seq_gaps          switch 5, hw_id 1                            0        0          -
TIME  new_key  switch  queue_occupancy   switch 3, queue 3                            0        40         -
TIME  new_key  switch  tx_utilization    switch 3, port 2                             0        55         -
TIME  new_key  switch  queue_occupancy   switch 2, queue 3                            0        40         -
TIME  new_key  switch  tx_utilization    switch 2, port 2                             0        55         -
TIME  new_key  switch  queue_occupancy   switch 1, queue 3                            0        40         -
TIME  new_key  switch  tx_utilization    switch 1, port 2                             0        55         -
TIME  new_key  e2e     flow_path         10.0.0.1:40000 > 10.0.1.2:443 udp            -        1 > 2 > 3  -
TIME  new_key  e2e     flow_latency      10.0.0.1:40000 > 10.0.1.2:443 udp            0 ns     3.00 µs    -
TIME  new_key  switch  flow_hop_latency  10.0.0.1:40000 > 10.0.1.2:443 udp, switch 1  0 ns     1.00 µs    -
TIME  new_key  switch  flow_hop_latency  10.0.0.1:40000 > 10.0.1.2:443 udp, switch 2  0 ns     1.00 µs    -
TIME  new_key  switch  flow_hop_latency  10.0.0.1:40000 > 10.0.1.2:443 udp, switch 3  0 ns     1.00 µs    -
TIME  change   switch  seq_gaps          switch 5, hw_id 1                            0        1          0
TIME  change   e2e     flow_latency      10.0.0.1:40000 > 10.0.1.2:443 udp            3.00 µs  3.10 µs    50 ns
TIME  change   switch  flow_hop_latency  10.0.0.1:40000 > 10.0.1.2:443 udp, switch 2  1.00 µs  1.10 µs    50 ns
15 events
`
	if code != 0 || untime(out) != want {
		t.Errorf("query events: %d %s\n%s\nwant\n%s", code, errs, untime(out), want)
	}

	code, out, errs = runVerb("query", "events", "--api", httpAddr, "--kind", "change", "--limit", "1", "--json")
	want = `{
  "events": [
    {
      "seq": 15,
      "time": "TIME",
      "time_ns": NS,
      "dev_time": 1000001000,
      "kind": "change",
      "scope": "switch",
      "measurement": "flow_hop_latency",
      "key": {
        "src": "10.0.0.1",
        "dst": "10.0.1.2",
        "sport": 40000,
        "dport": 443,
        "proto": 17,
        "switch_id": 2
      },
      "prev": 1000,
      "value": 1100,
      "threshold": 50
    }
  ]
}
`
	if code != 0 || untime(out) != want {
		t.Errorf("query events --kind change --limit 1 --json: %d %s\n%s", code, errs, untime(out))
	}

	flow := []string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1", "--dst", "10.0.1.2", "--sport", "40000", "--dport", "443", "--proto", "17"}
	code, out, errs = runVerb(flow...)
	want = `flow     10.0.0.1:40000 > 10.0.1.2:443 udp
path     1 > 2 > 3 (3 hops, source first)
latency  3.10 µs end to end, latest
reports  2, first seen TIME, last seen TIME
HOP  SWITCH  HOP LATENCY latest  SWITCH QUEUE OCCUPANCY max  SWITCH TX UTILIZATION max  SWITCH BUFFER OCCUPANCY max
1    1       1.00 µs             40 (queue 3)                55 (port 2)                -
2    2       1.10 µs             40 (queue 3)                55 (port 2)                -
3    3       1.00 µs             40 (queue 3)                55 (port 2)                -
SWITCH ... max: the largest latest value of the switch's queues, ports, buffers, from any flow (each: --json)
`
	if code != 0 || untime(out) != want {
		t.Errorf("query flow: %d %s\n%s\nwant\n%s", code, errs, untime(out), want)
	}
	code, out, _ = runVerb(append(flow, "--json")...)
	if code != 0 || !strings.Contains(out, "\n  \"path\": [\n    1,\n    2,\n    3\n  ],\n  \"path_len\": 3,\n  \"flow_latency\": 3100,\n") {
		t.Errorf("query flow --json: %d\n%s", code, out)
	}

	// Reduction accounting: 24 values seen (12 a report: seq_gaps, 3 queues, 3 ports, path,
	// flow latency, 3 hop latencies), 15 offered to the sinks as events, none periodic
	// (period 0). The one sink, the Prometheus gauges, stores 14 of them: a path has no
	// gauge, so the path's event was never stored anywhere and is not exported (before, the
	// 15 offered were counted exported, and the factor was 1.6). The event log reads the bus
	// on its own: wait until the pipeline has all 15 too.
	want = `{
  "detect": {
    "reports": 2,
    "values": 24,
    "events": {
      "above": 0,
      "below": 0,
      "change": 3,
      "new_key": 12,
      "path_change": 0
    },
    "flows": 1,
    "keys": 7,
    "evicted_flows": 0,
    "evicted_keys": 0,
    "expired": 0,
    "streams": {
      "open": 0,
      "max": 8,
      "opened": 0,
      "refused": 0,
      "dropped": {
        "behind": 0,
        "slow": 0
      }
    }
  },
  "export": {
    "values": 24,
    "exported_events": 14,
    "exported_periodic": 0,
    "reduction_factor": 1.7142857142857142,
    "offered_events": 15,
    "offered_periodic": 0,
    "ring_overflow": 0,
    "sinks": [
      {
        "name": "prometheus",
        "sent": 14,
        "retried": 0,
        "dropped": {
          "series_limit": 0
        },
        "queued": 0,
        "exported_events": 14,
        "exported_periodic": 0,
        "dropped_values": {
          "series_limit": 0
        },
        "reduction_factor": 1.7142857142857142
      }
    ]
  }
}
`
	var body string
	defer func() {
		if body != want {
			t.Errorf("/api/v1/detect/status:\n%s\nwant\n%s", body, want)
		}
	}()
	testutil.Eventually(t, 5*time.Second, "the detector's status", func() bool {
		body = httpGet(t, "http://"+httpAddr+"/api/v1/detect/status")
		return body == want
	})
	metricsText := httpGet(t, "http://"+httpAddr+"/metrics")
	for _, line := range []string{
		"intake_detect_values_total 24\n",
		"intake_export_values_total{source=\"event\"} 14\n",
		"intake_export_values_total{source=\"periodic\"} 0\n",
		"intake_export_offered_values_total{source=\"event\"} 15\n",
		"intake_export_sink_values_total{sink=\"prometheus\",source=\"event\"} 14\n",
		"intake_export_reduction_factor 1.7142857142857142\n",
		// The gauges of the latest values: switch 2's hop latency is 1100.
		"intake_flow_hop_latency{dport=\"443\",dst=\"10.0.1.2\",proto=\"17\",sport=\"40000\",src=\"10.0.0.1\",switch_id=\"2\"} 1100\n",
	} {
		if !strings.Contains(metricsText, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1", "--dst", "10.0.1.2", "--sport", "40001", "--dport", "443", "--proto", "17"},
			1, "intake query flow: 404 Not Found: no such flow (unknown, expired or evicted)\n"},
		// The flow as the demo and the queries write it, the same flow as flags.
		{[]string{"query", "flow", "--api", httpAddr, "10.0.0.1:40001 > 10.0.1.2:443 udp"},
			1, "intake query flow: 404 Not Found: no such flow (unknown, expired or evicted)\n"},
		{[]string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1", "--dst", "::1", "--sport", "1", "--dport", "2", "--proto", "udp"},
			2, "intake query flow: 400 Bad Request: parameter src: \"10.0.0.1,::1\": must be IPv4 or IPv6 addresses of one family for src and dst\n"},
		{[]string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1"}, 2,
			"intake query flow: the flow is required: \"SRC:SPORT > DST:DPORT PROTO\", or --src, --dst, --sport, --dport and --proto\n"},
		// Without ports a flow is not a flow: a usage error, not a 404.
		{[]string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1", "--dst", "10.0.1.2", "--proto", "udp"}, 2,
			"intake query flow: --sport, --dport and --proto are required with --src and --dst (a flow is its 5-tuple)\n"},
		{[]string{"query", "flow", "--api", httpAddr, "10.0.0.1 > 10.0.1.2 udp"}, 2,
			"intake query flow: \"10.0.0.1 > 10.0.1.2 udp\": a 5-tuple is \"SRC:SPORT > DST:DPORT PROTO\" or src,dst,sport,dport,proto, with addresses of one family\n"},
		{[]string{"query", "flow", "--api", httpAddr, "--json", "--table", "10.0.0.1:1 > 10.0.1.2:2 udp"}, 2,
			"intake query flow: --json and --table exclude each other\n"},
		{[]string{"query", "flow", "--api", httpAddr, "--src", "10.0.0.1", "--dst", "10.0.1.2", "--sport", "1", "--dport", "2", "--proto", "gre"}, 2,
			"intake query flow: invalid value \"gre\" for flag -proto: protocol \"gre\": want tcp, udp, icmp, icmpv6, sctp or a number 0-255\n"},
		// The collector's 400, the user's misuse: exit 2 as for every misuse.
		{[]string{"query", "events", "--api", httpAddr, "--kind", "bogus"},
			2, "intake query events: 400 Bad Request: parameter kind: \"bogus\": must be a comma-separated list of new_key, path_change, change, above, below, expire, immediate\n"},
		{[]string{"query", "events", "--api", httpAddr, "--since", "soon"},
			2, "intake query events: 400 Bad Request: parameter since: \"soon\": must be an RFC 3339 time, Unix nanoseconds, or a duration such as 5m\n"},
	} {
		code, _, errs := runVerb(tc.args...)
		if code != tc.code || errs != tc.want {
			t.Errorf("%v: %d %q, want %d %q", tc.args[1:], code, errs, tc.code, tc.want)
		}
	}
}

// TestDetectConfigErrors: detect.change.<measurement> and detect.above.<measurement> with
// an unknown measurement, a measurement without a numeric value, or a bad value stop
// `serve --check` with the key, the value and what is allowed.
func TestDetectConfigErrors(t *testing.T) {
	const allowed = "(allowed: flow_latency, flow_hop_latency, queue_occupancy, queue_congestion, tx_utilization, buffer_occupancy, drops, seq_gaps)"
	for _, tc := range []struct{ yaml, want string }{
		{"detect:\n  change: {hop_latency: 5}\n", "detect.change.hop_latency: unknown measurement " + allowed},
		{"detect:\n  above: {queue_depth: 5}\n", "detect.above.queue_depth: unknown measurement " + allowed},
		{"detect:\n  above: {flow_path: 1}\n", "detect.above.flow_path: a path has no numeric value to compare " + allowed},
		{"detect:\n  change: {flow_latency: -1}\n", "detect.change.flow_latency: -1: must be a non-negative integer, or null or off (no such rule)"},
		{"detect:\n  above: {tx_utilization: high}\n", "detect.above.tx_utilization: high: must be a non-negative integer, or null or off (no such rule)"},
		{"detect:\n  change: 50\n", "detect.change: 50: must be a mapping of names to a non-negative integer"},
	} {
		p := writeFile(t, "detect.yaml", tc.yaml)
		code, _, errs := runVerb("serve", "--config", p, "--check")
		if want := "intake serve: " + p + ": " + tc.want + "\n"; code != 2 || errs != want { // a config error is misuse (issue 31)
			t.Errorf("%q: %d %q\nwant %q", tc.yaml, code, errs, want)
		}
	}
	// The good ones pass and show in --dump, with the rules that are off said to be.
	p := writeFile(t, "detect.yaml", "detect:\n  change: {flow_latency: 0}\n  above: {queue_occupancy: 1000}\n")
	code, out, errs := runVerb("serve", "--config", p, "--dump")
	if code != 0 || !strings.Contains(out, "        flow_latency: 0\n") ||
		!strings.Contains(out, "    above:\n        buffer_occupancy: \"off\"\n        drops: \"off\"\n        flow_hop_latency: \"off\"\n        flow_latency: \"off\"\n        queue_congestion: \"off\"\n        queue_occupancy: 1000\n") {
		t.Errorf("--dump: %d %s\n%s", code, errs, out)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %s %s", url, err, resp.Status, b)
	}
	return string(b)
}
