package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
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
	JSON(w, http.StatusBadRequest, ErrorBody{
		Error: fmt.Sprintf("parameter %s: %q: must be %s", param, value, allowed),
		Param: param, Value: value,
	})
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

// FlowParams reads src, dst, sport, dport and proto (all required), answering 400 when one
// is missing or bad.
func FlowParams(w http.ResponseWriter, r *http.Request) (k telemetry.FlowKey, ok bool) {
	q := r.URL.Query()
	num := func(name string, bits int) (uint64, bool) {
		s := q.Get(name)
		v, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			BadParam(w, name, s, fmt.Sprintf("an integer 0-%d", uint64(1)<<bits-1))
			return 0, false
		}
		return v, true
	}
	for _, p := range []string{"src", "dst"} {
		if q.Get(p) == "" {
			BadParam(w, p, "", "an IPv4 or IPv6 address")
			return k, false
		}
	}
	sp, ok1 := num("sport", 16)
	if !ok1 {
		return k, false
	}
	dp, ok2 := num("dport", 16)
	if !ok2 {
		return k, false
	}
	pr, ok3 := num("proto", 8)
	if !ok3 {
		return k, false
	}
	k, ok = ParseFlow(q.Get("src"), q.Get("dst"), uint16(sp), uint16(dp), uint8(pr))
	if !ok {
		BadParam(w, "src", q.Get("src")+","+q.Get("dst"), "IPv4 or IPv6 addresses of one family for src and dst")
		return k, false
	}
	return k, true
}

// ParseFlow builds a flow key from the API's src, dst, sport, dport and proto values.
func ParseFlow(src, dst string, sport, dport uint16, proto uint8) (telemetry.FlowKey, bool) {
	var k telemetry.FlowKey
	s, err1 := netip.ParseAddr(src)
	t, err2 := netip.ParseAddr(dst)
	if err1 != nil || err2 != nil || s.Unmap().Is4() != t.Unmap().Is4() {
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
