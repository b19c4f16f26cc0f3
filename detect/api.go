package detect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
)

// EventJSON is an event as the API shows it (GET /api/v1/events, the live stream, `intake
// query events --json`). Key fields appear as they apply to the measurement.
type EventJSON struct {
	Seq         uint64   `json:"seq"`
	Time        string   `json:"time"`
	TimeNS      int64    `json:"time_ns"`
	DevTime     uint64   `json:"dev_time,omitempty"`
	Kind        string   `json:"kind"`
	Scope       string   `json:"scope"`
	Measurement string   `json:"measurement"`
	Key         KeyJSON  `json:"key"`
	Prev        uint64   `json:"prev"`
	Value       uint64   `json:"value"`
	Threshold   *uint64  `json:"threshold,omitempty"`
	Path        []uint32 `json:"path,omitempty"`
}

// KeyJSON is a metric key.
type KeyJSON struct {
	Src      string  `json:"src,omitempty"`
	Dst      string  `json:"dst,omitempty"`
	Sport    *uint16 `json:"sport,omitempty"`
	Dport    *uint16 `json:"dport,omitempty"`
	Proto    *uint8  `json:"proto,omitempty"`
	SwitchID *uint32 `json:"switch_id,omitempty"`
	Port     *uint32 `json:"port,omitempty"`
	QueueID  *uint8  `json:"queue_id,omitempty"`
	BufferID *uint8  `json:"buffer_id,omitempty"`
	Reason   *uint8  `json:"reason,omitempty"`
	HWID     *uint8  `json:"hw_id,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// String writes the key for a table: "SRC:SPORT->DST:DPORT/PROTO" for a flow, then
// name=value for each other part it has.
func (k KeyJSON) String() string {
	var parts []string
	if k.Src != "" {
		parts = append(parts, fmt.Sprintf("%s:%d->%s:%d/%d", k.Src, deref(k.Sport), k.Dst, deref(k.Dport), deref(k.Proto)))
	}
	parts = appendPart(parts, "switch_id", k.SwitchID)
	parts = appendPart(parts, "queue_id", k.QueueID)
	parts = appendPart(parts, "port", k.Port)
	parts = appendPart(parts, "buffer_id", k.BufferID)
	parts = appendPart(parts, "reason", k.Reason)
	parts = appendPart(parts, "hw_id", k.HWID)
	return strings.Join(parts, " ")
}

func appendPart[T any](parts []string, name string, v *T) []string {
	if v == nil {
		return parts
	}
	return append(parts, fmt.Sprintf("%s=%v", name, *v))
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// ToJSON renders e (with its log sequence number).
func ToJSON(seq uint64, e *event.Event) EventJSON {
	j := EventJSON{
		Seq: seq, Time: time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano), TimeNS: e.Time, DevTime: e.DevTime,
		Kind: e.Kind.String(), Scope: e.Scope.String(), Measurement: e.Measurement.String(),
		Prev: e.Prev, Value: e.Value,
	}
	if e.Kind == event.KindChange || e.Kind == event.KindAbove || e.Kind == event.KindBelow {
		j.Threshold = ptr(e.Threshold)
	}
	m, k := e.Measurement, &e.Key
	if m.HasFlow() {
		j.Key.Src, j.Key.Dst = k.Flow.SrcAddr().String(), k.Flow.DstAddr().String()
		j.Key.Sport, j.Key.Dport, j.Key.Proto = ptr(k.Flow.SrcPort), ptr(k.Flow.DstPort), ptr(k.Flow.Proto)
	}
	if m.HasSwitch() {
		j.Key.SwitchID = ptr(k.Switch)
	}
	switch m {
	case event.QueueOccupancy, event.QueueCongestion:
		j.Key.QueueID = ptr(k.Queue)
	case event.TxUtilization:
		j.Key.Port = ptr(k.Port)
	case event.BufferOccupancy:
		j.Key.BufferID = ptr(k.Buffer)
	case event.Drops:
		j.Key.Reason = ptr(k.Reason)
	case event.SeqGaps:
		j.Key.HWID = ptr(k.HWID)
	case event.FlowPath:
		j.Path = append([]uint32{}, e.PathList()...)
	}
	return j
}

// Log keeps the most recent events for GET /api/v1/events: a bus consumer drained by its own
// goroutine into a bounded ring, each event numbered. The Detector owns one (Detector.Log).
type Log struct {
	bus    *event.Bus
	cons   *event.Consumer
	mu     sync.Mutex
	ring   []event.Event
	seq    uint64 // events stored so far; the newest has seq
	cancel context.CancelFunc
	done   chan struct{}
}

// newLog builds a log of size events over bus, reading it through a ring of ring events
// from start to stop.
func newLog(bus *event.Bus, size, ring int) *Log {
	return &Log{bus: bus, ring: make([]event.Event, max(size, 1)), cons: bus.Subscribe("log", ring)}
}

// Log returns the detector's event log (nil before RegisterAPI).
func (d *Detector) Log() *Log { return d.log }

// start drains the bus into the log until stop.
func (l *Log) start() {
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		buf := make([]event.Event, 256)
		for l.cons.Wait(ctx) {
			l.Drain(buf)
		}
		l.Drain(buf)
	}()
}

// Drain moves waiting events into the log now.
func (l *Log) Drain(buf []event.Event) {
	for {
		n := l.cons.Poll(buf)
		l.mu.Lock()
		for i := range buf[:n] {
			l.ring[l.seq%uint64(len(l.ring))] = buf[i]
			l.seq++
		}
		l.mu.Unlock()
		if n < len(buf) {
			return
		}
	}
}

// stop ends the log's goroutine; the log keeps its events and its place on the bus (so
// that a restart loses nothing published meanwhile).
func (l *Log) stop() {
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel = nil
	}
}

// Query returns the logged events with time ≥ since (Unix ns) and a kind in kinds (all when
// empty), oldest first, at most limit (the newest ones).
func (l *Log) Query(since int64, kinds map[event.Kind]bool, limit int) []EventJSON {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := uint64(len(l.ring))
	first := uint64(0)
	if l.seq > n {
		first = l.seq - n
	}
	out := []EventJSON{}
	for s := first; s < l.seq; s++ {
		e := &l.ring[s%n]
		if e.Time < since || (len(kinds) > 0 && !kinds[e.Kind]) {
			continue
		}
		out = append(out, ToJSON(s+1, e))
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// parseSince accepts RFC 3339, Unix nanoseconds, or a Go duration meaning that long ago.
func parseSince(s string, now time.Time) (int64, bool) {
	if s == "" {
		return 0, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixNano(), true
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UnixNano(), true
	}
	return 0, false
}

func parseKinds(w http.ResponseWriter, r *http.Request) (map[event.Kind]bool, bool) {
	kinds := map[event.Kind]bool{}
	for _, v := range r.URL.Query()["kind"] {
		for _, s := range strings.Split(v, ",") {
			k, ok := event.ParseKind(s)
			if !ok || k == event.KindPeriodic {
				api.BadParam(w, "kind", s, "a comma-separated list of "+strings.Join(eventKindNames(), ", "))
				return nil, false
			}
			kinds[k] = true
		}
	}
	return kinds, true
}

func eventKindNames() []string {
	var ns []string
	for k := event.KindNewKey; k <= event.KindBelow; k++ {
		ns = append(ns, k.String())
	}
	return append(ns, event.KindExpire.String())
}

// RegisterAPI adds the detector's endpoints:
//
//	GET /api/v1/events?since=&kind=&limit=   recent events (since: RFC 3339, Unix ns or a duration ago)
//	GET /api/v1/events/stream?kind=          server-sent events, one `data:` JSON event each
//	GET /api/v1/flow?src=&dst=&sport=&dport=&proto=   a flow's latest values and path
//	GET /api/v1/thresholds, PUT /api/v1/thresholds    detect.change / detect.above at run time
func (d *Detector) RegisterAPI(s *api.Server) {
	if d.log == nil {
		d.log = newLog(d.bus, d.cfg.EventLog, d.cfg.Ring)
	}
	s.HandleFunc("GET /api/v1/events", d.handleEvents)
	s.HandleFunc("GET /api/v1/events/stream", d.handleStream)
	s.HandleFunc("GET /api/v1/flow", d.handleFlow)
	s.HandleFunc("GET /api/v1/thresholds", d.handleThresholds)
	s.HandleFunc("PUT /api/v1/thresholds", d.handleSetThresholds)
}

func (d *Detector) handleEvents(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "since", "kind", "limit") {
		return
	}
	q := r.URL.Query()
	since, ok := parseSince(q.Get("since"), time.Now())
	if !ok {
		api.BadParam(w, "since", q.Get("since"), "an RFC 3339 time, Unix nanoseconds, or a duration such as 5m")
		return
	}
	kinds, ok := parseKinds(w, r)
	if !ok {
		return
	}
	limit, ok := api.IntParam(w, r, "limit", 1000, 1, math.MaxInt, "a positive integer")
	if !ok {
		return
	}
	api.JSON(w, http.StatusOK, map[string]any{"events": d.log.Query(since, kinds, limit)})
}

// handleStream serves the events as server-sent events until the client goes away.
func (d *Detector) handleStream(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "kind") {
		return
	}
	kinds, ok := parseKinds(w, r)
	if !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		api.Error(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	c := d.bus.Subscribe("stream", 4096)
	defer d.bus.Unsubscribe(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, ": intake event stream\n\n")
	fl.Flush()
	buf := make([]event.Event, 256)
	var seq, lost uint64
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			fmt.Fprintf(w, ": keepalive\n\n")
		case <-c.Notify():
		}
		for {
			n := c.Poll(buf)
			for i := range buf[:n] {
				seq++
				if len(kinds) > 0 && !kinds[buf[i].Kind] {
					continue
				}
				b, _ := json.Marshal(ToJSON(seq, &buf[i]))
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", buf[i].Kind, b)
			}
			if n < len(buf) {
				break
			}
		}
		if o := c.Overflow(); o != lost {
			fmt.Fprintf(w, "event: overflow\ndata: {\"lost\": %d}\n\n", o-lost)
			lost = o
		}
		if fl.Flush(); r.Context().Err() != nil {
			return
		}
	}
}

func (d *Detector) handleFlow(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "src", "dst", "sport", "dport", "proto") {
		return
	}
	k, ok := api.FlowParams(w, r)
	if !ok {
		return
	}
	fs, found := d.Flow(k)
	if !found {
		api.Error(w, http.StatusNotFound, "no such flow (unknown, expired or evicted)")
		return
	}
	api.JSON(w, http.StatusOK, fs)
}

func (d *Detector) handleThresholds(w http.ResponseWriter, r *http.Request) {
	if api.CheckParams(w, r) {
		api.JSON(w, http.StatusOK, d.Thresholds())
	}
}

// handleSetThresholds applies a body of {"change": {measurement: value or null}, "above":
// {...}} all or nothing.
func (d *Detector) handleSetThresholds(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r) {
		return
	}
	var body map[string]map[string]*uint64
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	if err := dec.Decode(&body); err != nil {
		api.Error(w, http.StatusBadRequest, "body: must be {\"change\": {measurement: value or null}, \"above\": {...}}: "+err.Error())
		return
	}
	type set struct {
		kind event.Kind
		m    event.Measurement
		v    uint64
	}
	var sets []set
	for sec, vals := range body {
		kind := event.KindChange
		switch sec {
		case "change":
		case "above":
			kind = event.KindAbove
		default:
			api.Error(w, http.StatusBadRequest, fmt.Sprintf("body: %q: unknown section (allowed: change, above)", sec))
			return
		}
		for name, v := range vals {
			m, err := ThresholdMeasurement(name)
			if err != nil {
				api.Error(w, http.StatusBadRequest, fmt.Sprintf("body: %s.%s: %v", sec, name, err))
				return
			}
			x := uint64(Off)
			if v != nil {
				x = *v
			}
			sets = append(sets, set{kind, m, x})
		}
	}
	for _, s := range sets {
		d.SetThreshold(s.kind, s.m, s.v)
	}
	api.JSON(w, http.StatusOK, d.Thresholds())
}

// Thresholds is the GET/PUT /api/v1/thresholds body: measurement names to values; a rule
// that is off is absent (and PUT turns one off with null).
type Thresholds struct {
	Change map[string]uint64 `json:"change"`
	Above  map[string]uint64 `json:"above"`
}

// Thresholds returns the thresholds in force.
func (d *Detector) Thresholds() Thresholds {
	t := Thresholds{Change: map[string]uint64{}, Above: map[string]uint64{}}
	for m := event.FlowLatency; m < event.NumMeasurements; m++ {
		if v := d.change[m].Load(); v != Off {
			t.Change[m.String()] = v
		}
		if v := d.above[m].Load(); v != Off {
			t.Above[m.String()] = v
		}
	}
	return t
}
