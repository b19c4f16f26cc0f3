// Package influx is the InfluxDB sinks (export.influxdb): INTCollector's time-series
// export (§III-E) of the pipeline's events and periodic values in line protocol (Sink), and
// the flow cache's evicted flow records (Records), both over HTTP to a 1.x or 2.x server
// through export's bounded, batching, retrying queue (export.Queued).
package influx

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
)

// Sink writes InfluxDB line protocol over HTTP, to 1.x /write or 2.x /api/v2/write,
// gzip-compressed, in batches of at most influxdb.batch (≤ 5000) lines. With the 1.x API the
// database is created at start and again whenever a write finds it missing.
type Sink struct {
	*export.Queued[event.Event]
}

// New builds the events sink for cfg (its URL set), with the export section's queue, flush
// and retry settings q.
func New(cfg Config, q export.Batching, deps export.SinkDeps) *Sink {
	enc := &lineEncoder{schema: cfg.Schema, intTime: cfg.Timestamp == "int", clock: export.NewSeriesClock(1)}
	return &Sink{export.NewQueued[event.Event]("influxdb", q, cfg.Batch, enc, newInfluxWriter(cfg).write, deps)}
}

// influxWriter posts line protocol to the configured server.
type influxWriter struct {
	ic      Config
	client  *http.Client
	created atomic.Bool
	post    export.Poster
}

func newInfluxWriter(ic Config) *influxWriter {
	w := &influxWriter{ic: ic, client: &http.Client{Timeout: 15 * time.Second}}
	base := strings.TrimSuffix(ic.URL, "/")
	q := url.Values{"precision": {"ns"}}
	var target string
	if ic.API == "v2" {
		q.Set("bucket", ic.Database)
		q.Set("org", ic.Org)
		target = base + "/api/v2/write?" + q.Encode()
	} else {
		q.Set("db", ic.Database)
		target = base + "/write?" + q.Encode()
	}
	h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
	if ic.Token != "" {
		h.Set("Authorization", "Token "+ic.Token)
	}
	w.post = export.HTTPPost(w.client, target, h, ic.Gzip, func(code int, body []byte) error {
		// 1.x answers 404 {"error":"database not found: ..."}: create it, then retry.
		if ic.API == "v1" && code == http.StatusNotFound && strings.Contains(string(body), "database not found") {
			w.created.Store(false)
			w.createDatabase()
		}
		// A batch with points the server refuses (a field type conflict, a point outside
		// the retention policy) is written but for those: 400 "partial write: ... dropped=N".
		if m := partialWrite.FindSubmatch(body); code == http.StatusBadRequest && m != nil {
			n, _ := strconv.ParseUint(string(m[1]), 10, 64)
			return &export.PermanentError{Msg: fmt.Sprintf("%s: %d %s", target, code, bytes.TrimSpace(body)), Partial: n}
		}
		return nil
	})
	return w
}

func (w *influxWriter) write(ctx context.Context, body []byte) error {
	if w.ic.API == "v1" && !w.created.Load() {
		w.createDatabase()
	}
	return w.post(ctx, body)
}

var partialWrite = regexp.MustCompile(`partial write:.* dropped=(\d+)`)

