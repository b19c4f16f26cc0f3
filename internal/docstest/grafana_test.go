package docstest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/record"
)

// series is what one measurement of intake's InfluxDB schema has: its tag keys and field
// keys.
type series struct{ tags, fields map[string]bool }

// influxSchema returns the measurements, tags and fields intake's InfluxDB sinks write in
// the default schema, from the lines they write: the events sink's, of every measurement and
// kind (a recorder stands where influxd would: it only keeps the request bodies), and the
// flow records' (influx.AppendRecordLines).
func influxSchema(t *testing.T) map[string]series {
	t.Helper()
	var mu sync.Mutex
	var body strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/write" {
			mu.Lock()
			body.Write(b)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := influx.DefaultConfig()
	cfg.URL, cfg.Gzip = srv.URL, false
	q := export.DefaultConfig().Batching()
	q.Flush = time.Millisecond
	sink := influx.New(cfg, q, export.SinkDeps{})
	if err := sink.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := event.FlowLatency; m < event.NumMeasurements; m++ {
		for _, k := range []event.Kind{event.KindNewKey, event.KindChange, event.KindPeriodic} {
			e := event.Event{Kind: k, Measurement: m, Time: int64(1e18) + int64(n), Value: 7, NPath: 2, Path: [event.MaxPath]uint32{1, 2}}
			if m.HasFlow() {
				e.Scope = event.ScopeE2E
			}
			sink.Offer(&e)
			n++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sink.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	lines, _ := influx.AppendRecordLines([]byte(body.String()), &record.Record{
		Packets: 3, LatCount: 1, LatLatest: 5, LatSum: 5,
		Hops: []record.HopRecord{{NodeID: 1, Latest: [record.NumMetrics]uint64{1, 2, 3}, Count: [record.NumMetrics]uint64{1, 1, 1}}},
	})
	schema := map[string]series{}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		// measurement,tag=v,... field=v,... time (no spaces or commas in intake's values
		// but the path strings', which are fields).
		head, rest, _ := strings.Cut(l, " ")
		parts := strings.Split(head, ",")
		s, ok := schema[parts[0]]
		if !ok {
			s = series{tags: map[string]bool{}, fields: map[string]bool{}}
			schema[parts[0]] = s
		}
		for _, tg := range parts[1:] {
			k, _, _ := strings.Cut(tg, "=")
			s.tags[k] = true
		}
		for _, f := range regexp.MustCompile(`(?:^|,)([a-z_]+)=`).FindAllStringSubmatch(rest, -1) {
			s.fields[f[1]] = true
		}
	}
	if len(schema) < int(event.NumMeasurements)+2 {
		t.Fatalf("the sinks wrote %d measurements: %v", len(schema), schema)
	}
	return schema
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name, Query, AllValue string
			Type                  string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Query    string `json:"query"`
			RawQuery bool   `json:"rawQuery"`
		} `json:"targets"`
	} `json:"panels"`
}

var (
	fromRe    = regexp.MustCompile(`FROM "([a-z_]+)"`)
	identRe   = regexp.MustCompile(`"([a-z_]+)"`)
	varRe     = regexp.MustCompile(`\$([a-zA-Z_]+)`)
	withKeyRe = regexp.MustCompile(`^SHOW TAG VALUES (?:FROM "([a-z_]+)" )?WITH KEY = "([a-z_]+)"`)
	flowKey   = []string{"src", "dst", "sport", "dport", "proto"}
)

// TestGrafanaDashboard: grafana/intake-influxdb.json parses; every panel's query reads a
// measurement intake writes and names only its tags and fields (the AS alias aside); a
// query that names any part of the flow key names all five, so that flows sharing hosts are
// not merged; every template variable's query asks for a tag intake writes, every variable
// a query uses is defined, and every variable is used. The queries' results against a real
// influxd are internal/export's TestInfluxDB1 (grafanaQueries). The switch and the flow's
// five parts are variables.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "grafana", "intake-influxdb.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/intake-influxdb.json: %v", err)
	}
	for _, msg := range checkDashboard(d, influxSchema(t)) {
		t.Error(msg)
	}
	// The switch and the flow (its whole key, a variable per part) can be picked.
	var names []string
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
	}
	if want := []string{"switch", "src", "sport", "dst", "dport", "proto"}; !slices.Equal(names, want) {
		t.Errorf("template variables %v, want %v", names, want)
	}
}

