package cluster

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzMerge: the members' answers are bytes from the network. Whatever two members send,
// every merge returns an object or an error, never panics, and what it returns encodes.
func FuzzMerge(f *testing.F) {
	f.Add(`{"by":"packets","n":3,"flows":[{"src":"a","packets":9,"last_seen":"2026-01-01T00:00:01Z"}]}`,
		`{"by":"latency","n":1,"flows":[{"latency":{"mean":1.5},"last_seen":"x"},{"latency":null}]}`, "n=2")
	f.Add(`{"events":[{"seq":1,"time_ns":10},{"seq":2,"time_ns":"40"}]}`, `{"events":[1,2]}`, "limit=1")
	f.Add(`{"clock":"wall","ports_known":4,"windows":[{"index":7,"start_ns":700,"updated":1,"active":4}]}`,
		`{"windows":[{"index":7,"updated":-1,"active":1},{"index":"x"}],"ports_known":1e99}`, "windows=2")
	f.Add(`{"switch":"3","total":5,"counts":[{"lo":0,"hi":1,"count":2}]}`, `{"counts":[{"lo":-1,"count":18446744073709551616}]}`, "")
	f.Add(`{"switches":[3,1]}`, `{"switches":"x"}`, "")
	f.Add(`null`, `[]`, "limit=x")
	rt := &Router{names: []string{"a", "b"}, deps: Deps{EventsLimit: 2}}
	mergers := []merger{rt.mergeTop, rt.mergeEvents, mergeCoverage, mergeHistList, mergeHist}
	f.Fuzz(func(t *testing.T, a, b, query string) {
		req := httptest.NewRequest("GET", "/x", nil)
		req.URL.RawQuery = query
		for i, m := range mergers {
			v, err := m(req, [][]byte{[]byte(a), []byte(b)})
			if err != nil {
				continue
			}
			if _, ok := v.(map[string]any); !ok {
				t.Fatalf("merger %d returned %T", i, v)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("merger %d: %v", i, err)
			}
		}
	})
}