// createDatabase runs CREATE DATABASE (idempotent in InfluxDB 1.x). A server that does not
// know the statement (VictoriaMetrics, which needs no database) is left alone: the write
// then tells whether the target works.
func (w *influxWriter) createDatabase() {
	base := strings.TrimSuffix(w.ic.URL, "/")
	form := url.Values{"q": {fmt.Sprintf("CREATE DATABASE %s", quoteIdent(w.ic.Database))}}
	req, err := http.NewRequest(http.MethodPost, base+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w.ic.Token != "" {
		req.Header.Set("Authorization", "Token "+w.ic.Token)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return
	}
	resp.Body.Close()
	w.created.Store(true) // attempted; a 404 on write brings us back here
}

func quoteIdent(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// lineEncoder writes one event as line protocol.
type lineEncoder struct {
	schema  string // "intake" or "intcollector"
	intTime bool
	// clock keeps two points of one series from sharing a timestamp (SeriesClock); id is
	// its scratch for a series' identity.
	clock *export.SeriesClock
	id    []byte
}

// at returns the time to write a point of series id at (its own time ts): see SeriesClock.
func (l *lineEncoder) at(id []byte, ts int64) int64 {
	if l.clock == nil {
		return ts
	}
	return l.clock.At(id, ts)
}

// tag is one tag; tags are written in the order given, which appendTags keeps sorted by key
// (InfluxDB's recommendation for write speed).
func (l *lineEncoder) Points(e *event.Event) int {
	if e.Kind == event.KindExpire || e.Kind == event.KindNone || e.Measurement == event.MeasNone {
		return 0 // MeasNone: an immediate event, not a metric
	}
	if l.schema == "intcollector" {
		switch e.Measurement {
		case event.FlowLatency, event.FlowPath, event.FlowHopLatency, event.TxUtilization,
			event.QueueOccupancy, event.QueueCongestion:
			return 1
		}
		return 0
	}
	if e.Kind == event.KindPeriodic {
		return 1
	}
	return 2 // the value, and the event in `events`
}

func (l *lineEncoder) Encode(dst []byte, batch []event.Event) []byte {
	for i := range batch {
		dst = l.append(dst, &batch[i])
	}
	return dst
}

func (l *lineEncoder) ts(e *event.Event) int64 {
	if l.intTime && e.DevTime != 0 && e.DevTime < 1<<63 {
		return int64(e.DevTime)
	}
	return e.Time
}

func (l *lineEncoder) append(b []byte, e *event.Event) []byte {
	if l.Points(e) == 0 {
		return b
	}
	if l.schema == "intcollector" {
		return l.appendINTCollector(b, e)
	}
	ts := l.ts(e)
	var tb [8]export.Tag
	tags := export.KeyTags(tb[:0], e)
	// The value, in its measurement; the series (measurement and tags) has one field set.
	start := len(b)
	b = append(b, e.Measurement.String()...)
	b = appendTags(b, tags)
	ts = l.at(b[start:], ts)
	if e.Measurement == event.FlowPath {
		b = appendPathField(b, "value", e)
	} else {
		b = appendIntField(b, ' ', "value", e.Value)
	}
	b = appendTime(b, ts)
	if e.Kind == event.KindPeriodic {
		return b
	}
	// The event: kind, scope and metric (the measurement; "measurement" is an InfluxQL keyword) as tags with the key's; the values as fields.
	var eb [11]export.Tag
	et := append(eb[:0], tags...)
	et = append(et, export.Tag{K: "kind", V: e.Kind.String()}, export.Tag{K: "metric", V: e.Measurement.String()}, export.Tag{K: "scope", V: e.Scope.String()})
	export.SortTags(et)
	start = len(b)
	b = append(b, "events"...)
	b = appendTags(b, et)
	// The event's point at its value's time, unless its own series already has a point there.
	ts = l.at(b[start:], ts)
	if e.Measurement == event.FlowPath {
		b = appendPathField(b, "path", e)
	} else {
		b = appendIntField(b, ' ', "value", e.Value)
		b = appendIntField(b, ',', "prev", e.Prev)
		if e.Kind == event.KindChange || e.Kind == event.KindAbove || e.Kind == event.KindBelow {
			b = appendIntField(b, ',', "threshold", e.Threshold)
		}
	}
	return appendTime(b, ts)
}

// appendIntField appends sep and the integer field name=v.
func appendIntField(b []byte, sep byte, name string, v uint64) []byte {
	b = append(b, sep)
	b = append(b, name...)
	b = append(b, '=')
	b = strconv.AppendUint(b, v, 10)
	return append(b, 'i')
}

// appendPathField appends the string field name="1:2:3", e's path.
func appendPathField(b []byte, name string, e *event.Event) []byte {
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, `="`...)
	b = event.AppendPath(b, e.PathList())
	return append(b, '"')
}

// appendTime ends a line with its timestamp.
func appendTime(b []byte, ts int64) []byte {
	b = append(b, ' ')
	b = strconv.AppendInt(b, ts, 10)
	return append(b, '\n')
}

// appendINTCollector writes INTCollector's own measurements: the ids are part of the
// measurement name ("flow_stat,10.0.0.1:5000->10.0.0.2:5000,proto=17",
// "queue_occupancy,sw_id=4,queue_id=5"), with the commas escaped, as its Python client
// wrote them, so that its dashboards and queries keep working.
func (l *lineEncoder) appendINTCollector(b []byte, e *event.Event) []byte {
	k := &e.Key
	start := len(b)
	flow := func(b []byte) []byte {
		b = append(b, k.Flow.SrcAddr().String()...)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(k.Flow.SrcPort), 10)
		b = append(b, "->"...)
		b = append(b, k.Flow.DstAddr().String()...)
		b = append(b, ':')
		b = strconv.AppendUint(b, uint64(k.Flow.DstPort), 10)
		b = append(b, `\,proto=`...)
		return strconv.AppendUint(b, uint64(k.Flow.Proto), 10)
	}
	field := "value"
	switch e.Measurement {
	case event.FlowLatency, event.FlowPath:
		b = append(b, `flow_stat\,`...)
		b = flow(b)
		field = "flow_latency"
	case event.FlowHopLatency:
		b = append(b, `flow_hop_latency\,`...)
		b = flow(b)
		b = append(b, `\,sw_id=`...)
		b = strconv.AppendUint(b, uint64(k.Switch), 10)
	case event.TxUtilization:
		b = append(b, `port_tx_utilize\,sw_id=`...)
		b = strconv.AppendUint(b, uint64(k.Switch), 10)
		b = append(b, `\,port_id=`...)
		b = strconv.AppendUint(b, uint64(k.Port), 10)
	case event.QueueOccupancy, event.QueueCongestion:
		b = append(b, e.Measurement.String()...)
		b = append(b, `\,sw_id=`...)
		b = strconv.AppendUint(b, uint64(k.Switch), 10)
		b = append(b, `\,queue_id=`...)
		b = strconv.AppendUint(b, uint64(k.Queue), 10)
	}
	if e.Measurement == event.FlowPath {
		field = "path"
	}
	// flow_stat holds a flow's latency and its path as two fields: one point each time, as
	// INTCollector wrote them, so a series here is a measurement and a field.
	l.id = append(append(l.id[:0], b[start:]...), field...)
	ts := l.at(l.id, l.ts(e))
	if e.Measurement == event.FlowPath {
		b = appendPathField(b, "path", e)
	} else {
		b = appendIntField(b, ' ', field, e.Value)
	}
	return appendTime(b, ts)
}

func appendTags(b []byte, ts []export.Tag) []byte {
	for _, t := range ts {
		b = append(b, ',')
		b = append(b, t.K...)
		b = append(b, '=')
		for i := 0; i < len(t.V); i++ {
			switch c := t.V[i]; c {
			case ',', ' ', '=':
				b = append(b, '\\', c)
			default:
				b = append(b, c)
			}
		}
	}
	return b
}