// checkDashboard returns what is wrong with d for schema.
func checkDashboard(d dashboard, schema map[string]series) []string {
	var errs []string
	defined := map[string]bool{"timeFilter": true, "__interval": true}
	used := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
		m := withKeyRe.FindStringSubmatch(v.Query)
		if m == nil {
			errs = append(errs, "variable "+v.Name+": "+v.Query+": not SHOW TAG VALUES ... WITH KEY")
			continue
		}
		found := false
		for name, s := range schema {
			found = found || (m[1] == "" || m[1] == name) && s.tags[m[2]]
		}
		if !found {
			errs = append(errs, "variable "+v.Name+": no measurement "+m[1]+" with tag "+m[2])
		}
		for _, u := range varRe.FindAllStringSubmatch(v.Query, -1) {
			used[u[1]] = true
		}
	}
	if len(d.Panels) == 0 {
		errs = append(errs, "no panels")
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			errs = append(errs, p.Title+": no query")
		}
		for _, tg := range p.Targets {
			q := tg.Query
			for _, u := range varRe.FindAllStringSubmatch(q, -1) {
				used[u[1]] = true
				if !defined[u[1]] {
					errs = append(errs, p.Title+": $"+u[1]+": no such variable")
				}
			}
			m := fromRe.FindStringSubmatch(q)
			if m == nil {
				errs = append(errs, p.Title+": "+q+": no FROM \"measurement\"")
				continue
			}
			s, ok := schema[m[1]]
			if !ok {
				errs = append(errs, p.Title+": measurement "+m[1]+": intake writes none")
				continue
			}
			alias := regexp.MustCompile(`AS "([a-z_]+)"`).FindStringSubmatch(q)
			var names []string
			for _, id := range identRe.FindAllStringSubmatch(q, -1) {
				if id[1] == m[1] || alias != nil && id[1] == alias[1] {
					continue
				}
				names = append(names, id[1])
				if !s.tags[id[1]] && !s.fields[id[1]] {
					errs = append(errs, p.Title+": "+id[1]+": neither a tag nor a field of "+m[1])
				}
			}
			some := slices.ContainsFunc(flowKey, func(k string) bool { return slices.Contains(names, k) })
			all := !slices.ContainsFunc(flowKey, func(k string) bool { return !slices.Contains(names, k) })
			if some && !all {
				errs = append(errs, p.Title+": names part of the flow key, not all of "+strings.Join(flowKey, ", ")+": flows that share hosts would be merged")
			}
			if i := strings.Index(q, "GROUP BY"); i >= 0 {
				var grouped []string
				for _, id := range identRe.FindAllStringSubmatch(q[i:], -1) {
					grouped = append(grouped, id[1])
				}
				gs := slices.ContainsFunc(flowKey, func(k string) bool { return slices.Contains(grouped, k) })
				ga := !slices.ContainsFunc(flowKey, func(k string) bool { return !slices.Contains(grouped, k) })
				if gs && !ga {
					errs = append(errs, p.Title+": groups by part of the flow key: flows that share hosts would be merged")
				}
			}
		}
	}
	for name := range defined {
		if !used[name] && name != "timeFilter" && name != "__interval" {
			errs = append(errs, "variable "+name+": no panel uses it")
		}
	}
	return errs
}

// TestGrafanaDashboardCatches: the check refuses a measurement intake does not write, a
// field it does not write, a grouping by part of the flow key (the dashboard's old flow hop
// latency panel), and an undefined variable.
func TestGrafanaDashboardCatches(t *testing.T) {
	schema := influxSchema(t)
	for q, want := range map[string]string{
		`SELECT last("value") FROM "flow_latencies" WHERE $timeFilter`:                                                                               "measurement flow_latencies: intake writes none",
		`SELECT last("latency") FROM "flow_latency" WHERE $timeFilter`:                                                                               "latency: neither a tag nor a field of flow_latency",
		`SELECT last("value") FROM "flow_hop_latency" WHERE $timeFilter GROUP BY time($__interval), "src", "dst", "switch_id"`:                       "names part of the flow key",
		`SELECT last("value") FROM "flow_latency" WHERE "src" =~ /a/ AND "sport" =~ /a/ AND "dport" =~ /a/ AND "proto" =~ /a/ GROUP BY "src", "dst"`: "groups by part of the flow key",
		`SELECT last("value") FROM "queue_occupancy" WHERE "switch_id" =~ /^$sw$/`:                                                                   "$sw: no such variable",
	} {
		var d dashboard
		d.Panels = append(d.Panels, struct {
			Title   string `json:"title"`
			Targets []struct {
				Query    string `json:"query"`
				RawQuery bool   `json:"rawQuery"`
			} `json:"targets"`
		}{Title: "p", Targets: []struct {
			Query    string `json:"query"`
			RawQuery bool   `json:"rawQuery"`
		}{{Query: q}}})
		errs := checkDashboard(d, schema)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("%s: %v, want an error with %q", q, errs, want)
		}
	}
}
