package export_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
)

// sameTimeReports feeds a detector n reports of one flow that all carry one receive time
// (the reports of one datagram), switch 1's hop latency swinging by 200 each time: every
// report raises a change of flow_hop_latency and of flow_latency, all of one series and
// one time. It returns the pipeline, stopped (every sink flushed).
func sameTimeReports(t *testing.T, cfg config.Export, n int) *testPipeline {
	t.Helper()
	d, bus := detector()
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: metrics.NewRegistry(), Ring: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := report(5, uint32(100+200*(i%2)))
		d.Process(0, r)
	}
	d.Flush(0)
	// new keys: path, flow latency, 2 hop latencies, 2 queues; then 2 changes a report.
	want := uint64(6 + 2*(n-1))
	testutil.Eventually(t, 10*time.Second, "events through the pipeline", func() bool { ev, _ := p.Offered(); return ev == want })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInfluxDBSameTime: events of one series with one receive time all reach InfluxDB as
// points of their own (a series' points at strictly increasing nanoseconds): the points the
// sink counts as sent are the points the server stores, in both schemas.
func TestInfluxDBSameTime(t *testing.T) {
	s := startInflux(t)
	const n = 200
	for _, schema := range []string{"intake", "intcollector"} {
		cfg := exportConfig()
		cfg.InfluxDB.URL, cfg.InfluxDB.Database, cfg.InfluxDB.Schema = s.url, "same_"+schema, schema
		p := sameTimeReports(t, cfg, n)
		in := p.Sinks()[0].(*influx.Sink)
		sent := in.Sent.Load()
		if in.Dropped() != 0 || sent == 0 {
			t.Fatalf("%s: sent %d dropped %d", schema, sent, in.Dropped())
		}
		// intcollector's flow_stat keeps a flow's latency and path as two fields of one
		// point: there every field is a point sent.
		stored := influxPoints(t, s, "same_"+schema, schema == "intcollector")
		if stored != sent {
			t.Errorf("%s: %d points sent, %d stored", schema, sent, stored)
		}
		// The changes of switch 1's hop latency: one point each, n in all with the new key,
		// at the report's time and the n-1 nanoseconds after it.
		q := `SELECT value FROM flow_hop_latency WHERE switch_id = '1'`
		if schema == "intcollector" {
			q = `SELECT value FROM "flow_hop_latency,10.0.0.1:1000->10.0.1.2:80,proto=6,sw_id=1"`
		}
		rows := influxRows(t, s, "same_"+schema, q)
		if len(rows) != n {
			t.Fatalf("%s: %d points of switch 1's hop latency, want %d", schema, len(rows), n)
		}
		t0 := base + 5*int64(time.Second)
		for i, r := range rows {
			if r.t != t0+int64(i) || r.v != strconv.Itoa(100+200*(i%2)) {
				t.Fatalf("%s: point %d at %d value %s, want at %d value %d", schema, i, r.t, r.v, t0+int64(i), 100+200*(i%2))
			}
		}
	}
}

// TestRemoteWriteSameTime: through Prometheus remote write, whose samples have milliseconds,
// the samples of one series and one millisecond are all stored, a millisecond apart (a
// second sample at one time is refused by Prometheus and was lost with its whole batch).
func TestRemoteWriteSameTime(t *testing.T) {
	s := startPrometheus(t, "127.0.0.1:1")
	const n = 50
	cfg := exportConfig()
	cfg.Prometheus.RemoteWrite = s.url + "/api/v1/write"
	p := sameTimeReports(t, cfg, n)
	rw := p.Sinks()[0].(*prom.RemoteWrite)
	if st := rw.SinkStatus(); rw.Dropped() != 0 || st.Sent == 0 {
		t.Fatalf("remote write: %+v", st)
	}
	var got int
	testutil.Eventually(t, 20*time.Second, "remote-written samples in Prometheus", func() bool {
		var r struct {
			Data struct {
				Result []struct {
					Values [][]any `json:"values"`
				} `json:"result"`
			} `json:"data"`
		}
		getJSON(t, s.url+"/api/v1/query?"+url.Values{"query": {`intake_flow_hop_latency{switch_id="1"}[1h]`}}.Encode(), &r)
		got = 0
		for _, res := range r.Data.Result {
			got += len(res.Values)
		}
		return got == n
	})
}

type influxRow struct {
	t int64
	v string
}

// influxRows returns the time and value of the rows of a one-column query, in time order.
func influxRows(t *testing.T, s *server, db, q string) []influxRow {
	t.Helper()
	var r struct {
		Results []struct {
			Series []struct {
				Values [][]json.Number `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	getJSON(t, s.url+"/query?"+url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}}.Encode(), &r)
	var rows []influxRow
	for _, res := range r.Results {
		for _, se := range res.Series {
			for _, v := range se.Values {
				ts, _ := v[0].Int64()
				rows = append(rows, influxRow{ts, v[1].String()})
			}
		}
	}
	return rows
}

// influxPoints counts every point stored in db: the rows of SELECT * per measurement (a row
// a point, with the fields it has; one query over all measurements would leave out those
// whose field types clash), or with fields, the fields the rows hold.
func influxPoints(t *testing.T, s *server, db string, fields bool) uint64 {
	t.Helper()
	type result struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	query := func(q string) result {
		var r result
		getJSON(t, s.url+"/query?"+url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}}.Encode(), &r)
		return r
	}
	var n uint64
	for _, res := range query("SHOW MEASUREMENTS").Results {
		for _, se := range res.Series {
			for _, m := range se.Values {
				for _, res := range query(`SELECT * FROM "` + strings.ReplaceAll(m[0].(string), `"`, `\"`) + `"`).Results {
					for _, se := range res.Series {
						if !fields {
							n += uint64(len(se.Values))
							continue
						}
						for _, row := range se.Values {
							for _, v := range row[1:] {
								if v != nil {
									n++
								}
							}
						}
					}
				}
			}
		}
	}
	return n
}
