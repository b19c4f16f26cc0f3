package detect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// openStream opens GET /api/v1/events/stream and reads its opening comment.
func openStream(t *testing.T, url string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %s %s", resp.Status, b)
	}
	rd := bufio.NewReader(resp.Body)
	if l, err := rd.ReadString('\n'); err != nil || l != ": intake event stream\n" {
		t.Fatalf("stream opens with %q %v", l, err)
	}
	rd.ReadString('\n')
	return resp, rd
}

// publish puts n events of kind change on the detector's bus.
func publish(d *Detector, n int, t0 int64) {
	for i := range n {
		e := event.Event{Time: t0 + int64(i), Kind: event.KindChange, Scope: event.ScopeSwitch,
			Measurement: event.QueueOccupancy, Value: uint64(i)}
		e.Key.Switch = 7
		d.bus.Publish(&e)
	}
}

// TestStreamCap: at most detect.max_streams streams at once, the next refused with 503; the
// streams read the event log's ring, so opening them adds no consumer (and no ring) to the
// bus. Before, every stream subscribed a ring of 4096 events of its own, without bound.
func TestStreamCap(t *testing.T) {
	cfg := testConfig()
	cfg.MaxStreams = 3
	f := newAPIFixture(t, cfg)
	consumers := len(f.d.bus.Consumers())
	var rds []*bufio.Reader
	for range 3 {
		_, rd := openStream(t, f.srv.URL)
		rds = append(rds, rd)
	}
	if n := len(f.d.bus.Consumers()); n != consumers {
		t.Errorf("3 streams: %d bus consumers, %d before", n, consumers)
	}
	resp, err := http.Get(f.srv.URL + "/api/v1/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "{\n  \"error\": \"too many event streams: 3 open (detect.max_streams)\"\n}\n"; resp.StatusCode != 503 || string(b) != want || resp.Header.Get("Retry-After") != "10" {
		t.Errorf("fourth stream: %s %q, want 503 %q", resp.Status, b, want)
	}
	// Every stream gets every event from the one ring.
	publish(f.d, 2, t0)
	f.log.Drain(f.buf)
	for i, rd := range rds {
		l, _ := rd.ReadString('\n')
		if l != "event: change\n" {
			t.Errorf("stream %d: %q", i, l)
		}
	}
	st := f.log.StreamStats()
	if st.Open != 3 || st.Max != 3 || st.Opened != 3 || st.Refused != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamBehind: a stream that falls a whole ring behind (here: the log takes more events
// at once than it holds) gets an overflow event saying how many it lost and is closed.
func TestStreamBehind(t *testing.T) {
	cfg := testConfig()
	cfg.EventLog, cfg.Ring = 100, 1<<14
	f := &apiFixture{d: New(cfg, Deps{})}
	srv := api.New("127.0.0.1:0", nil)
	f.d.RegisterAPI(srv)
	f.log = f.d.Log()
	ts := newTestServer(t, srv)
	_, rd := openStream(t, ts)
	publish(f.d, 10000, t0)
	f.log.Drain(make([]event.Event, 10000)) // one step: the stream cannot read in between
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("event: overflow\ndata: {\"lost\": %d}\n\n", 10000-minLogRing); string(rest) != want {
		t.Errorf("stream after a burst: %q, want %q", rest, want)
	}
	if st := f.log.StreamStats(); st.Dropped["behind"] != 1 || st.Open != 0 {
		t.Errorf("stats %+v", st)
	}
	// GET /api/v1/events still answers from the newest event_log events.
	if evs := f.log.Query(0, nil, nil, 0); len(evs) != 100 || evs[99].Seq != 10000 {
		t.Errorf("query: %d events, last %+v", len(evs), evs[len(evs)-1])
	}
}

// TestStreamSlowClient: a client that stops reading is dropped once a write has blocked for
// the write timeout; the collector does not buffer for it.
func TestStreamSlowClient(t *testing.T) {
	old := streamWriteTimeout
	streamWriteTimeout = 100 * time.Millisecond
	t.Cleanup(func() { streamWriteTimeout = old })
	f := newAPIFixture(t, testConfig())
	// A raw connection with a small receive buffer that is never read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	testutil.Eventually(t, 20*time.Second, "the stream open", func() bool { return f.log.StreamStats().Open == 1 })
	i := 0
	testutil.Eventually(t, 20*time.Second, "the slow stream closed", func() bool {
		if f.log.StreamStats().Open != 1 {
			return true
		}
		// 10,000 events/s, far within the ring at the pace the stream writes (even under the
		// race detector): it is never behind while its writes go through.
		publish(f.d, 200, t0+int64(i)*200)
		f.log.Drain(f.buf)
		i++
		time.Sleep(20 * time.Millisecond)
		return false
	})
	if st := f.log.StreamStats(); st.Open != 0 || st.Dropped["slow"] != 1 || st.Dropped["behind"] != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamStop: the server's Stop ends open streams at once, a client that reads and one
// that does not.
func TestStreamStop(t *testing.T) {
	f := &apiFixture{d: New(testConfig(), Deps{})}
	srv := api.New("127.0.0.1:0", nil)
	f.d.RegisterAPI(srv)
	f.log = f.d.Log()
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.d.Start(context.Background())
	defer f.d.Stop(context.Background())
	openStream(t, "http://"+srv.Addr())
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	testutil.Eventually(t, 20*time.Second, "two streams open", func() bool { return f.log.StreamStats().Open == 2 })
	publish(f.d, 3000, t0)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stop took %s with two streams open", d)
	}
	testutil.Eventually(t, time.Second, "no stream open after stop", func() bool { return f.log.StreamStats().Open == 0 })
}

// newTestServer serves srv's handler on a loopback port for the test; it returns the URL.
func newTestServer(t *testing.T, srv *api.Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestStreamMetrics: the streams' counters are on /metrics and in the detector's status.
func TestStreamMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	cfg := testConfig()
	cfg.MaxStreams = 1
	d := New(cfg, Deps{Metrics: reg})
	srv := api.New("127.0.0.1:0", nil)
	d.RegisterAPI(srv)
	url := newTestServer(t, srv)
	openStream(t, url)
	resp, err := http.Get(url + "/api/v1/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var b strings.Builder
	reg.WriteText(&b)
	for _, want := range []string{"intake_event_streams 1\n", "intake_event_streams_refused_total 1\n",
		`intake_event_streams_dropped_total{reason="behind"} 0` + "\n", `intake_event_streams_dropped_total{reason="slow"} 0` + "\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
	if st := d.Stats().Streams; st == nil || st.Open != 1 || st.Refused != 1 || st.Max != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestStreamOutlivesTimeouts: an event stream lives past http.read_timeout and
// http.write_timeout (the server's deadlines for one request): each write sets its own
// deadline, and net/http clears the read deadline once the request is read.
func TestStreamOutlivesTimeouts(t *testing.T) {
	hc := api.DefaultConfig()
	hc.Address, hc.ReadTimeout, hc.WriteTimeout = "127.0.0.1:0", 100*time.Millisecond, 100*time.Millisecond
	srv, err := api.NewFromConfig(hc, api.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.EventLog, cfg.Ring = 100, 1024
	d := New(cfg, Deps{})
	d.RegisterAPI(srv)
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	_, rd := openStream(t, "http://"+srv.Addr())
	for i := range 3 {
		time.Sleep(300 * time.Millisecond) // past both timeouts
		publish(d, 1, t0+int64(i))
		d.Log().Drain(make([]event.Event, 64))
		if l, err := rd.ReadString('\n'); l != "event: change\n" {
			t.Fatalf("after %d ms: %q %v", (i+1)*300, l, err)
		}
		rd.ReadString('\n')
		rd.ReadString('\n')
	}
}

// TestStreamSharedEncoding: a stream writes exactly what it wrote when each stream encoded
// each event itself ("event: <kind>\ndata: <EventJSON>\n\n", numbered by the stream),
// whether the event comes from the log's shared encoding (the newest streamShared events)
// or is encoded by the stream (one further behind), with a kind filter or without.
func TestStreamSharedEncoding(t *testing.T) {
	cfg := testConfig()
	cfg.EventLog, cfg.Ring = 10000, 1<<14
	f := &apiFixture{d: New(cfg, Deps{})}
	srv := api.New("127.0.0.1:0", nil)
	f.d.RegisterAPI(srv)
	f.log = f.d.Log()
	ts := newTestServer(t, srv)
	_, all := openStream(t, ts)
	resp, err := http.Get(ts + "/api/v1/events/stream?kind=above")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	above := bufio.NewReader(resp.Body)
	above.ReadString('\n')
	above.ReadString('\n')
	const n = streamShared + 1000 // the first 1000 are past the shared ones when the streams read
	var evs []event.Event
	for i := range n {
		e := event.Event{Time: t0 + int64(i), Kind: event.KindChange, Scope: event.ScopeSwitch,
			Measurement: event.FlowHopLatency, Prev: uint64(i), Value: uint64(2 * i), Threshold: 50}
		if i%3 == 0 {
			e.Kind = event.KindAbove
		}
		e.Key.Flow = telemetry.FlowKey{SrcPort: uint16(i), DstPort: 80, Proto: 6}
		e.Key.Switch = uint32(i % 7)
		f.d.bus.Publish(&e)
		evs = append(evs, e)
	}
	f.log.Drain(make([]event.Event, n)) // one step: the streams read after all are stored
	var wantAll, wantAbove []byte
	for i := range evs {
		b, _ := json.Marshal(ToJSON(uint64(i+1), &evs[i]))
		line := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", evs[i].Kind, b)
		wantAll = append(wantAll, line...)
		if evs[i].Kind == event.KindAbove {
			wantAbove = append(wantAbove, line...)
		}
	}
	for name, c := range map[string]struct {
		rd   *bufio.Reader
		want []byte
	}{"all": {all, wantAll}, "kind=above": {above, wantAbove}} {
		got := make([]byte, len(c.want))
		if _, err := io.ReadFull(c.rd, got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, c.want) {
			i := 0
			for i < len(got) && got[i] == c.want[i] {
				i++
			}
			t.Errorf("%s: differs at byte %d: %q, want %q", name, i, got[i:min(i+200, len(got))], c.want[i:min(i+200, len(got))])
		}
	}
}
