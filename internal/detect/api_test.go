package detect

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// apiFixture is a detector with its event log behind the API's endpoints on a test server.
// The log is drained by the test (not by its goroutine), so a GET sees exactly the events
// processed before it.
type apiFixture struct {
	d   *Detector
	log *Log
	srv *httptest.Server
	buf []event.Event
}

func newAPIFixture(t *testing.T, cfg Config) *apiFixture {
	cfg.EventLog, cfg.Ring = 100, 1024
	f := &apiFixture{d: New(cfg, Deps{}), buf: make([]event.Event, 64)}
	srv := api.New("127.0.0.1:0", nil)
	f.d.RegisterAPI(srv)
	f.log = f.d.Log()
	f.srv = httptest.NewServer(srv.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

// process runs reports through the detector and moves the events into the log.
func (f *apiFixture) process(rs ...*telemetry.Report) {
	for _, r := range rs {
		f.d.Process(0, r)
	}
	f.log.Drain(f.buf)
}

func (f *apiFixture) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp.StatusCode, string(b)
}

func (f *apiFixture) expect(t *testing.T, method, path, body string, code int, want string) {
	t.Helper()
	gc, got := f.do(t, method, path, body)
	if gc != code || got != want {
		t.Errorf("%s %s: %d\n%s\nwant %d\n%s", method, path, gc, got, code, want)
	}
}

const sec = int64(time.Second)

// t0 is 2026-01-02T03:04:05Z: report i of the API tests is received at t0 + i s.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()

// The event log as GET /api/v1/events shows it, for one flow over switches 7 and 8 whose
// hop latency at switch 7 goes 100, 151 (change: 51 > 50), 201 (above 200; |201−151| = 50
// is no change).
func TestAPIEvents(t *testing.T) {
	f := newAPIFixture(t, testConfig())
	f.process(
		report(t0, 1000, hop{node: 7, lat: 100}, hop{node: 8, lat: 10}),
		report(t0+1*sec, 1000, hop{node: 7, lat: 151}, hop{node: 8, lat: 10}),
		report(t0+2*sec, 1000, hop{node: 7, lat: 201}, hop{node: 8, lat: 10}),
	)
	flowKey := `"src": "10.0.0.1",
        "dst": "10.0.1.2",
        "sport": 1000,
        "dport": 80,
        "proto": 6`
	ev := func(seq int, at int64, kind, scope, m, key string, prev, value uint64, threshold, path string) string {
		s := fmt.Sprintf(`    {
      "seq": %d,
      "time": %q,
      "time_ns": %d,
      "kind": %q,
      "scope": %q,
      "measurement": %q,
      "key": {
        %s
      },
      "prev": %d,
      "value": %d`, seq, time.Unix(0, at).UTC().Format(time.RFC3339Nano), at, kind, scope, m, key, prev, value)
		if threshold != "" {
			s += ",\n      \"threshold\": " + threshold
		}
		if path != "" {
			s += ",\n      \"path\": [\n        " + strings.ReplaceAll(path, ",", ",\n        ") + "\n      ]"
		}
		return s + "\n    }"
	}
	hopKey := func(sw int) string { return flowKey + fmt.Sprintf(",\n        \"switch_id\": %d", sw) }
	p78 := event.PathHash([]uint32{7, 8})
	all := []string{
		ev(1, t0, "new_key", "e2e", "flow_path", flowKey, 0, p78, "", "7,8"),
		ev(2, t0, "new_key", "e2e", "flow_latency", flowKey, 0, 110, "", ""),
		ev(3, t0, "new_key", "switch", "flow_hop_latency", hopKey(7), 0, 100, "", ""),
		ev(4, t0, "new_key", "switch", "flow_hop_latency", hopKey(8), 0, 10, "", ""),
		ev(5, t0+sec, "change", "switch", "flow_hop_latency", hopKey(7), 100, 151, "50", ""),
		ev(6, t0+2*sec, "above", "switch", "flow_hop_latency", hopKey(7), 151, 201, "200", ""),
	}
	list := func(evs ...string) string {
		if len(evs) == 0 {
			return "{\n  \"events\": []\n}\n"
		}
		return "{\n  \"events\": [\n" + strings.Join(evs, ",\n") + "\n  ]\n}\n"
	}
	f.expect(t, "GET", "/api/v1/events", "", 200, list(all...))
	f.expect(t, "GET", "/api/v1/events?kind=change,above", "", 200, list(all[4:]...))
	f.expect(t, "GET", "/api/v1/events?kind=change&kind=new_key", "", 200, list(all[:5]...))
	f.expect(t, "GET", "/api/v1/events?kind=below", "", 200, list())
	// since: at or after, as RFC 3339, as Unix ns, and as a duration ago.
	f.expect(t, "GET", "/api/v1/events?since=2026-01-02T03:04:06Z", "", 200, list(all[4:]...))
	f.expect(t, "GET", fmt.Sprintf("/api/v1/events?since=%d", t0+sec+1), "", 200, list(all[5]))
	f.expect(t, "GET", "/api/v1/events?since=1h", "", 200, list()) // t0 is long ago
	f.expect(t, "GET", "/api/v1/events?since=2026-01-02T03:04:05Z&kind=new_key&limit=2", "", 200, list(all[2:4]...))

	f.expect(t, "GET", "/api/v1/events?kind=periodic", "", 400, `{
  "error": "parameter kind: \"periodic\": must be a comma-separated list of new_key, path_change, change, above, below, expire, immediate",
  "param": "kind",
  "value": "periodic"
}
`)
	f.expect(t, "GET", "/api/v1/events?since=yesterday", "", 400, `{
  "error": "parameter since: \"yesterday\": must be an RFC 3339 time, Unix nanoseconds, or a duration such as 5m",
  "param": "since",
  "value": "yesterday"
}
`)
	f.expect(t, "GET", "/api/v1/events?limit=0", "", 400, `{
  "error": "parameter limit: \"0\": must be a positive integer",
  "param": "limit",
  "value": "0"
}
`)
	f.expect(t, "GET", "/api/v1/events?switch_id=7", "", 400, `{
  "error": "unknown parameter switch_id (allowed: since, kind, limit, src, dst, sport, dport, proto, flow)",
  "param": "switch_id",
  "value": "7"
}
`)

	// One flow's events: a second flow's are left out, and a flow needs all five parts.
	f.process(report(t0+3*sec, 1001, hop{node: 7, lat: 100}, hop{node: 8, lat: 10}))
	const q = "/api/v1/events?src=10.0.0.1&dst=10.0.1.2&dport=80&proto=6&sport="
	f.expect(t, "GET", q+"1000", "", 200, list(all...))
	f.expect(t, "GET", q+"1000&kind=change", "", 200, list(all[4]))
	f.expect(t, "GET", q+"1002", "", 200, list())
	if code, body := f.do(t, "GET", q+"1001", ""); code != 200 || strings.Count(body, `"sport": 1001`) != 4 || strings.Contains(body, `"sport": 1000`) {
		t.Errorf("flow 1001: %d %s", code, body)
	}
	f.expect(t, "GET", "/api/v1/events?src=10.0.0.1", "", 400, `{
  "error": "parameter dst: \"\": must be an IPv4 or IPv6 address",
  "param": "dst"
}
`)
}

// TestAPIEventStream reads the live stream: a comment once subscribed, then each event
// of the kinds asked for as `event: <kind>` and one line of JSON, numbered by the events
// the stream has seen (filtered ones included, so a gap shows what the filter held back).
func TestAPIEventStream(t *testing.T) {
	cfg := testConfig()
	cfg.Change["flow_latency"], cfg.Above["flow_latency"] = 50, 200
	f := newAPIFixture(t, cfg)
	resp, err := http.Get(f.srv.URL + "/api/v1/events/stream?kind=change,above,below")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	lines := func(n int) string {
		t.Helper()
		var b strings.Builder
		for range n {
			l, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", b.String(), err)
			}
			b.WriteString(l)
		}
		return b.String()
	}
	// The comment comes once the stream is subscribed: events from here on reach it.
	if got := lines(2); got != ": intake event stream\n\n" {
		t.Fatalf("stream opens with %q", got)
	}
	f.process(
		report(t0, 1000, hop{node: 7, lat: 100}),        // 3 new keys (1-3)
		report(t0+1*sec, 1000, hop{node: 7, lat: 150}),  // |Δ| = 50: nothing
		report(t0+2*sec, 1000, hop{node: 7, lat: 205}),  // hop: change (4), above (5); flow latency too (6, 7)
		report(t0+3*sec, 1000, hop{node: 7, lat: 200}),  // below (8, 9)
		report(t0+4*sec, 2000, hop{node: 7, lat: 1000}), // another flow: new keys (10, 11, 13), each value above (12, 14)
	)
	hop7 := `"key":{"src":"10.0.0.1","dst":"10.0.1.2","sport":1000,"dport":80,"proto":6,"switch_id":7}`
	flow := `"key":{"src":"10.0.0.1","dst":"10.0.1.2","sport":1000,"dport":80,"proto":6}`
	at := func(i int64) string {
		return fmt.Sprintf(`"time":%q,"time_ns":%d`, time.Unix(0, t0+i*sec).UTC().Format(time.RFC3339Nano), t0+i*sec)
	}
	want := `event: change
data: {"seq":4,` + at(2) + `,"kind":"change","scope":"e2e","measurement":"flow_latency",` + flow + `,"prev":100,"value":205,"threshold":50}

event: above
data: {"seq":5,` + at(2) + `,"kind":"above","scope":"e2e","measurement":"flow_latency",` + flow + `,"prev":150,"value":205,"threshold":200}

event: change
data: {"seq":6,` + at(2) + `,"kind":"change","scope":"switch","measurement":"flow_hop_latency",` + hop7 + `,"prev":100,"value":205,"threshold":50}

event: above
data: {"seq":7,` + at(2) + `,"kind":"above","scope":"switch","measurement":"flow_hop_latency",` + hop7 + `,"prev":150,"value":205,"threshold":200}

event: below
data: {"seq":8,` + at(3) + `,"kind":"below","scope":"e2e","measurement":"flow_latency",` + flow + `,"prev":205,"value":200,"threshold":200}

event: below
data: {"seq":9,` + at(3) + `,"kind":"below","scope":"switch","measurement":"flow_hop_latency",` + hop7 + `,"prev":205,"value":200,"threshold":200}

`
	if got := lines(18); got != want {
		t.Errorf("stream:\n%s\nwant\n%s", got, want)
	}
	hop7b := strings.Replace(hop7, "1000", "2000", 1)
	flowb := strings.Replace(flow, "1000", "2000", 1)
	want = `event: above
data: {"seq":12,` + at(4) + `,"kind":"above","scope":"e2e","measurement":"flow_latency",` + flowb + `,"prev":0,"value":1000,"threshold":200}

event: above
data: {"seq":14,` + at(4) + `,"kind":"above","scope":"switch","measurement":"flow_hop_latency",` + hop7b + `,"prev":0,"value":1000,"threshold":200}

`
	if got := lines(6); got != want {
		t.Errorf("stream, second flow:\n%s\nwant\n%s", got, want)
	}
}

