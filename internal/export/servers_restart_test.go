package export_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
)

// TestSinkRestart: VictoriaMetrics is killed while the detector keeps processing and the
// pipeline keeps offering; a small queue overflows. After a restart on the same port and
// data, every point is sent or counted as dropped, and the server holds exactly the sent.
func TestSinkRestart(t *testing.T) {
	s := startVM(t)
	cfg := exportConfig()
	cfg.Queue = 20
	cfg.InfluxDB.URL, cfg.InfluxDB.Database, cfg.InfluxDB.Batch = s.url, "intake", 10
	d, bus := detector()
	d.SetThreshold(event.KindChange, event.FlowHopLatency, 0) // every change of switch 1's latency is an event
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: metrics.NewRegistry(), Ring: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	in := p.Sinks()[0].(*influx.Sink)
	i := 0
	feed := func(n int) {
		for end := i + n; i < end; i++ {
			d.Process(0, report(i, uint32(1000+i)))
		}
		d.Flush(0)
	}
	offered := func() uint64 { // points: 2 per event (value and event)
		ev, per := p.Offered()
		return 2*ev + per
	}
	feed(10)
	testutil.Eventually(t, 10*time.Second, "first points sent", func() bool { return in.Sent.Load() == offered() })
	// The sink goes away with SIGTERM, not SIGKILL: VictoriaMetrics acknowledges a write
	// before its index and data reach the disk (about a second later), so SIGKILL loses
	// points it acknowledged, which no client can count (here, every point sent before the
	// kill, in 4 runs out of 5). What is tested is intake's side: the server absent mid-run.
	s.terminate(t)
	start := time.Now()
	feed(200) // 200 events, far more than the queue holds while the sink is down
	if el := time.Since(start); el > time.Second {
		t.Errorf("processing 200 reports with the sink down took %s", el)
	}
	if d.Stats().Reports != 210 {
		t.Fatalf("detector processed %d reports, want 210", d.Stats().Reports)
	}
	testutil.Eventually(t, 10*time.Second, "retries and queue drops", func() bool { return in.Retried.Load() > 0 && in.DropQueue.Load() > 0 })
	s.start(t, "/health")
	testutil.Eventually(t, 30*time.Second, "sent+dropped = offered", func() bool { return in.Sent.Load()+in.Dropped() == offered() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Stop(ctx)
	// The server holds exactly the sent points: value points plus event points (an event
	// point is events_value, or events_path for a path event; VictoriaMetrics keeps string
	// fields as series of their own).
	count := func(match string) int {
		got := vmExport(t, s, match)
		if got == "" {
			return 0
		}
		return len(strings.Fields(got))
	}
	var n int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n = count(`{__name__=~"flow_.*_value|queue_.*_value"}`) + count(`events_value`) + count(`events_path`)
		if uint64(n) == in.Sent.Load() {
			break
		}
	}
	if uint64(n) != in.Sent.Load() || in.Sent.Load() == 0 {
		resp, _ := http.Get(s.url + "/api/v1/label/__name__/values")
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("stored %d points, sent %d; names %s", n, in.Sent.Load(), b)
	}
	t.Logf("offered %d, sent %d, retried %d, dropped %d (queue full %d)", offered(), in.Sent.Load(), in.Retried.Load(), in.Dropped(), in.DropQueue.Load())
}

// grafanaQueries runs every query of the dashboard in grafana/ against the database, with
// Grafana's macros filled in as Grafana would for a range that covers the test's data, and
// checks what each panel would show: 1 series per flow or key, the path as a string, the
// events in time order.
func grafanaQueries(t *testing.T, s *server, db string) {
	t.Helper()
	b, err := os.ReadFile("../../grafana/intake-influxdb.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name     string `json:"name"`
				Query    string `json:"query"`
				AllValue string `json:"allValue"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	// The template variables at "All" (their allValue, as Grafana puts it in a regex); each
	// variable's own query lists the values the test's points carry.
	rs := []string{"$timeFilter", "time >= " + sec(0) + " AND time <= " + sec(3), "$__interval", "1s"}
	for _, v := range dash.Templating.List {
		rs = append(rs, "$"+v.Name, v.AllValue)
	}
	macros := strings.NewReplacer(rs...)
	values := map[string]string{}
	for _, v := range dash.Templating.List {
		for _, l := range strings.Split(influxQuery(t, s, db, macros.Replace(v.Query)), "\n") {
			// Grafana keeps each value once (one series per measurement answers).
			if f := strings.Fields(strings.Trim(l, " []")); len(f) == 2 && !strings.Contains(l, "[key value]") && !strings.Contains(values[v.Name], f[1]+" ") {
				values[v.Name] += f[1] + " "
			}
		}
	}
	wantValues := map[string]string{"switch": "1 2 ", "src": "10.0.0.1 ", "sport": "1000 ", "dst": "10.0.1.2 ", "dport": "80 ", "proto": "6 "}
	if !maps.Equal(values, wantValues) {
		t.Errorf("template variables' values: %v, want %v", values, wantValues)
	}
	got := map[string]string{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out := influxQuery(t, s, db, macros.Replace(tg.Query))
			got[p.Title] = out
		}
	}
	// A panel per measurement, the series it draws: header lines only (the values per
	// interval are fill(previous) rows, checked for flow paths and events).
	series := func(title string) []string {
		var hs []string
		for _, l := range strings.Split(got[title], "\n") {
			if l != "" && !strings.HasPrefix(l, " ") {
				hs = append(hs, l)
			}
		}
		return hs
	}
	for title, n := range map[string]int{"Flow latency": 1, "Flow hop latency": 2, "Queue occupancy": 2, "Tx utilization": 0, "Events per kind": 2} {
		if hs := series(title); len(hs) != n {
			t.Errorf("panel %q: %d series, want %d:\n%s", title, len(hs), n, got[title])
		}
	}
	if want := "flow_path [time path]\n  [" + sec(3) + " 1:2]\n"; got["Flow paths"] != want {
		t.Errorf("panel Flow paths:\n%s\nwant\n%s", got["Flow paths"], want)
	}
	// Events, newest first; rows of one time in the server's order, so compared as a set.
	rows := strings.Split(strings.TrimSuffix(got["Events"], "\n"), "\n")
	want := []string{
		"events [time kind metric scope switch_id prev value threshold path]",
		"  [" + sec(2) + " change flow_hop_latency switch 1 100 200 50 <nil>]",
		"  [" + sec(2) + " change flow_latency e2e <nil> 130 230 50 <nil>]",
		"  [" + sec(0) + " new_key flow_hop_latency switch 1 0 100 <nil> <nil>]",
		"  [" + sec(0) + " new_key flow_hop_latency switch 2 0 30 <nil> <nil>]",
		"  [" + sec(0) + " new_key flow_latency e2e <nil> 0 130 <nil> <nil>]",
		"  [" + sec(0) + " new_key flow_path e2e <nil> <nil> <nil> <nil> 1:2]",
		"  [" + sec(0) + " new_key queue_occupancy switch 1 0 10 <nil> <nil>]",
		"  [" + sec(0) + " new_key queue_occupancy switch 2 0 20 <nil> <nil>]",
	}
	sorted := append([]string{rows[0]}, rows[1:]...)
	sort.Slice(sorted[1:], func(i, j int) bool {
		a, b := sorted[1+i], sorted[1+j]
		if a[:22] != b[:22] { // the time: newest first
			return a[:22] > b[:22]
		}
		return a < b
	})
	if strings.Join(sorted, "\n") != strings.Join(want, "\n") || !sort.SliceIsSorted(rows[1:], func(i, j int) bool { return rows[1+i][:22] > rows[1+j][:22] }) {
		t.Errorf("panel Events:\n%s\nwant (in any order within a time)\n%s", got["Events"], strings.Join(want, "\n"))
	}
	if len(got) != 7 {
		t.Errorf("%d panels with queries, want 7: %v", len(got), got)
	}
}
