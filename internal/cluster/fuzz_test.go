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
	f.Add(`{"period_ns":10,"switches":[{"switch_id":3,"points":[{"t_ns":10,"hop_latency_mean_ns":1.5,"flows":2,"reports":4}]}],"flows":[{"flow":{"src":"a"},"text":"t","points":[{"t_ns":10,"packets":3,"latency_mean_ns":2}]}]}`,
		`{"switches":[{"switch_id":3,"points":[{"t_ns":10,"hop_latency_mean_ns":1e308,"flows":1e308}]}],"flows":[{"text":"t","points":[{"t_ns":"x"}]}]}`, "")
	f.Add(`{"flows":1,"switches":[{"id":2,"flows":1,"depth":0,"latest":{"hop_latency":{"mean":3,"max":3,"n":1}},"first":1,"last":0}],"links":[{"from":1,"to":2,"flows":1,"latest":{}}]}`,
		`{"flows":"x","switches":[{"id":2,"latest":{"hop_latency":7}}],"links":[{"from":1,"to":2,"latest":{"tx_util":{"mean":1e400,"n":-1}}}],"truncated":true}`, "limit=1")
	rt := &Router{deps: Deps{EventsLimit: 2}}
	view := &View{Names: []string{"a", "b"}}
	mergers := []merger{rt.mergeTop, rt.mergeEvents, mergeCoverage, mergeHistList, mergeHist, mergeHistory, mergeTopology}
	f.Fuzz(func(t *testing.T, a, b, query string) {
		req := httptest.NewRequest("GET", "/x", nil)
		req.URL.RawQuery = query
		for i, m := range mergers {
			v, err := m(req, view, [][]byte{[]byte(a), []byte(b)})
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
