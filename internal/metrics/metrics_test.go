package metrics

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// intakeText is WriteText's output without the families of the Go and process collectors,
// which NewRegistry always registers and whose values vary.
func intakeText(t testing.TB, r *Registry) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return onlyIntake(buf.String())
}

// onlyIntake keeps the lines of the intake_ families (and # EOF) of an exposition.
func onlyIntake(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		name := l
		if rest, ok := strings.CutPrefix(l, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name = rest
		}
		if strings.HasPrefix(name, "intake_") || l == "# EOF\n" {
			b.WriteString(l)
		}
	}
	return b.String()
}

// The library writes label pairs sorted by label name (format before listener) and values in
// Go's shortest 'g' form (8.388608e+06); the hand-written encoder this package had kept the
// registration order of the labels and wrote integers without exponent.
func TestWriteText(t *testing.T) {
	r := NewRegistry()
	pk := r.Counter("intake_packets_received_total", "Datagrams received, by listener.", "listener", "format")
	pk.With("report:32766", "report").Add(12)
	pk.With("dta:40040", "dta").Inc()
	r.Gauge("intake_uptime_seconds", "Seconds since start.").Func(func() float64 { return 1.5 })
	r.Gauge("intake_rcvbuf_bytes", "Receive buffer.\nSecond line with \\ backslash.", "listener").With(`we"ird\name` + "\n").SetInt(8388608)
	e := r.Counter("intake_decode_errors_total", "Decode errors by reason.", "reason")
	e.Func(func() float64 { return 3 }, "truncated")
	e.With("bad_value")
	r.Gauge("intake_special", "Special values.", "v").With("nan").Set(math.NaN())
	r.Gauge("intake_special", "Special values.", "v").With("inf").Set(math.Inf(1))
	r.Gauge("intake_special", "Special values.", "v").With("frac").Set(0.25)
	want := `# HELP intake_decode_errors_total Decode errors by reason.
# TYPE intake_decode_errors_total counter
intake_decode_errors_total{reason="bad_value"} 0
intake_decode_errors_total{reason="truncated"} 3
# HELP intake_packets_received_total Datagrams received, by listener.
# TYPE intake_packets_received_total counter
intake_packets_received_total{format="dta",listener="dta:40040"} 1
intake_packets_received_total{format="report",listener="report:32766"} 12
# HELP intake_rcvbuf_bytes Receive buffer.\nSecond line with \\ backslash.
# TYPE intake_rcvbuf_bytes gauge
intake_rcvbuf_bytes{listener="we\"ird\\name\n"} 8.388608e+06
# HELP intake_special Special values.
# TYPE intake_special gauge
intake_special{v="frac"} 0.25
intake_special{v="inf"} +Inf
intake_special{v="nan"} NaN
# HELP intake_uptime_seconds Seconds since start.
# TYPE intake_uptime_seconds gauge
intake_uptime_seconds 1.5
`
	if got := intakeText(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"prefix":    func() { NewRegistry().Counter("packets_total", "x") },
		"badname":   func() { NewRegistry().Counter("intake_a-b", "x") },
		"badlabel":  func() { NewRegistry().Counter("intake_a", "x", "1l") },
		"mismatch":  func() { r := NewRegistry(); r.Counter("intake_a", "x"); r.Gauge("intake_a", "x") },
		"help":      func() { r := NewRegistry(); r.Counter("intake_a", "x"); r.Counter("intake_a", "y") },
		"labels":    func() { r := NewRegistry(); r.Counter("intake_a", "x", "l"); r.Counter("intake_a", "x", "m") },
		"histtype":  func() { r := NewRegistry(); r.Counter("intake_a", "x"); r.Histogram("intake_a", "x") },
		"numvalues": func() { NewRegistry().Counter("intake_a", "x", "l").With() },
		"histle":    func() { NewRegistry().Histogram("intake_h", "x", "le") },
		"histvals":  func() { NewRegistry().Histogram("intake_h", "x", "l").Func(nil) },
		"histcount": func() { r := NewRegistry(); r.Histogram("intake_h", "x"); r.Counter("intake_h_count", "x") },
		"histafter": func() { r := NewRegistry(); r.Gauge("intake_h_sum", "x"); r.Histogram("intake_h", "x") },
		"again": func() {
			r := NewRegistry()
			r.Counter("intake_a", "x")
			r.Unregister("intake_a")
			r.Counter("intake_a", "y")
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestReRegister(t *testing.T) {
	r := NewRegistry()
	a := r.Counter("intake_a_total", "x", "l")
	if b := r.Counter("intake_a_total", "x", "l"); b != a {
		t.Error("same counter registered twice: a new family")
	}
	h := r.Histogram("intake_h", "x", "l")
	if h2 := r.Histogram("intake_h", "x", "l"); h2 != h {
		t.Error("same histogram registered twice: a new family")
	}
	a.With("1").Inc()
	r.Unregister("intake_a_total")
	if got := intakeText(t, r); strings.Contains(got, "intake_a_total") {
		t.Errorf("unregistered family still served:\n%s", got)
	}
	// Registering it again after Unregister makes a new, empty family.
	c := r.Counter("intake_a_total", "x", "l")
	if c == a {
		t.Error("registered again after Unregister: the old family")
	}
	c.With("2").Add(5)
	if got, want := intakeText(t, r), "# HELP intake_a_total x\n# TYPE intake_a_total counter\nintake_a_total{l=\"2\"} 5\n"; got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// worker is a receive worker's published counter: its own cache line, written by the worker
// only.
type worker struct{ pub Value }

// A Func series summed over two workers at scrape, as the receive path registers it.
func TestFuncSum(t *testing.T) {
	r := NewRegistry()
	var ws [2]worker
	f := r.Counter("intake_packets_received_total", "Datagrams received, by listener.", "listener")
	f.Func(func() float64 {
		var n uint64
		for i := range ws {
			n += ws[i].pub.Load()
		}
		return float64(n)
	}, "report:32766")
	ws[0].pub.Add(40)
	ws[1].pub.Add(2)
	want := `# HELP intake_packets_received_total Datagrams received, by listener.
# TYPE intake_packets_received_total counter
intake_packets_received_total{listener="report:32766"} 42
`
	if got := intakeText(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	ws[1].pub.Add(8)
	if got := f.Samples(); len(got) != 1 || got[0].Value != 50 || got[0].Labels[0] != "report:32766" {
		t.Errorf("samples %v", got)
	}
}

func TestDelete(t *testing.T) {
	r := NewRegistry()
	g := r.Gauge("intake_g", "g", "k")
	g.With("a").Set(1)
	g.With("b").Set(2)
	g.Func(func() float64 { return 3 }, "c")
	g.Delete("a")
	g.Delete("c")
	want := "# HELP intake_g g\n# TYPE intake_g gauge\nintake_g{k=\"b\"} 2\n"
	if got := intakeText(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A family whose series are emitted by a callback at scrape, next to a With series.
func TestFamilyCollect(t *testing.T) {
	r := NewRegistry()
	g := r.Gauge("intake_switch_flows", "Flows by switch.", "switch", "table")
	g.With("0", "static").Set(7)
	var switches atomic.Int64
	switches.Store(2)
	g.Collect(func(emit func(float64, ...string)) {
		lv := make([]string, 2)
		for s := range switches.Load() {
			lv[0], lv[1] = string(rune('1'+s)), "dynamic"
			emit(float64(10*(s+1)), lv...) // emit copies: lv is reused
		}
	})
	want := `# HELP intake_switch_flows Flows by switch.
# TYPE intake_switch_flows gauge
intake_switch_flows{switch="0",table="static"} 7
intake_switch_flows{switch="1",table="dynamic"} 10
intake_switch_flows{switch="2",table="dynamic"} 20
`
	if got := intakeText(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	switches.Store(3)
	if s := g.Samples(); len(s) != 4 || s[3].Labels[0] != "3" || s[3].Value != 30 {
		t.Errorf("samples %v", s)
	}
}

// A Collect callback emitting the wrong number of label values, or a series twice, is a
// gather error: WriteText returns it and still writes the other series; Handler serves them.
func TestCollectErrors(t *testing.T) {
	r := NewRegistry()
	r.Counter("intake_ok_total", "ok").With().Add(3)
	c := r.Counter("intake_bad_total", "bad", "l")
	c.With("x").Inc()
	c.Collect(func(emit func(float64, ...string)) {
		emit(1)           // no label value
		emit(2, "x")      // the With series again
		emit(3, "y", "z") // too many
	})
	var buf bytes.Buffer
	err := r.WriteText(&buf)
	if err == nil {
		t.Error("no error")
	}
	if got := onlyIntake(buf.String()); !strings.Contains(got, "intake_ok_total 3\n") {
		t.Errorf("other series not written:\n%s", got)
	}
	h := r.Histogram("intake_bad_hist", "bad", "l")
	h.Collect(func(emit func(uint64, float64, map[float64]uint64, ...string)) { emit(1, 1, nil) })
	if err := r.WriteText(io.Discard); err == nil {
		t.Error("histogram: no error")
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	rec := httptest.NewRecorder()
	r.Handler(log).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "intake_ok_total 3\n") {
		t.Errorf("handler: %d\n%s", rec.Code, onlyIntake(rec.Body.String()))
	}
	// The gather error goes to the handler's slog logger, at level error, marked as the
	// metrics component.
	if l := logged.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "component=metrics") ||
		!strings.Contains(l, "intake_bad_total") {
		t.Errorf("gather error not logged through slog: %q", l)
	}
}

// Histograms: one Func series and a Collect callback emitting one per switch, from
// cumulative bucket counts; the +Inf bucket comes from the count.
func TestHistogram(t *testing.T) {
	r := NewRegistry()
	e2e := r.Histogram("intake_e2e_latency_ns", "End-to-end latency.")
	e2e.Func(func() (uint64, float64, map[float64]uint64) {
		return 10, 12345, map[float64]uint64{1000: 2, 2000: 7, 4000: 9}
	})
	hop := r.Histogram("intake_hop_latency_ns", "Hop latency by switch.", "switch")
	hop.Collect(func(emit func(uint64, float64, map[float64]uint64, ...string)) {
		b := map[float64]uint64{}
		for sw, n := range []uint64{3, 5} {
			clear(b) // emit copies: b is reused
			b[100], b[math.Inf(1)] = n-1, n
			emit(n, float64(50*n), b, string(rune('a'+sw)))
		}
	})
	want := `# HELP intake_e2e_latency_ns End-to-end latency.
# TYPE intake_e2e_latency_ns histogram
intake_e2e_latency_ns_bucket{le="1000"} 2
intake_e2e_latency_ns_bucket{le="2000"} 7
intake_e2e_latency_ns_bucket{le="4000"} 9
intake_e2e_latency_ns_bucket{le="+Inf"} 10
intake_e2e_latency_ns_sum 12345
intake_e2e_latency_ns_count 10
# HELP intake_hop_latency_ns Hop latency by switch.
# TYPE intake_hop_latency_ns histogram
intake_hop_latency_ns_bucket{switch="a",le="100"} 2
intake_hop_latency_ns_bucket{switch="a",le="+Inf"} 3
intake_hop_latency_ns_sum{switch="a"} 150
intake_hop_latency_ns_count{switch="a"} 3
intake_hop_latency_ns_bucket{switch="b",le="100"} 4
intake_hop_latency_ns_bucket{switch="b",le="+Inf"} 5
intake_hop_latency_ns_sum{switch="b"} 250
intake_hop_latency_ns_count{switch="b"} 5
`
	if got := intakeText(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	e2e.Delete()
	if got := intakeText(t, r); strings.Contains(got, "intake_e2e_latency_ns_") {
		t.Errorf("deleted histogram still served:\n%s", got)
	}
}

// NewRegistry registers the Go and process collectors.
func TestRuntimeCollectors(t *testing.T) {
	var buf bytes.Buffer
	if err := NewRegistry().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, fam := range []string{"go_goroutines", "go_memstats_alloc_bytes", "go_info",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"} {
		if !strings.Contains(buf.String(), "\n# TYPE "+fam+" ") {
			t.Errorf("no %s family", fam)
		}
	}
}

// Handler serves the text format 0.0.4 by default and OpenMetrics 1.0.0 when asked.
func TestHandlerNegotiation(t *testing.T) {
	r := NewRegistry()
	r.Counter("intake_reports_total", "Reports.", "format").With("dta").Add(4)
	r.Gauge("intake_up", "Up.").With().Set(1)
	scrape := func(accept string) (string, string) {
		t.Helper()
		srv := httptest.NewServer(r.Handler(nil))
		defer srv.Close()
		req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", resp.Status, b)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}

	ct, body := scrape("")
	if !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("default content type %q", ct)
	}
	want := `# HELP intake_reports_total Reports.
# TYPE intake_reports_total counter
intake_reports_total{format="dta"} 4
# HELP intake_up Up.
# TYPE intake_up gauge
intake_up 1
`
	if got := onlyIntake(body); got != want {
		t.Errorf("text: got:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(body, "# EOF") {
		t.Error("text format with # EOF")
	}

	ct, body = scrape("application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Errorf("OpenMetrics content type %q", ct)
	}
	if !strings.HasSuffix(body, "\n# EOF\n") {
		t.Errorf("OpenMetrics output not terminated by # EOF: ...%s", body[max(0, len(body)-200):])
	}
	want = `# HELP intake_reports Reports.
# TYPE intake_reports counter
intake_reports_total{format="dta"} 4.0
# HELP intake_up Up.
# TYPE intake_up gauge
intake_up 1.0
# EOF
`
	if got := onlyIntake(body); got != want {
		t.Errorf("OpenMetrics: got:\n%s\nwant:\n%s", got, want)
	}
}

// The hot path: a With'd Value update takes no lock and allocates nothing.
func BenchmarkValueAdd(b *testing.B) {
	v := NewRegistry().Counter("intake_bench_total", "x", "l").With("a")
	b.ReportAllocs()
	for b.Loop() {
		v.Add(3)
	}
	if v.Load() == 0 {
		b.Fatal("not counted")
	}
}

func TestValueAddAllocs(t *testing.T) {
	v := NewRegistry().Counter("intake_bench_total", "x", "l").With("a")
	g := NewRegistry().Gauge("intake_bench", "x").With()
	if n := testing.AllocsPerRun(1000, func() { v.Add(3); v.Inc(); g.Set(1.5); g.SetInt(2) }); n != 0 {
		t.Errorf("%v allocations per update", n)
	}
}

// The hot path counts in plain fields and publishes once per batch of 64; these measure that
// against an atomic add per event.
func BenchmarkBatchedInc(b *testing.B) {
	var v Value
	var n uint64
	for i := 0; b.Loop(); i++ {
		n++
		if i&63 == 63 {
			v.Add(n)
			n = 0
		}
	}
	v.Add(n)
}

func BenchmarkAtomicInc(b *testing.B) {
	var v Value
	for b.Loop() {
		v.Inc()
	}
}

// benchRegistry is a registry about the size of a running collector's: 60 families of 4
// series (With, Func and Collect), one histogram family of 16 switches × 32 buckets, and
// the Go and process collectors.
func benchRegistry() *Registry {
	r := NewRegistry()
	for i := range 60 {
		f := r.Counter("intake_bench_"+string(rune('a'+i/26))+string(rune('a'+i%26))+"_total", "Bench.", "listener")
		f.With("a").Add(uint64(i))
		f.With("b").Add(1)
		f.Func(func() float64 { return float64(i) }, "c")
		f.Collect(func(emit func(float64, ...string)) { emit(1, "d") })
	}
	buckets := map[float64]uint64{}
	for i := range 32 {
		buckets[float64(uint64(1)<<i)] = uint64(i)
	}
	r.Histogram("intake_bench_hist", "Bench.", "switch").Collect(func(emit func(uint64, float64, map[float64]uint64, ...string)) {
		for s := range 16 {
			emit(100, 1000, buckets, string(rune('a'+s)))
		}
	})
	return r
}

func BenchmarkScrapeWriteText(b *testing.B) {
	r := benchRegistry()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScrapeHandler(b *testing.B) {
	h := benchRegistry().Handler(nil)
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// TestTypeNames: the type names (the exposition's # TYPE words, generated by stringer from
// the line comments) as they were written by hand before.
func TestTypeNames(t *testing.T) {
	for typ, want := range map[Type]string{TypeCounter: "counter", TypeGauge: "gauge", TypeHistogram: "histogram"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", typ, got, want)
		}
	}
}
