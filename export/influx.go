package export

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
)

// InfluxSink writes InfluxDB line protocol over HTTP, to 1.x /write or 2.x /api/v2/write,
// gzip-compressed, in batches of at most influxdb.batch (≤ 5000) lines. With the 1.x API the
// database is created at start and again whenever a write finds it missing.
type InfluxSink struct {
	*queued[event.Event]
}

// NewInfluxDB builds the sink for cfg.InfluxDB.
func NewInfluxDB(cfg Config, deps SinkDeps) *InfluxSink {
	ic := cfg.InfluxDB
	enc := &lineEncoder{schema: ic.Schema, intTime: ic.Timestamp == "int", clock: newSeriesClock(1)}
	return &InfluxSink{newQueued[event.Event]("influxdb", cfg, ic.Batch, enc, newInfluxWriter(ic).write, deps)}
}

// influxWriter posts line protocol to the configured server.
type influxWriter struct {
	ic      InfluxDB
	client  *http.Client
	created atomic.Bool
	post    poster
}

func newInfluxWriter(ic InfluxDB) *influxWriter {
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
	w.post = httpPost(w.client, target, h, ic.Gzip, func(code int, body []byte) error {
		// 1.x answers 404 {"error":"database not found: ..."}: create it, then retry.
		if ic.API == "v1" && code == http.StatusNotFound && strings.Contains(string(body), "database not found") {
			w.created.Store(false)
			w.createDatabase()
		}
		// A batch with points the server refuses (a field type conflict, a point outside
		// the retention policy) is written but for those: 400 "partial write: ... dropped=N".
		if m := partialWrite.FindSubmatch(body); code == http.StatusBadRequest && m != nil {
			n, _ := strconv.ParseUint(string(m[1]), 10, 64)
			return &permanentError{msg: fmt.Sprintf("%s: %d %s", target, code, bytes.TrimSpace(body)), partial: n}
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
	// clock keeps two points of one series from sharing a timestamp (seriesClock); id is
	// its scratch for a series' identity.
	clock *seriesClock
	id    []byte
}

// at returns the time to write a point of series id at (its own time ts): see seriesClock.
func (l *lineEncoder) at(id []byte, ts int64) int64 {
	if l.clock == nil {
		return ts
	}
	return l.clock.at(id, ts)
}

// tag is one tag; tags are written in the order given, which appendTags keeps sorted by key
// (InfluxDB's recommendation for write speed).
type tag struct{ k, v string }

func (l *lineEncoder) points(e *event.Event) int {
	if e.Kind == event.KindExpire || e.Kind == event.KindNone {
		return 0
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

func (l *lineEncoder) encode(dst []byte, batch []event.Event) []byte {
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
	if l.points(e) == 0 {
		return b
	}
	if l.schema == "intcollector" {
		return l.appendINTCollector(b, e)
	}
	ts := l.ts(e)
	var tb [8]tag
	tags := keyTags(tb[:0], e)
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
	var eb [11]tag
	et := append(eb[:0], tags...)
	et = append(et, tag{"kind", e.Kind.String()}, tag{"metric", e.Measurement.String()}, tag{"scope", e.Scope.String()})
	sortTags(et)
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

// keyTags returns the tags of e's metric key, sorted by tag key: src, dst, sport, dport,
// proto for flow keys; switch_id; queue_id, port, buffer_id, reason or hw_id.
func keyTags(dst []tag, e *event.Event) []tag {
	k := &e.Key
	m := e.Measurement
	if m == event.BufferOccupancy {
		dst = append(dst, tag{"buffer_id", strconv.Itoa(int(k.Buffer))})
	}
	if m.HasFlow() {
		dst = append(dst, tag{"dport", strconv.Itoa(int(k.Flow.DstPort))}, tag{"dst", k.Flow.DstAddr().String()})
	}
	if m == event.SeqGaps {
		dst = append(dst, tag{"hw_id", strconv.Itoa(int(k.HWID))})
	}
	if m == event.TxUtilization {
		dst = append(dst, tag{"port", strconv.FormatUint(uint64(k.Port), 10)})
	}
	if m.HasFlow() {
		dst = append(dst, tag{"proto", strconv.Itoa(int(k.Flow.Proto))})
	}
	if m == event.QueueOccupancy || m == event.QueueCongestion {
		dst = append(dst, tag{"queue_id", strconv.Itoa(int(k.Queue))})
	}
	if m == event.Drops {
		dst = append(dst, tag{"reason", strconv.Itoa(int(k.Reason))})
	}
	if m.HasFlow() {
		dst = append(dst, tag{"sport", strconv.Itoa(int(k.Flow.SrcPort))}, tag{"src", k.Flow.SrcAddr().String()})
	}
	if m.HasSwitch() {
		dst = append(dst, tag{"switch_id", strconv.FormatUint(uint64(k.Switch), 10)})
	}
	return dst
}

func sortTags(ts []tag) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].k < ts[j-1].k; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

func appendTags(b []byte, ts []tag) []byte {
	for _, t := range ts {
		b = append(b, ',')
		b = append(b, t.k...)
		b = append(b, '=')
		for i := 0; i < len(t.v); i++ {
			switch c := t.v[i]; c {
			case ',', ' ', '=':
				b = append(b, '\\', c)
			default:
				b = append(b, c)
			}
		}
	}
	return b
}
