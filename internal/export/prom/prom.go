// Package prom is the Prometheus sinks (export.prometheus): the latest value of every live
// key as a gauge on intake's /metrics (Gauges), and remote write of every value
// (RemoteWrite) through export's bounded, batching, retrying queue (export.Queued).
// INTCollector's time-series export (§III-E) in the form Prometheus and its remote-write
// receivers (VictoriaMetrics) take.
package prom

import (
	"context"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang/snappy"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/metrics"
)

// dropSeriesLimit is the gauges' drop reason: a value of a key beyond
// export.prometheus.series_limit.
const dropSeriesLimit = "series_limit"

// promName is the Prometheus metric name of a measurement: intake_<measurement>. flow_path
// has no numeric value and is not exported to Prometheus.
func promName(m event.Measurement) string { return "intake_" + m.String() }

// Gauges keeps the latest value of every live key as a gauge in a metrics registry (the
// one /metrics serves), at most limit series; values of keys beyond the limit are dropped
// and counted. Expired keys' series are deleted.
type Gauges struct {
	reg     *metrics.Registry
	limit   int
	fams    [event.NumMeasurements]*metrics.Family
	series  map[string]*metrics.Value
	Dropped atomic.Uint64
	Set     atomic.Uint64
	n       atomic.Int64
	vals    *export.ValueCount
}

// NewGauges builds the gauge sink over reg; its own counters go to counters.
func NewGauges(reg *metrics.Registry, limit int, counters *metrics.Registry) *Gauges {
	g := &Gauges{reg: reg, limit: limit, series: map[string]*metrics.Value{}, vals: export.NewValueCount(dropSeriesLimit)}
	for m := event.FlowLatency; m < event.NumMeasurements; m++ {
		if m == event.FlowPath {
			continue
		}
		var e event.Event
		e.Measurement = m
		var tb [8]export.Tag
		ts := export.KeyTags(tb[:0], &e)
		labels := make([]string, len(ts))
		for i, t := range ts {
			labels[i] = t.K
		}
		g.fams[m] = reg.Gauge(promName(m), "Latest "+m.String()+" per key, in the unit the switch reports (intake event detector, export.prometheus.gauges).", labels...)
	}
	if counters != nil {
		counters.Gauge("intake_export_gauge_series", "Gauge series of the latest values (export.prometheus.gauges).").
			Func(func() float64 { return float64(g.n.Load()) })
		counters.Counter("intake_export_sent_points_total", "Points a sink delivered.", "sink").
			Func(func() float64 { return float64(g.Set.Load()) }, "prometheus")
		counters.Counter("intake_export_dropped_points_total", "Points a sink dropped, by reason.", "sink", "reason").
			Func(func() float64 { return float64(g.Dropped.Load()) }, "prometheus", dropSeriesLimit)
	}
	return g
}

// SinkStatus returns the gauges' counters: values set, and values of keys beyond the
// series limit dropped.
func (g *Gauges) SinkStatus() export.SinkStatus {
	return export.SinkStatus{Name: g.Name(), Sent: g.Set.Load(), Dropped: map[string]uint64{dropSeriesLimit: g.Dropped.Load()}}
}

// ValueCounts returns the values set on a gauge (stored: a scrape reads the latest) and
// those of keys beyond the series limit (dropped).
func (g *Gauges) ValueCounts() export.ValueCounts { return g.vals.Counts() }

func (g *Gauges) Name() string                { return "prometheus" }
func (g *Gauges) Start(context.Context) error { return nil }
func (g *Gauges) Stop(context.Context) error  { return nil }
func (g *Gauges) Series() int                 { return int(g.n.Load()) }

