package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
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
	QueueID  *uint16 `json:"queue_id,omitempty"`
	BufferID *uint8  `json:"buffer_id,omitempty"`
	Reason   *uint8  `json:"reason,omitempty"`
	HWID     *uint8  `json:"hw_id,omitempty"`
}

func ptr[T any](v T) *T { return &v }

// String writes the key for a table: the flow as every verb writes flows ("10.0.0.1:1000 >
// 10.0.0.2:80 udp"), then "name value" for each other part it has, comma-separated
// ("switch 3, queue 1").
func (k KeyJSON) String() string {
	var parts []string
	if k.Src != "" {
		parts = append(parts, telemetry.FlowString(k.Src, deref(k.Sport), k.Dst, deref(k.Dport), deref(k.Proto)))
	}
	parts = appendPart(parts, "switch", k.SwitchID)
	parts = appendPart(parts, "queue", k.QueueID)
	parts = appendPart(parts, "port", k.Port)
	parts = appendPart(parts, "buffer", k.BufferID)
	parts = appendPart(parts, "reason", k.Reason)
	parts = appendPart(parts, "hw_id", k.HWID)
	return strings.Join(parts, ", ")
}

func appendPart[T any](parts []string, name string, v *T) []string {
	if v == nil {
		return parts
	}
	return append(parts, fmt.Sprintf("%s %v", name, *v))
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

// The times an event can carry: Unix nanoseconds in an int64.
var (
	minEventTime = time.Unix(0, math.MinInt64)
	maxEventTime = time.Unix(0, math.MaxInt64)
)

// parseSince accepts RFC 3339, Unix nanoseconds, or a Go duration meaning that long ago; it
// returns what is allowed when s is none of them. A time outside what Unix nanoseconds can
// hold (1677 to 2262) is refused: UnixNano would wrap it around and answer with everything.
func parseSince(s string, now time.Time) (int64, string) {
	if s == "" {
		return 0, ""
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.Before(minEventTime) || t.After(maxEventTime) {
			return 0, "a time from " + minEventTime.UTC().Format(time.RFC3339Nano) + " to " + maxEventTime.UTC().Format(time.RFC3339Nano)
		}
		return t.UnixNano(), ""
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, ""
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UnixNano(), ""
	}
	return 0, "an RFC 3339 time, Unix nanoseconds, or a duration such as 5m"
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
	return append(ns, event.KindExpire.String(), event.KindImmediate.String())
}

// RegisterAPI adds the detector's endpoints:
//
//	GET /api/v1/events?since=&kind=&limit=   recent events (since: RFC 3339, Unix ns or a duration ago)
//	    &src=&dst=&sport=&dport=&proto=      only one flow's (all five, or flow=, or none)
//	GET /api/v1/events/stream?kind=          server-sent events, one `data:` JSON event each
//	GET /api/v1/flow?src=&dst=&sport=&dport=&proto=   a flow's latest values and path
//	    (or flow=SRC:SPORT > DST:DPORT PROTO: api.ParseFlowQuery)
//	GET /api/v1/thresholds, PUT /api/v1/thresholds    detect.change / detect.above at run time
func (d *Detector) RegisterAPI(s *api.Server) {
	if d.log == nil {
		d.log = newLog(d.bus, d.cfg.EventLog, d.cfg.Ring, d.cfg.MaxStreams)
	}
	s.HandleFunc("GET /api/v1/events", d.handleEvents)
	s.HandleFunc("GET /api/v1/events/stream", d.handleStream)
	s.HandleFunc("GET /api/v1/flow", d.handleFlow)
	s.HandleFunc("GET /api/v1/thresholds", d.handleThresholds)
	s.HandleFunc("PUT /api/v1/thresholds", d.handleSetThresholds)
}

// EventsLimit is GET /api/v1/events' default limit.
const EventsLimit = 1000

func (d *Detector) handleEvents(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, append([]string{"since", "kind", "limit"}, api.FlowParamNames...)...) {
		return
	}
	q := r.URL.Query()
	var flow *telemetry.FlowKey
	if api.HasFlow(q) {
		k, ok := api.FlowParams(w, r)
		if !ok {
			return
		}
		flow = &k
	}
	since, bad := parseSince(q.Get("since"), time.Now())
	if bad != "" {
		api.BadParam(w, "since", q.Get("since"), bad)
		return
	}
	kinds, ok := parseKinds(w, r)
	if !ok {
		return
	}
	limit, ok := api.IntParam(w, r, "limit", EventsLimit, 1, math.MaxInt, "a positive integer")
	if !ok {
		return
	}
	api.JSON(w, http.StatusOK, map[string]any{"events": d.log.Query(since, kinds, flow, limit)})
}

