package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// The servers these tests start are Debian's (docs/design.md, "Real components").
func need(t *testing.T, bin, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		if testing.Short() {
			t.Skipf("%s not installed (-short)", bin)
		}
		t.Fatalf("%s not found: install it with: apt-get install -y %s (or run ./test, which installs what the tests need)", bin, pkg)
	}
	return p
}

// server is a started child process, stopped at the test's end.
type server struct {
	cmd  *exec.Cmd
	url  string
	args []string
	bin  string
	log  *os.File
}

func (s *server) start(t *testing.T, ready string) {
	t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, s.bin+" ready", func() bool {
		resp, err := http.Get(s.url + ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode/100 == 2
	})
}

func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// terminate stops the server with SIGTERM and waits until it has exited (it persists what
// it acknowledged on the way out).
func (s *server) terminate(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
		s.cmd = nil
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
		s.cmd = nil
		t.Fatalf("%s did not exit within 30s of SIGTERM", s.bin)
	}
}

func newServer(t *testing.T, bin string, args []string, port int) *server {
	f, err := os.Create(filepath.Join(t.TempDir(), filepath.Base(bin)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{bin: bin, args: args, url: fmt.Sprintf("http://127.0.0.1:%d", port), log: f}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			t.Logf("%s log:\n%s", bin, tail(string(b), 3000))
		}
		f.Close()
	})
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func startInflux(t *testing.T) *server {
	bin := need(t, "influxd", "influxdb")
	dir := t.TempDir()
	port, rpc := testutil.FreePort(t), testutil.FreePort(t)
	conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = "%s/meta"
[data]
  dir = "%s/data"
  wal-dir = "%s/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:%d"
  log-enabled = false
[monitor]
  store-enabled = false
[subscriber]
  enabled = false
[continuous_queries]
  enabled = false
[logging]
  level = "error"
`, rpc, dir, dir, dir, port)
	cf := filepath.Join(dir, "influxdb.conf")
	os.WriteFile(cf, []byte(conf), 0o644)
	s := newServer(t, bin, []string{"-config", cf}, port)
	s.start(t, "/ping")
	return s
}

func startVM(t *testing.T) *server {
	bin := need(t, "victoria-metrics", "victoria-metrics")
	port := testutil.FreePort(t)
	s := newServer(t, bin, []string{"-httpListenAddr", fmt.Sprintf("127.0.0.1:%d", port),
		"-storageDataPath", t.TempDir(), "-loggerLevel", "ERROR", "-search.latencyOffset", "0s", "-search.disableCache"}, port)
	s.start(t, "/health")
	return s
}

func startPrometheus(t *testing.T, scrape string) *server {
	bin := need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	port := testutil.FreePort(t)
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: intake\n    static_configs:\n      - targets: ['%s']\n", scrape)
	cf := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cf, []byte(conf), 0o644)
	s := newServer(t, bin, []string{"--config.file", cf, "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--storage.tsdb.path", filepath.Join(dir, "data"), "--web.enable-remote-write-receiver", "--log.level", "error"}, port)
	s.start(t, "/-/ready")
	return s
}

// The known report sequence: one flow over switches 1 and 2, three reports a second apart.
// Hop latency of switch 1: 100, 120 (|Δ| 20 ≤ 50: no event), 200 (|200−100| > 50: change).
var base = time.Now().Add(-time.Minute).Truncate(time.Second).UnixNano()

func report(i int, lat1 uint32) *telemetry.Report {
	var r telemetry.Report
	r.Has = telemetry.HasFlow
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 1000, 80, 6
	r.RecvTime = base + int64(i)*int64(time.Second)
	for _, h := range []struct{ node, lat uint32 }{{2, 30}, {1, lat1}} { // newest first
		th := r.AddHop()
		th.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy
		th.NodeID, th.HopLatency, th.QueueID, th.QueueOccupancy = h.node, h.lat, 3, 10*h.node
	}
	return &r
}

func detector() (*detect.Detector, *event.Bus) {
	bus := &event.Bus{}
	cfg := detect.DefaultConfig()
	cfg.Shards = 4
	return detect.New(cfg, detect.Deps{Bus: bus}), bus
}

func exportConfig() config.Export {
	c := config.DefaultExport()
	c.Period = 0
	c.Flush = 50 * time.Millisecond
	c.BackoffMin, c.BackoffMax = 20*time.Millisecond, 200*time.Millisecond
	c.Prometheus.Gauges = false
	return c
}

// run feeds the known sequence through a detector and a pipeline, pushes once at t=3 s and
// stops the pipeline, which flushes every sink.
func run(t *testing.T, cfg config.Export, reg, gauges *metrics.Registry) *testPipeline {
	t.Helper()
	d, bus := detector()
	p, err := newPipeline(cfg, gauges, export.Deps{Bus: bus, Source: d, Metrics: reg, Values: func() uint64 { return d.Stats().Values }, Ring: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, lat := range []uint32{100, 120, 200} {
		d.Process(0, report(i, lat))
	}
	d.Flush(0)
	testutil.Eventually(t, 10*time.Second, "events through the pipeline", func() bool { ev, _ := p.Offered(); return ev == 8 })
	p.PushNow(base + 3*int64(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s: %s", u, resp.Status, b)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v: %s", u, err, b)
	}
}

// influxResult is the answer of InfluxDB 1.x's /query.
type influxResult struct {
	Results []struct {
		Series []struct {
			Name    string   `json:"name"`
			Columns []string `json:"columns"`
			Values  [][]any  `json:"values"`
		} `json:"series"`
		Error string `json:"error"`
	} `json:"results"`
}

func influxQuery(t *testing.T, s *server, db, q string) string {
	var r influxResult
	getJSON(t, s.url+"/query?"+url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}}.Encode(), &r)
	var b strings.Builder
	for _, res := range r.Results {
		if res.Error != "" {
			t.Fatalf("%s: %s", q, res.Error)
		}
		for _, se := range res.Series {
			fmt.Fprintf(&b, "%s %v\n", se.Name, se.Columns)
			for _, v := range se.Values {
				fmt.Fprintf(&b, "  %v\n", v)
			}
		}
	}
	return b.String()
}

func sec(i int) string { return fmt.Sprint(base + int64(i)*int64(time.Second)) }

// TestInfluxDB1 writes the known sequence through the 1.x API into a database the sink
// creates, in both schemas, and reads back exactly the points the rules say.
func TestInfluxDB1(t *testing.T) {
	s := startInflux(t)
	for _, schema := range []string{"intake", "intcollector"} {
		cfg := exportConfig()
		cfg.InfluxDB.URL, cfg.InfluxDB.Database, cfg.InfluxDB.Schema = s.url, "db_"+schema, schema
		p := run(t, cfg, metrics.NewRegistry(), nil)
		in := p.Sinks()[0].(*influx.Sink)
		// 8 events: new keys path, flow latency, 2 hop latencies, 2 queues; 2 changes.
		if in.Dropped() != 0 || in.Sent.Load() == 0 {
			t.Fatalf("%s: sent %d dropped %d", schema, in.Sent.Load(), in.Dropped())
		}
		db := "db_" + schema
		if schema == "intake" {
			got := influxQuery(t, s, db, `SELECT value FROM flow_hop_latency WHERE switch_id = '1'`)
			want := "flow_hop_latency [time value]\n  [" + sec(0) + " 100]\n  [" + sec(2) + " 200]\n  [" + sec(3) + " 200]\n"
			if got != want {
				t.Errorf("flow_hop_latency:\n%s\nwant\n%s", got, want)
			}
			got = influxQuery(t, s, db, `SELECT value FROM flow_path`)
			want = "flow_path [time value]\n  [" + sec(0) + " 1:2]\n  [" + sec(3) + " 1:2]\n"
			if got != want {
				t.Errorf("flow_path:\n%s\nwant\n%s", got, want)
			}
			got = influxQuery(t, s, db, `SELECT kind, metric, prev, value, threshold FROM events WHERE kind = 'change'`)
			want = "events [time kind metric prev value threshold]\n" +
				"  [" + sec(2) + " change flow_hop_latency 100 200 50]\n" +
				"  [" + sec(2) + " change flow_latency 130 230 50]\n"
			if got != want {
				t.Errorf("events:\n%s\nwant\n%s", got, want)
			}
			got = influxQuery(t, s, db, `SELECT value FROM queue_occupancy GROUP BY switch_id, queue_id`)
			want = "queue_occupancy [time value]\n  [" + sec(0) + " 10]\n  [" + sec(3) + " 10]\nqueue_occupancy [time value]\n  [" + sec(0) + " 20]\n  [" + sec(3) + " 20]\n"
			if got != want {
				t.Errorf("queue_occupancy:\n%s\nwant\n%s", got, want)
			}
			// Points: 8 events × 2 (value and event) + 6 periodic values.
			if n := in.Sent.Load(); n != 8*2+6 {
				t.Errorf("sent %d points, want %d", n, 8*2+6)
			}
			grafanaQueries(t, s, db)
		} else {
			got := influxQuery(t, s, db, `SELECT * FROM "flow_stat,10.0.0.1:1000->10.0.1.2:80,proto=6"`)
			want := "flow_stat,10.0.0.1:1000->10.0.1.2:80,proto=6 [time flow_latency path]\n  [" + sec(0) + " 130 1:2]\n  [" + sec(2) + " 230 <nil>]\n  [" + sec(3) + " 230 1:2]\n"
			if got != want {
				t.Errorf("flow_stat:\n%s\nwant\n%s", got, want)
			}
			got = influxQuery(t, s, db, `SELECT * FROM "queue_occupancy,sw_id=2,queue_id=3"`)
			want = "queue_occupancy,sw_id=2,queue_id=3 [time value]\n  [" + sec(0) + " 20]\n  [" + sec(3) + " 20]\n"
			if got != want {
				t.Errorf("queue_occupancy:\n%s\nwant\n%s", got, want)
			}
		}
	}
}

// vmExport returns name's samples in VictoriaMetrics as "labels: value@ms ..." lines.
func vmExport(t *testing.T, s *server, match string) string {
	http.Get(s.url + "/internal/force_flush")
	resp, err := http.Get(s.url + "/api/v1/export?" + url.Values{"match[]": {match}, "end": {fmt.Sprint(time.Now().Add(time.Hour).Unix())}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r struct {
			Values     []float64 `json:"values"`
			Timestamps []int64   `json:"timestamps"`
		}
		json.Unmarshal([]byte(line), &r)
		var vs []string
		for i := range r.Values {
			vs = append(vs, fmt.Sprintf("%g@%d", r.Values[i], r.Timestamps[i]))
		}
		out = append(out, strings.Join(vs, " "))
	}
	return strings.Join(out, "\n")
}

func ms(i int) int64 { return (base + int64(i)*int64(time.Second)) / 1e6 }

// TestVictoriaMetrics: the InfluxDB 2.x API (/api/v2/write) and remote write, both into
// VictoriaMetrics, read back through its export API.
func TestVictoriaMetrics(t *testing.T) {
	s := startVM(t)
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.API, cfg.InfluxDB.Database = s.url, "v2", "intake"
	cfg.Prometheus.RemoteWrite = s.url + "/api/v1/write"
	p := run(t, cfg, metrics.NewRegistry(), nil)
	for _, sk := range p.Sinks() {
		if d := sk.(interface{ Dropped() uint64 }).Dropped(); d != 0 {
			t.Errorf("%s dropped %d", sk.(export.StatusSink).SinkStatus().Name, d)
		}
	}
	want := fmt.Sprintf("100@%d 200@%d 200@%d", ms(0), ms(2), ms(3))
	for _, match := range []string{`flow_hop_latency_value{switch_id="1"}`, `intake_flow_hop_latency{switch_id="1"}`} {
		var got string
		testutil.Eventually(t, 20*time.Second, match+" in VictoriaMetrics", func() bool { got = vmExport(t, s, match); return got == want })
	}
}

// TestPrometheus: remote write into Prometheus's receiver, and Prometheus scraping the
// gauges of the latest values from a /metrics endpoint.
func TestPrometheus(t *testing.T) {
	reg := metrics.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", metrics.ContentType)
		reg.WriteText(w)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	s := startPrometheus(t, ln.Addr().String())
	cfg := exportConfig()
	cfg.Prometheus.Gauges = true
	cfg.Prometheus.RemoteWrite = s.url + "/api/v1/write"
	p := run(t, cfg, reg, reg)
	for _, sk := range p.Sinks() {
		if d, ok := sk.(interface{ Dropped() uint64 }); ok && d.Dropped() != 0 {
			t.Errorf("%s dropped %d", sk.(export.StatusSink).SinkStatus().Name, d.Dropped())
		}
	}
	query := func(q string) string {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
					Values [][]any           `json:"values"`
				} `json:"result"`
			} `json:"data"`
		}
		getJSON(t, s.url+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), &r)
		var out []string
		for _, res := range r.Data.Result {
			if res.Value != nil {
				out = append(out, fmt.Sprint(res.Value[1]))
			}
			for _, v := range res.Values {
				ts, _ := v[0].(json.Number).Float64()
				out = append(out, fmt.Sprintf("%v@%d", v[1], int64(ts*1000+0.5)))
			}
		}
		return strings.Join(out, " ")
	}
	want := fmt.Sprintf("100@%d 200@%d 200@%d", ms(0), ms(2), ms(3))
	var got string
	testutil.Eventually(t, 20*time.Second, "remote-written samples in Prometheus", func() bool {
		got = query(`intake_flow_hop_latency{switch_id="1",job=""}[10m]`)
		return got == want
	})
	testutil.Eventually(t, 30*time.Second, "scraped gauge in Prometheus", func() bool {
		got = query(`intake_flow_hop_latency{switch_id="1",job="intake",src="10.0.0.1",dport="80"}`)
		return got == "200"
	})
	if got := query(`intake_flow_latency{job="intake"}`); got != "230" {
		t.Errorf("flow latency gauge %q, want 230", got)
	}
}
