package flowcache

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intake-int/intake/api"
)

// TestTopology: switches and directed links come from the cached paths, with the flows'
// latest hop values (a link carries its upstream switch's), depth from the nearer end.
func TestTopology(t *testing.T) {
	f := New(small(16, 4), Deps{})
	// flow 1: 1 → 2 → 3 (twice: the latest values count, not the first)
	f.Process(0, report(flow(1), 1, hop{1, 100, 1, 0}, hop{2, 200, 2, 0}, hop{3, 300, 3, 0}))
	f.Process(0, report(flow(1), 2, hop{1, 110, 5, 0}, hop{2, 210, 6, 0}, hop{3, 310, 7, 0}))
	// flow 2: 4 → 2 → 3
	f.Process(0, report(flow(2), 3, hop{4, 400, 40, 0}, hop{2, 230, 8, 0}, hop{3, 330, 9, 0}))
	// flow 3: 3 alone
	f.Process(0, report(flow(3), 4, hop{3, 50, 1, 0}))

	srv := api.New("127.0.0.1:0", nil)
	f.RegisterAPI(srv)
	get := func(url string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+url, nil))
		return rec
	}
	rec := get("/api/v1/topology")
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	const want = `{"flows":3,"switches":[` +
		`{"id":1,"flows":1,"depth":0,"latest":{"hop_latency":{"mean":110,"max":110,"n":1},"queue_occupancy":{"mean":5,"max":5,"n":1},"tx_util":{"mean":0,"max":0,"n":1}},"first":1,"last":0},` +
		`{"id":2,"flows":2,"depth":1,"latest":{"hop_latency":{"mean":220,"max":230,"n":2},"queue_occupancy":{"mean":7,"max":8,"n":2},"tx_util":{"mean":0,"max":0,"n":2}},"first":0,"last":0},` +
		`{"id":3,"flows":3,"depth":0,"latest":{"hop_latency":{"mean":230,"max":330,"n":3},"queue_occupancy":{"mean":5.666666666666667,"max":9,"n":3},"tx_util":{"mean":0,"max":0,"n":3}},"first":1,"last":3},` +
		`{"id":4,"flows":1,"depth":0,"latest":{"hop_latency":{"mean":400,"max":400,"n":1},"queue_occupancy":{"mean":40,"max":40,"n":1},"tx_util":{"mean":0,"max":0,"n":1}},"first":1,"last":0}],` +
		`"links":[` +
		`{"from":1,"to":2,"flows":1,"latest":{"hop_latency":{"mean":110,"max":110,"n":1},"queue_occupancy":{"mean":5,"max":5,"n":1},"tx_util":{"mean":0,"max":0,"n":1}}},` +
		`{"from":2,"to":3,"flows":2,"latest":{"hop_latency":{"mean":220,"max":230,"n":2},"queue_occupancy":{"mean":7,"max":8,"n":2},"tx_util":{"mean":0,"max":0,"n":2}}},` +
		`{"from":4,"to":2,"flows":1,"latest":{"hop_latency":{"mean":400,"max":400,"n":1},"queue_occupancy":{"mean":40,"max":40,"n":1},"tx_util":{"mean":0,"max":0,"n":1}}}]}`
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	var w any
	json.Unmarshal([]byte(want), &w)
	exp, _ := json.Marshal(w)
	if string(got) != string(exp) {
		t.Errorf("topology:\n got %s\nwant %s", got, exp)
	}

	rec = get("/api/v1/topology?x=1")
	if rec.Code != 400 {
		t.Errorf("unknown parameter: %d %s", rec.Code, rec.Body)
	}
	if e := New(small(16, 4), Deps{}).Topology(TopologyLimit); e.Flows != 0 || len(e.Switches) != 0 || len(e.Links) != 0 {
		t.Errorf("empty cache: %+v", e)
	}
}

// TestTopologyLimit: an answer holds at most limit switches and links, and says when the
// paths went through more; before, flows with distinct switch ids built a map and an answer
// as large as the cache (13.8 s for 40,000 switches in the budget soak).
func TestTopologyLimit(t *testing.T) {
	f := New(small(64, 8), Deps{})
	for i := range 100 { // 100 flows, each through its own two switches
		f.Process(0, report(flow(uint16(i+1)), 1, hop{uint32(1000 + 2*i), 100, 1, 0}, hop{uint32(1001 + 2*i), 100, 1, 0}))
	}
	srv := api.New("127.0.0.1:0", nil)
	f.RegisterAPI(srv)
	for url, want := range map[string][3]int{"/api/v1/topology": {200, 100, 0}, "/api/v1/topology?limit=10": {10, 10, 1}, "/api/v1/topology?limit=200": {200, 100, 0}} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+url, nil))
		var got TopologyJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Flows != 100 || len(got.Switches) != want[0] || len(got.Links) != want[1] ||
			got.Truncated != (want[2] == 1) || strings.Contains(rec.Body.String(), "truncated") != got.Truncated {
			t.Errorf("%s: %d switches, %d links, truncated %v: %s", url, len(got.Switches), len(got.Links), got.Truncated, rec.Body.String()[:min(200, rec.Body.Len())])
		}
	}
	for _, bad := range []string{"0", "65537", "x"} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/v1/topology?limit="+bad, nil))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "an integer 1-65536") {
			t.Errorf("limit=%s: %d %s", bad, rec.Code, rec.Body)
		}
	}
}