func (d *Detector) handleFlow(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, api.FlowParamNames...) {
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

// thresholdsBody says what PUT /api/v1/thresholds takes.
const thresholdsBody = `{"change": {measurement: level}, "above": {...}}, a level a non-negative integer, or null or "off" to turn the rule off`

// handleSetThresholds applies a body of {"change": {measurement: level}, "above": {...}}
// all or nothing. A level is a non-negative integer (any, the largest included: it is a
// rule in force), or null or "off", which turn the rule off.
func (d *Detector) handleSetThresholds(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r) {
		return
	}
	var body map[string]map[string]json.RawMessage
	if !api.DecodeBody(w, r, &body, thresholdsBody) {
		return
	}
	type set struct {
		kind event.Kind
		m    event.Measurement
		v    uint64
		on   bool
	}
	var sets []set
	for _, sec := range sortedKeys(body) {
		kind := event.KindChange
		switch sec {
		case "change":
		case "above":
			kind = event.KindAbove
		default:
			api.Error(w, http.StatusBadRequest, fmt.Sprintf("body: %q: unknown section (allowed: change, above)", sec))
			return
		}
		vals := body[sec]
		for _, name := range sortedKeys(vals) {
			m, err := ThresholdMeasurement(name)
			if err != nil {
				api.Error(w, http.StatusBadRequest, fmt.Sprintf("body: %s.%s: %v", sec, name, err))
				return
			}
			v, on, err := parseLevel(vals[name])
			if err != nil {
				api.Error(w, http.StatusBadRequest, fmt.Sprintf("body: %s.%s: %s: %v", sec, name, vals[name], err))
				return
			}
			sets = append(sets, set{kind, m, v, on})
		}
	}
	for _, s := range sets {
		if s.on {
			d.SetThreshold(s.kind, s.m, s.v)
		} else {
			d.ClearThreshold(s.kind, s.m)
		}
	}
	api.JSON(w, http.StatusOK, d.Thresholds())
}

// parseLevel reads one level of a PUT body: a non-negative integer, or null or "off".
func parseLevel(raw json.RawMessage) (v uint64, on bool, err error) {
	switch s := string(raw); s {
	case "null", `"off"`:
		return 0, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false, errLevel
	}
	return v, true, nil
}

var errLevel = fmt.Errorf("must be a non-negative integer up to %d, or null or \"off\"", uint64(math.MaxUint64))

// Thresholds is the GET/PUT /api/v1/thresholds answer: measurement names to levels; a rule
// that is off is absent (PUT turns one off with null or "off").
type Thresholds struct {
	Change map[string]uint64 `json:"change"`
	Above  map[string]uint64 `json:"above"`
}

// Thresholds returns the thresholds in force.
func (d *Detector) Thresholds() Thresholds {
	t := Thresholds{Change: map[string]uint64{}, Above: map[string]uint64{}}
	for m := event.FlowLatency; m < event.NumMeasurements; m++ {
		if v, on := d.Threshold(event.KindChange, m); on {
			t.Change[m.String()] = v
		}
		if v, on := d.Threshold(event.KindAbove, m); on {
			t.Above[m.String()] = v
		}
	}
	return t
}
