package cluster

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func mustMerge(t *testing.T, m merger, path string, parts ...string) string {
	t.Helper()
	bs := make([][]byte, len(parts))
	for i, p := range parts {
		if p != "" {
			bs[i] = []byte(p)
		}
	}
	v, err := m(httptest.NewRequest("GET", path, nil), &View{Names: make([]string, len(bs))}, bs)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMergeCoverage(t *testing.T) {
	got := mustMerge(t, mergeCoverage, "/api/v1/label/coverage",
		`{"clock":"wall","telemetry_interval_ms":50,"ports_known":4,"windows":[{"index":7,"start_ns":700,"updated":1,"active":4,"coverage":0.25},{"index":8,"start_ns":800,"updated":4,"active":4,"coverage":1}],"mean":0.625}`,
		"", // a member missing
		`{"clock":"wall","telemetry_interval_ms":50,"ports_known":2,"windows":[{"index":8,"start_ns":800,"updated":0,"active":2,"coverage":0},{"index":9,"start_ns":900,"updated":2,"active":2,"coverage":1}],"mean":0.5}`)
	want := `{"clock":"wall","mean":0.6388888888888888,"ports_known":6,"telemetry_interval_ms":50,"windows":[` +
		`{"active":4,"coverage":0.25,"index":7,"start_ns":700,"updated":1},` +
		`{"active":6,"coverage":0.6666666666666666,"index":8,"start_ns":800,"updated":4},` +
		`{"active":2,"coverage":1,"index":9,"start_ns":900,"updated":2}]}`
	if got != want {
		t.Errorf("coverage\n got %s\nwant %s", got, want)
	}
}

func TestMergeHistograms(t *testing.T) {
	got := mustMerge(t, mergeHist, "/api/v1/histograms/3/hop_latency",
		"", // this switch unseen on the first member (404)
		`{"switch":"3","metric":"hop_latency","scale":"log2","bins":64,"total":5,"counts":[{"lo":0,"hi":1,"count":2},{"lo":1024,"hi":2048,"count":3}]}`,
		`{"switch":"3","metric":"hop_latency","scale":"log2","bins":64,"total":18446744073709551610,"counts":[{"lo":1024,"hi":2048,"count":18446744073709551605},{"lo":4096,"count":5}]}`)
	want := `{"bins":64,"counts":[{"count":2,"hi":1,"lo":0},{"count":18446744073709551608,"hi":2048,"lo":1024},{"count":5,"lo":4096}],"metric":"hop_latency","scale":"log2","switch":"3","total":18446744073709551615}`
	if got != want {
		t.Errorf("histogram\n got %s\nwant %s", got, want)
	}
	got = mustMerge(t, mergeHistList, "/api/v1/histograms",
		`{"switches":[3,1],"metrics":["hop_latency"],"e2e":["latency"]}`, `{"switches":[2,3],"metrics":["hop_latency"],"e2e":["latency"]}`)
	if want := `{"e2e":["latency"],"metrics":["hop_latency"],"switches":[1,2,3]}`; got != want {
		t.Errorf("histogram list %s", got)
	}
}