// Offer sets, creates or (for KindExpire) deletes the key's gauge.
func (g *Gauges) Offer(e *event.Event) {
	f := g.fams[e.Measurement]
	if f == nil || e.Kind == event.KindNone {
		return
	}
	var tb [8]export.Tag
	ts := export.KeyTags(tb[:0], e)
	values := make([]string, len(ts))
	for i, t := range ts {
		values[i] = t.V
	}
	id := e.Measurement.String() + "\xff" + strings.Join(values, "\xff")
	v, ok := g.series[id]
	if e.Kind == event.KindExpire {
		if ok {
			f.Delete(values...)
			delete(g.series, id)
			g.n.Add(-1)
		}
		return
	}
	if !ok {
		if len(g.series) >= g.limit {
			g.Dropped.Add(1)
			g.vals.Drop(dropSeriesLimit, 1)
			return
		}
		v = f.With(values...)
		g.series[id] = v
		g.n.Add(1)
	}
	v.Set(float64(e.Value))
	g.Set.Add(1)
	var c export.SourceCounts
	c[export.ValueSource(e)]++
	g.vals.Store(c)
}

// RemoteWrite is the Prometheus remote-write sink (protobuf WriteRequest, snappy block
// compression, remote-write 0.1.0): one sample per value, named intake_<measurement>,
// labelled as the gauges are.
type RemoteWrite struct {
	*export.Queued[event.Event]
}

// NewRemoteWrite builds the sink for cfg.RemoteWrite (set), with the export section's queue,
// flush and retry settings q.
func NewRemoteWrite(cfg Config, q export.Batching, deps export.SinkDeps) *RemoteWrite {
	h := http.Header{
		"Content-Type":                      {"application/x-protobuf"},
		"Content-Encoding":                  {"snappy"},
		"X-Prometheus-Remote-Write-Version": {"0.1.0"},
		"User-Agent":                        {"intake"},
	}
	client := &http.Client{Timeout: 15 * time.Second}
	plain := export.HTTPPost(client, cfg.RemoteWrite, h, false, nil)
	var zbuf []byte
	post := func(ctx context.Context, body []byte) error {
		zbuf = snappy.Encode(zbuf[:cap(zbuf)], body)
		return plain(ctx, zbuf)
	}
	return &RemoteWrite{Queued: export.NewQueued("remote_write", q, cfg.Batch, rwEncoder{clock: export.NewSeriesClock(1e6)}, post, deps)}
}

// rwEncoder writes a prometheus.WriteRequest by hand (remote.proto):
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }  // ms
//
// A series' samples are written in strictly increasing milliseconds (SeriesClock): Prometheus
// refuses a second sample of a series at one time.
type rwEncoder struct{ clock *export.SeriesClock }

func (rwEncoder) Points(e *event.Event) int {
	if e.Kind == event.KindExpire || e.Kind == event.KindNone || e.Measurement == event.FlowPath || e.Measurement == event.MeasNone {
		return 0
	}
	return 1
}

func (r rwEncoder) Encode(dst []byte, batch []event.Event) []byte {
	var ts, lb []byte
	for i := range batch {
		e := &batch[i]
		if r.Points(e) == 0 {
			continue
		}
		ts = ts[:0]
		var tb [8]export.Tag
		tags := append([]export.Tag{{K: "__name__", V: promName(e.Measurement)}}, export.KeyTags(tb[:0], e)...)
		for _, t := range tags { // sorted: "__name__" sorts before lower-case names
			lb = lb[:0]
			lb = pbBytes(lb, 1, t.K)
			lb = pbBytes(lb, 2, t.V)
			ts = pbBytes(ts, 1, string(lb))
		}
		lb = lb[:0]
		lb = append(lb, 1<<3|1) // field 1, fixed64
		lb = binary.LittleEndian.AppendUint64(lb, math.Float64bits(float64(e.Value)))
		lb = append(lb, 2<<3) // field 2, varint (wire type 0)
		ms := e.Time / 1e6
		if r.clock != nil {
			ms = r.clock.At(ts, ms) // ts holds the series' labels so far
		}
		lb = binary.AppendUvarint(lb, uint64(ms))
		ts = pbBytes(ts, 2, string(lb))
		dst = pbBytes(dst, 1, string(ts))
	}
	return dst
}

// pbBytes appends a length-delimited field.
func pbBytes(b []byte, field int, v string) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
