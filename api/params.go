package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/intake-int/intake/telemetry"
)

// JSON writes v as an indented JSON response.
func JSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	Param string `json:"param,omitempty"`
	Value string `json:"value,omitempty"`
}

// Error writes an error response.
func Error(w http.ResponseWriter, code int, msg string) {
	JSON(w, code, ErrorBody{Error: msg})
}

// BadParam writes a 400 naming the parameter, the value and what is allowed.
func BadParam(w http.ResponseWriter, param, value, allowed string) {
	JSON(w, http.StatusBadRequest, (&ParamError{param, value, allowed}).Body())
}

// CheckParams answers 400 and returns false when the request has a query parameter not in
// allowed, so that a misspelt filter is an error rather than silently ignored.
func CheckParams(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			v := ""
			if len(vs) > 0 {
				v = vs[0]
			}
			msg := "none"
			if len(allowed) > 0 {
				msg = strings.Join(allowed, ", ")
			}
			JSON(w, http.StatusBadRequest, ErrorBody{
				Error: fmt.Sprintf("unknown parameter %s (allowed: %s)", k, msg), Param: k, Value: v,
			})
			return false
		}
	}
	return true
}

// IntParam reads an optional integer query parameter in [lo, hi] (def when absent),
// answering 400 with allowed as what is allowed when it is bad.
func IntParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int, allowed string) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		BadParam(w, name, s, allowed)
		return 0, false
	}
	return n, true
}

// SwitchParam reads the switch parameter, a switch id, without answering: has is false when
// q has none.
func SwitchParam(q url.Values) (id uint32, has bool, e *ParamError) {
	s := q.Get("switch")
	if !q.Has("switch") {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false, &ParamError{"switch", s, "a switch id 0-4294967295"}
	}
	return uint32(n), true, nil
}

// flowParts are the five parameters of a flow.
var flowParts = []string{"src", "dst", "sport", "dport", "proto"}

// FlowParamNames are the query parameters that address a flow, for CheckParams: its five
// parts, or the whole notation in flow.
var FlowParamNames = append(flowParts[:len(flowParts):len(flowParts)], "flow")

// HasFlow reports whether q addresses a flow (any of FlowParamNames).
func HasFlow(q url.Values) bool {
	for _, p := range FlowParamNames {
		if q.Has(p) {
			return true
		}
	}
	return false
}

// ParamError is a bad query parameter: the 400's body (ErrorBody) names it, its value and
// what is allowed.
type ParamError struct {
	Param, Value, Allowed string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("parameter %s: %q: must be %s", e.Param, e.Value, e.Allowed)
}

// Body is the error's JSON body.
func (e *ParamError) Body() ErrorBody {
	return ErrorBody{Error: e.Error(), Param: e.Param, Value: e.Value}
}

// What the flow parameters allow, for their errors (docs/api.md, "Flows").
const (
	AllowedFlow  = `a flow "SRC:SPORT > DST:DPORT PROTO" (">", "->" or "→"; PROTO tcp, udp, icmp, icmpv6, sctp or 0-255) or src,dst,sport,dport,proto`
	AllowedProto = "tcp, udp, icmp, icmpv6, sctp or a number 0-255 (any case)"
)

// ParseFlowQuery reads the flow q addresses, without answering: flow=, the whole notation
// (telemetry.ParseFlowKey: "10.0.0.1:1000 > 10.0.0.2:80 udp", with ">", "->" or "→"), or
// src, dst, sport, dport and proto (all required; proto a name or a number). The error
// names the first parameter at fault.
func ParseFlowQuery(q url.Values) (telemetry.FlowKey, *ParamError) {
	var k telemetry.FlowKey
	if q.Has("flow") {
		s := q.Get("flow")
		for _, p := range flowParts {
			if q.Has(p) {
				return k, &ParamError{"flow", s, "given alone, without " + strings.Join(flowParts, ", ")}
			}
		}
		k, err := telemetry.ParseFlowKey(s)
		if err != nil {
			return k, &ParamError{"flow", s, AllowedFlow}
		}
		return k, nil
	}
	for _, p := range []string{"src", "dst"} {
		if q.Get(p) == "" {
			return k, &ParamError{p, q.Get(p), "an IPv4 or IPv6 address"}
		}
	}
	var port [2]uint64
	for i, p := range []string{"sport", "dport"} {
		var err error
		if port[i], err = strconv.ParseUint(q.Get(p), 10, 16); err != nil {
			return k, &ParamError{p, q.Get(p), "an integer 0-65535"}
		}
	}
	pr, err := telemetry.ParseProto(q.Get("proto"))
	if err != nil || q.Get("proto") == "" {
		return k, &ParamError{"proto", q.Get("proto"), AllowedProto}
	}
	k, ok := ParseFlow(q.Get("src"), q.Get("dst"), uint16(port[0]), uint16(port[1]), pr)
	if !ok {
		return k, &ParamError{"src", q.Get("src") + "," + q.Get("dst"), "IPv4 or IPv6 addresses of one family for src and dst"}
	}
	return k, nil
}

// FlowParams reads the flow r addresses (ParseFlowQuery), answering 400 naming the
// parameter when it is missing or bad.
func FlowParams(w http.ResponseWriter, r *http.Request) (telemetry.FlowKey, bool) {
	k, e := ParseFlowQuery(r.URL.Query())
	if e != nil {
		JSON(w, http.StatusBadRequest, e.Body())
		return k, false
	}
	return k, true
}

// ParseFlow builds a flow key from the API's src, dst, sport, dport and proto values.
func ParseFlow(src, dst string, sport, dport uint16, proto uint8) (telemetry.FlowKey, bool) {
	var k telemetry.FlowKey
	s, err1 := netip.ParseAddr(src)
	t, err2 := netip.ParseAddr(dst)
	if err1 != nil || err2 != nil || s.Unmap().Is4() != t.Unmap().Is4() || s.Zone() != "" || t.Zone() != "" {
		return k, false
	}
	k.SetAddrs(s.Unmap(), t.Unmap())
	k.SrcPort, k.DstPort, k.Proto = sport, dport, proto
	return k, true
}

// DecodeBody decodes the request's JSON body into v strictly: one JSON value and nothing
// after it but white space, unknown keys refused where v is a struct, at most MaxBody
// bytes (the guard caps the body; a handler may not rely on it in tests that call it
// directly, so the cap is applied here too). On error it answers 400, or 413 for a body
// too large, naming what is allowed, and returns false.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any, allowed string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Anything after the value but white space is garbage, not a second request.
		var extra json.RawMessage
		if e := dec.Decode(&extra); e != io.EOF {
			err = errors.New("data after the JSON value")
			if mb := (*http.MaxBytesError)(nil); errors.As(e, &mb) {
				err = e
			}
		}
	}
	if err == nil {
		return true
	}
	if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
		Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
		return false
	}
	if err == io.EOF {
		err = errors.New("empty")
	}
	Error(w, http.StatusBadRequest, "body: must be "+allowed+": "+err.Error())
	return false
}
