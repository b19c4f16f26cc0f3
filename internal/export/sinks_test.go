package export_test

import (
	"bytes"
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// TestInfluxDBTimestampINT: with export.influxdb.timestamp: int the points carry the INT
// data's own times, read back from a real influxd: a hop's value its egress timestamp, a
// flow's value the report's ingress timestamp; with gzip off (the other tests send gzip).
func TestInfluxDBTimestampINT(t *testing.T) {
	s := startInflux(t)
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database, cfg.InfluxDB.Timestamp, cfg.InfluxDB.Gzip = s.url, "inttime", "int", false
	d, bus := detector()
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: metrics.NewRegistry(), Ring: 1024})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	// Device clock: 7 s after base, a report each 10 µs; hop 1 leaves 1500 ns after the
	// report's ingress time, hop 2 2500 ns; hop 1's latency jumps by 100 (an event).
	dev := uint64(base) + 7*uint64(time.Second)
	for i, lat := range []uint32{100, 200} {
		var r telemetry.Report
		r.Has = telemetry.HasFlow | telemetry.HasIngressTS
		r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
		r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 1000, 80, 6
		r.RecvTime = base + int64(i)*int64(time.Second)
		r.IngressTS = dev + uint64(i)*10000
		for _, h := range []struct {
			node, lat uint32
			egress    uint64
		}{{2, 30, 2500}, {1, lat, 1500}} {
			th := r.AddHop()
			th.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FEgressTS
			th.NodeID, th.HopLatency, th.EgressTS = h.node, h.lat, r.IngressTS+h.egress
		}
		d.Process(0, &r)
	}
	d.Flush(0)
	testutil.Eventually(t, 10*time.Second, "events through the pipeline", func() bool { ev, _ := p.Offered(); return ev == 6 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p.Stop(ctx)
	in := p.Sinks()[0].(*influx.Sink)
	if st := in.SinkStatus(); st.Sent != 12 || in.Dropped() != 0 {
		t.Fatalf("sink status %+v, want 12 sent", st)
	}
	ns := func(off uint64) string { return strconv.FormatUint(dev+off, 10) }
	got := influxQuery(t, s, "inttime", `SELECT value FROM flow_hop_latency GROUP BY switch_id`)
	want := "flow_hop_latency [time value]\n  [" + ns(1500) + " 100]\n  [" + ns(11500) + " 200]\n" +
		"flow_hop_latency [time value]\n  [" + ns(2500) + " 30]\n"
	if got != want {
		t.Errorf("flow_hop_latency:\n%s\nwant\n%s", got, want)
	}
	got = influxQuery(t, s, "inttime", `SELECT value FROM flow_latency`)
	want = "flow_latency [time value]\n  [" + ns(0) + " 130]\n  [" + ns(10000) + " 230]\n"
	if got != want {
		t.Errorf("flow_latency:\n%s\nwant\n%s", got, want)
	}
}

// TestGaugesSeriesLimit: the /metrics gauges hold at most series_limit keys; a value of a
// further key is dropped and counted, an expired key's series is deleted and frees its place.
func TestGaugesSeriesLimit(t *testing.T) {
	reg, counters := metrics.NewRegistry(), metrics.NewRegistry()
	g := prom.NewGauges(reg, 2, counters)
	ev := func(kind event.Kind, sw uint32, v uint64) *event.Event {
		e := &event.Event{Kind: kind, Measurement: event.QueueOccupancy, Value: v}
		e.Key.Switch, e.Key.Queue = sw, 1
		return e
	}
	g.Offer(ev(event.KindNewKey, 1, 10))
	g.Offer(ev(event.KindNewKey, 2, 20))
	g.Offer(ev(event.KindNewKey, 3, 30)) // over the limit
	g.Offer(ev(event.KindChange, 1, 11))
	g.Offer(ev(event.KindExpire, 2, 20))
	g.Offer(ev(event.KindPeriodic, 3, 31)) // fits now
	text := func(r *metrics.Registry, prefix string) string {
		var b bytes.Buffer
		r.WriteText(&b)
		var out []string
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, prefix) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if got, want := text(reg, "intake_queue_occupancy{"), `intake_queue_occupancy{queue_id="1",switch_id="1"} 11
intake_queue_occupancy{queue_id="1",switch_id="3"} 31`; got != want {
		t.Errorf("gauges:\n%s\nwant\n%s", got, want)
	}
	if got, want := text(counters, "intake_export_"), `intake_export_dropped_points_total{reason="series_limit",sink="prometheus"} 1
intake_export_gauge_series 2
intake_export_sent_points_total{sink="prometheus"} 4`; got != want {
		t.Errorf("counters:\n%s\nwant\n%s", got, want)
	}
	if st := g.SinkStatus(); st.Sent != 4 || st.Dropped["series_limit"] != 1 {
		t.Errorf("sink status %+v", st)
	}
}