// TestAPIFlow: a flow's latest values, path and the keys of the switches on its path.
func TestAPIFlow(t *testing.T) {
	f := newAPIFixture(t, testConfig())
	f.process(
		report(t0, 1000, hop{node: 7, lat: 100, qocc: 3, tx: 40}, hop{node: 8, lat: 10}, hop{node: 9, lat: 20, qocc: 9}),
		report(t0+sec, 1000, hop{node: 7, lat: 120, qocc: 4, tx: 41}, hop{node: 8, lat: 11}, hop{node: 9, lat: 22, qocc: 8}),
	)
	const q = "/api/v1/flow?src=10.0.0.1&dst=10.0.1.2&sport=1000&dport=80&proto=6"
	f.expect(t, "GET", q, "", 200, `{
  "src": "10.0.0.1",
  "dst": "10.0.1.2",
  "sport": 1000,
  "dport": 80,
  "proto": 6,
  "path": [
    7,
    8,
    9
  ],
  "path_len": 3,
  "flow_latency": 153,
  "hops": [
    {
      "hop": 1,
      "switch_id": 7,
      "hop_latency": 120
    },
    {
      "hop": 2,
      "switch_id": 8,
      "hop_latency": 11
    },
    {
      "hop": 3,
      "switch_id": 9,
      "hop_latency": 22
    }
  ],
  "reports": 2,
  "first_seen": "2026-01-02T03:04:05Z",
  "last_seen": "2026-01-02T03:04:06Z",
  "queues": [
    {
      "switch_id": 7,
      "queue_id": 1,
      "queue_occupancy": 4,
      "last_seen": "2026-01-02T03:04:06Z"
    },
    {
      "switch_id": 9,
      "queue_id": 1,
      "queue_occupancy": 8,
      "last_seen": "2026-01-02T03:04:06Z"
    }
  ],
  "ports": [
    {
      "switch_id": 7,
      "port": 2,
      "tx_utilization": 41,
      "last_seen": "2026-01-02T03:04:06Z"
    }
  ],
  "buffers": []
}
`)
	// The one flow notation: proto by name, or the whole flow in flow=, the same answer.
	_, want := f.do(t, "GET", q, "")
	for _, alt := range []string{strings.Replace(q, "proto=6", "proto=TCP", 1),
		"/api/v1/flow?flow=" + url.QueryEscape("10.0.0.1:1000 → 10.0.1.2:80 tcp"),
		"/api/v1/flow?flow=" + url.QueryEscape("10.0.0.1:1000 -> 10.0.1.2:80 6")} {
		f.expect(t, "GET", alt, "", 200, want)
	}
	f.expect(t, "GET", strings.Replace(q, "sport=1000", "sport=1001", 1), "", 404, `{
  "error": "no such flow (unknown, expired or evicted)"
}
`)
	f.expect(t, "GET", strings.Replace(q, "sport=1000", "sport=70000", 1), "", 400, `{
  "error": "parameter sport: \"70000\": must be an integer 0-65535",
  "param": "sport",
  "value": "70000"
}
`)
	f.expect(t, "GET", strings.Replace(q, "&proto=6", "", 1), "", 400, `{
  "error": "parameter proto: \"\": must be tcp, udp, icmp, icmpv6, sctp or a number 0-255 (any case)",
  "param": "proto"
}
`)
	f.expect(t, "GET", strings.Replace(q, "dst=10.0.1.2", "dst=2001:db8::1", 1), "", 400, `{
  "error": "parameter src: \"10.0.0.1,2001:db8::1\": must be IPv4 or IPv6 addresses of one family for src and dst",
  "param": "src",
  "value": "10.0.0.1,2001:db8::1"
}
`)
}

