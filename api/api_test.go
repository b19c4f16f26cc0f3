package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/wire"
	"go.uber.org/goleak"
)

// start serves the receive path's status (ingest registers it) and an echo endpoint.
func start(t *testing.T) (*api.Server, *ingest.Receiver) {
	t.Helper()
	cfg := ingest.Config{Listeners: []ingest.Listener{{Name: "dta", Format: "dta", Address: "127.0.0.1", Sockets: 1, Batch: 8, RcvBuf: 1 << 20, MaxDatagram: 2048}},
		Decoder: wire.DefaultConfig()}
	reg := metrics.NewRegistry()
	c, err := ingest.New(cfg, ingest.Deps{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := api.New("127.0.0.1:0", reg)
	c.RegisterAPI(s)
	s.Handle("GET /api/v1/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, 200, map[string]string{"echo": "ok"})
	}))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop(context.Background())
		c.Stop(context.Background())
	})
	return s, c
}

func get(t *testing.T, s *api.Server, path string) (int, string, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestEndpoints(t *testing.T) {
	s, c := start(t)
	conn, _ := net.Dial("udp", c.ListenerAddr(0))
	conn.Write([]byte{0xff})
	conn.Write([]byte{})
	conn.Close()
	// Loopback delivery is synchronous, but the worker publishes per batch: wait for it.
	for i := 0; i < 200 && c.Status().PacketsReceived < 2; i++ {
		time.Sleep(5 * time.Millisecond)
	}

	if code, _, body := get(t, s, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, ct, body := get(t, s, "/metrics")
	// client_golang's text format (it adds the escaping scheme to the content type).
	if code != 200 || !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") ||
		!strings.Contains(body, "# TYPE intake_packets_received_total counter\n") ||
		!strings.Contains(body, `intake_packets_received_total{format="dta",listener="dta"} 2`+"\n") ||
		!strings.Contains(body, "\ngo_goroutines ") || !strings.Contains(body, "\nprocess_cpu_seconds_total ") {
		t.Errorf("/metrics: %d %s\n%s", code, ct, body)
	}
	// OpenMetrics when the scraper asks for it.
	req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	om, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") ||
		!strings.HasSuffix(string(om), "# EOF\n") || !strings.Contains(string(om), "intake_packets_received_total{") {
		t.Errorf("/metrics as OpenMetrics: %s\n%s", ct, om)
	}

	code, ct, body = get(t, s, "/api/v1/status")
	if code != 200 || ct != "application/json" {
		t.Fatalf("/api/v1/status: %d %s %s", code, ct, body)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"packets_received", "reports_decoded", "kernel_drops", "uptime_s", "rates", "listeners"} {
		if _, ok := st[k]; !ok {
			t.Errorf("status has no %s: %s", k, body)
		}
	}
	if st["packets_received"] != 2.0 {
		t.Errorf("packets_received = %v", st["packets_received"])
	}
	de, _ := st["decode_errors"].(map[string]any)
	br, _ := de["by_reason"].(map[string]any)
	if de["total"] != 2.0 || br["truncated"] == nil || len(br) != 7 {
		t.Errorf("decode_errors = %v", st["decode_errors"])
	}
	ls, _ := st["listeners"].([]any)
	l0, _ := ls[0].(map[string]any)
	if len(ls) != 1 || l0["name"] != "dta" || l0["rcvbuf_requested"] != float64(1<<20) || l0["rcvbuf_granted"] == 0.0 ||
		!strings.HasPrefix(l0["address"].(string), "127.0.0.1:") {
		t.Errorf("listeners = %v", ls)
	}

	if code, _, body := get(t, s, "/api/v1/status?listener=dta"); code != 200 || !strings.Contains(body, `"name": "dta"`) {
		t.Errorf("?listener=dta: %d %s", code, body)
	}
	for path, want := range map[string]string{
		"/api/v1/status?listener=nope": `{"error":"parameter listener: \"nope\": must be one of dta","param":"listener","value":"nope"}`,
		"/api/v1/status?lstener=dta":   `{"error":"unknown parameter lstener (allowed: listener)","param":"lstener","value":"dta"}`,
	} {
		code, ct, body := get(t, s, path)
		var got, exp any
		json.Unmarshal([]byte(body), &got)
		json.Unmarshal([]byte(want), &exp)
		if code != 400 || ct != "application/json" || !jsonEqual(got, exp) {
			t.Errorf("%s: %d %s %s, want 400 %s", path, code, ct, body, want)
		}
	}
	if code, _, body := get(t, s, "/api/v1/nope"); code != 404 || !strings.Contains(body, `"error"`) {
		t.Errorf("/api/v1/nope: %d %s", code, body)
	}
	if code, _, body := get(t, s, "/api/v1/echo"); code != 200 || !strings.Contains(body, `"echo": "ok"`) {
		t.Errorf("/api/v1/echo: %d %s", code, body)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestHandleOutsideAPIPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	api.New("127.0.0.1:0", nil).Handle("/flows", http.NotFoundHandler())
}

func TestStartStopNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	for i := 0; i < 3; i++ {
		s := api.New("127.0.0.1:0", metrics.NewRegistry())
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := get(t, s, "/healthz"); code != 200 {
			t.Fatal(code)
		}
		http.DefaultClient.CloseIdleConnections()
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, before) // retries until the goroutines are gone, and names those left
}
