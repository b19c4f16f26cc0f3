package detect

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intake-int/intake/api"
)

// FuzzSetThresholds: any PUT /api/v1/thresholds body is applied whole (200) or refused
// (400, 413) without changing anything; never a panic.
func FuzzSetThresholds(f *testing.F) {
	for _, s := range []string{`{"change": {"flow_latency": 100}, "above": {"queue_occupancy": null}}`,
		`{"change": {"drops": "off"}}`, `{"above": {"seq_gaps": 18446744073709551615}}`, `{"change": {"flow_latency": 1}} x`,
		`{"below": {}}`, `[]`, `{"change": {"flow_latency": -1}}`, `{"change": {"flow_latency": 1e3}}`} {
		f.Add(s)
	}
	d := New(testConfig(), Deps{})
	srv := api.New("127.0.0.1:0", nil)
	d.RegisterAPI(srv)
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		before := d.Thresholds()
		r := httptest.NewRequest("PUT", "/api/v1/thresholds", strings.NewReader(body))
		r.Host = "localhost"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if after := d.Thresholds(); !equalThresholds(before, after) {
				t.Fatalf("refused body %q changed the thresholds", body)
			}
		default:
			t.Fatalf("body %q: %d %s", body, w.Code, w.Body)
		}
	})
}

func equalThresholds(a, b Thresholds) bool {
	if len(a.Change) != len(b.Change) || len(a.Above) != len(b.Above) {
		return false
	}
	for k, v := range a.Change {
		if w, ok := b.Change[k]; !ok || w != v {
			return false
		}
	}
	for k, v := range a.Above {
		if w, ok := b.Above[k]; !ok || w != v {
			return false
		}
	}
	return true
}