// TestAPIThresholds: PUT /api/v1/thresholds takes effect at the next report. For each rule
// the crafted value sits right at the new threshold (no event) and then just above it.
func TestAPIThresholds(t *testing.T) {
	f := newAPIFixture(t, testConfig())
	f.expect(t, "GET", "/api/v1/thresholds", "", 200, `{
  "change": {
    "flow_hop_latency": 50
  },
  "above": {
    "flow_hop_latency": 200
  }
}
`)
	n := int64(0)
	step := func(lat uint32) []string {
		n++
		f.d.Process(0, report(n, 1000, hop{node: 7, lat: lat}))
		var out []string
		for _, e := range f.buf[:f.log.cons.Poll(f.buf)] {
			if e.Measurement == event.FlowHopLatency {
				out = append(out, show(&e))
			}
		}
		return out
	}
	step(100)
	expect(t, "T=50, |Δ| 10", step(110))
	f.expect(t, "PUT", "/api/v1/thresholds", `{"change": {"flow_hop_latency": 20, "queue_occupancy": 7}}`, 200, `{
  "change": {
    "flow_hop_latency": 20,
    "queue_occupancy": 7
  },
  "above": {
    "flow_hop_latency": 200
  }
}
`)
	expect(t, "T=20, |Δ| = 20", step(120))
	expect(t, "T=20, |Δ| 21", step(121), "change switch flow_hop_latency sw7 100->121 T20")
	f.expect(t, "PUT", "/api/v1/thresholds", `{"above": {"flow_hop_latency": 150}, "change": {"flow_hop_latency": null}}`, 200, `{
  "change": {
    "queue_occupancy": 7
  },
  "above": {
    "flow_hop_latency": 150
  }
}
`)
	expect(t, "above 150, value 150", step(150))
	expect(t, "above 150, value 151", step(151), "above switch flow_hop_latency sw7 150->151 T150")
	expect(t, "change off", step(5000))
	f.expect(t, "PUT", "/api/v1/thresholds", `{"above": {"flow_hop_latency": 5000}}`, 200, `{
  "change": {
    "queue_occupancy": 7
  },
  "above": {
    "flow_hop_latency": 5000
  }
}
`)
	expect(t, "above 5000, value 5000", step(5000), "below switch flow_hop_latency sw7 5000->5000 T5000")

	// Errors change nothing, not even the valid part of the body.
	before := f.d.Thresholds()
	f.expect(t, "PUT", "/api/v1/thresholds", `{"change": {"flow_latency": 1, "latency": 5}}`, 400, `{
  "error": "body: change.latency: unknown measurement (allowed: flow_latency, flow_hop_latency, queue_occupancy, queue_congestion, tx_utilization, buffer_occupancy, drops, seq_gaps)"
}
`)
	f.expect(t, "PUT", "/api/v1/thresholds", `{"above": {"flow_path": 1}}`, 400, `{
  "error": "body: above.flow_path: a path has no numeric value to compare (allowed: flow_latency, flow_hop_latency, queue_occupancy, queue_congestion, tx_utilization, buffer_occupancy, drops, seq_gaps)"
}
`)
	f.expect(t, "PUT", "/api/v1/thresholds", `{"below": {"flow_latency": 1}}`, 400, `{
  "error": "body: \"below\": unknown section (allowed: change, above)"
}
`)
	f.expect(t, "PUT", "/api/v1/thresholds", `{"change": {"flow_latency": -1}}`, 400, `{
  "error": "body: change.flow_latency: -1: must be a non-negative integer up to 18446744073709551615, or null or \"off\""
}
`)
	if after := f.d.Thresholds(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused PUT changed the thresholds: %v, was %v", after, before)
	}
}

