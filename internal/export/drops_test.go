package export_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
)

// TestInfluxDBRejected: a real influxd refuses the points of one measurement (its value
// field already has another type) and stores the rest of each batch ("partial write"): the
// sink counts exactly the refused points as dropped (rejected), the others as sent, and the
// server holds exactly the sent.
func TestInfluxDBRejected(t *testing.T) {
	s := startInflux(t)
	resp, err := http.PostForm(s.url+"/query", url.Values{"q": {"CREATE DATABASE conflict"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CREATE DATABASE: %s %s", resp.Status, b)
	}
	testutil.Eventually(t, 10*time.Second, "database conflict listed", func() bool {
		return strings.Contains(influxQuery(t, s, "", "SHOW DATABASES"), "[conflict]")
	})
	// flow_hop_latency's value becomes a float: intake's integer values conflict.
	resp, err = http.Post(s.url+"/write?db=conflict&precision=ns", "text/plain",
		strings.NewReader("flow_hop_latency,switch_id=99 value=1.5 "+sec(0)+"\n"))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("seed write: %v %v", err, resp)
	}
	resp.Body.Close()
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = s.url, "conflict"
	reg := metrics.NewRegistry()
	p := run(t, cfg, reg, nil)
	in := p.Sinks()[0].(*influx.Sink)
	// 22 points (8 events × 2 + 6 periodic); flow_hop_latency: 2 new keys, 1 change, 2
	// periodic values refused.
	st := in.SinkStatus()
	if st.Sent != 17 || st.Dropped["rejected"] != 5 || st.Dropped["queue_full"] != 0 || st.Dropped["shutdown"] != 0 || st.Retried != 0 {
		t.Errorf("sink status %+v, want 17 sent, 5 rejected", st)
	}
	var got strings.Builder
	for _, m := range []string{"events", "flow_hop_latency", "flow_latency", "flow_path", "queue_occupancy"} {
		got.WriteString(influxQuery(t, s, "conflict", `SELECT count(*) FROM "`+m+`"`))
	}
	want := "events [time count_path count_prev count_threshold count_value]\n  [0 1 7 2 7]\n" +
		"flow_hop_latency [time count_value]\n  [0 1]\n" + // the seed point alone
		"flow_latency [time count_value]\n  [0 3]\n" +
		"flow_path [time count_value]\n  [0 2]\n" +
		"queue_occupancy [time count_value]\n  [0 4]\n"
	if got.String() != want {
		t.Errorf("stored:\n%s\nwant\n%s", got.String(), want)
	}
}

// TestSinkAbsentShutdown: with nothing listening at the sink's URL, the points are retried
// until the pipeline stops; past the stop deadline every point still held is counted as
// dropped at shutdown, none lost from the counters, and ingest never waited.
func TestSinkAbsentShutdown(t *testing.T) {
	cfg := exportConfig()
	cfg.InfluxDB.URL = "http://127.0.0.1:" + strconv.Itoa(testutil.FreePort(t)) // nobody listens
	d, bus := detector()
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: metrics.NewRegistry(), Ring: 1024})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	for i, lat := range []uint32{100, 120, 200} {
		d.Process(0, report(i, lat))
	}
	d.Flush(0)
	in := p.Sinks()[0].(*influx.Sink)
	testutil.Eventually(t, 10*time.Second, "events through the pipeline and a retry", func() bool {
		ev, _ := p.Offered()
		return ev == 8 && in.Retried.Load() > 0
	})
	p.PushNow(base + 3*int64(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p.Stop(ctx)
	st := in.SinkStatus()
	if st.Sent != 0 || st.Dropped["shutdown"] != 22 || st.Dropped["rejected"] != 0 || st.Dropped["queue_full"] != 0 || st.Queued != 0 {
		t.Errorf("sink status %+v, want 22 dropped at shutdown", st)
	}
}