// TestAPISinceRange: a since beyond what Unix nanoseconds hold is a 400. Before, 2999
// wrapped around to a time long past and the answer was every event.
func TestAPISinceRange(t *testing.T) {
	f := newAPIFixture(t, testConfig())
	f.process(report(t0, 1000, hop{node: 7, lat: 100}))
	for _, since := range []string{"2999-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "2262-04-11T23:47:16.854775808Z"} {
		f.expect(t, "GET", "/api/v1/events?since="+since, "", 400, `{
  "error": "parameter since: \"`+since+`\": must be a time from 1677-09-21T00:12:43.145224192Z to 2262-04-11T23:47:16.854775807Z",
  "param": "since",
  "value": "`+since+`"
}
`)
	}
	f.expect(t, "GET", "/api/v1/events?since=2262-04-11T23:47:16.854775807Z", "", 200, "{\n  \"events\": []\n}\n")
}

// TestAPIThresholdsExplicitOff: null and "off" turn a rule off; every integer, the largest
// included, is a level in force and shown as one (before, the largest silently meant off);
// a body with anything after its JSON value, or over the size limit, is refused.
func TestAPIThresholdsExplicitOff(t *testing.T) {
	f := newAPIFixture(t, testConfig())
	f.expect(t, "PUT", "/api/v1/thresholds", `{"change": {"flow_hop_latency": 18446744073709551615, "drops": "off"}, "above": {"flow_hop_latency": null, "seq_gaps": 18446744073709551615}}`, 200, `{
  "change": {
    "flow_hop_latency": 18446744073709551615
  },
  "above": {
    "seq_gaps": 18446744073709551615
  }
}
`)
	if v, on := f.d.Threshold(event.KindChange, event.FlowHopLatency); !on || v != 1<<64-1 {
		t.Errorf("change flow_hop_latency: %d %v", v, on)
	}
	if _, on := f.d.Threshold(event.KindAbove, event.FlowHopLatency); on {
		t.Error("above flow_hop_latency: still on after null")
	}
	before := f.d.Thresholds()
	for _, tc := range []struct{ body, err string }{
		{`{"change": {"flow_latency": 1}} x`, `body: must be {\"change\": {measurement: level}, \"above\": {...}}, a level a non-negative integer, or null or \"off\" to turn the rule off: data after the JSON value`},
		{`{"change": {"flow_latency": 1}}{"above": {}}`, `body: must be {\"change\": {measurement: level}, \"above\": {...}}, a level a non-negative integer, or null or \"off\" to turn the rule off: data after the JSON value`},
		{`{"change": {"flow_latency": "on"}}`, `body: change.flow_latency: \"on\": must be a non-negative integer up to 18446744073709551615, or null or \"off\"`},
		{`{"change": {"flow_latency": 1.5}}`, `body: change.flow_latency: 1.5: must be a non-negative integer up to 18446744073709551615, or null or \"off\"`},
		{`{"change": {"flow_latency": 18446744073709551616}}`, `body: change.flow_latency: 18446744073709551616: must be a non-negative integer up to 18446744073709551615, or null or \"off\"`},
		{``, `body: must be {\"change\": {measurement: level}, \"above\": {...}}, a level a non-negative integer, or null or \"off\" to turn the rule off: empty`},
	} {
		f.expect(t, "PUT", "/api/v1/thresholds", tc.body, 400, "{\n  \"error\": \""+tc.err+"\"\n}\n")
	}
	big := `{"change": {"flow_latency": 1` + strings.Repeat(" ", api.MaxBody) + `}}`
	f.expect(t, "PUT", "/api/v1/thresholds", big, 413, "{\n  \"error\": \"body larger than 65536 bytes\"\n}\n")
	if after := f.d.Thresholds(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused PUT changed the thresholds: %v, was %v", after, before)
	}
}
