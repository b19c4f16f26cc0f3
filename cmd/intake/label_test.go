package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/telemetry"
)

// GET /api/v1/label/ports and /api/v1/label/coverage through `intake query ports|coverage`
// against a real HTTP server over a controller with a fixed clock.
func TestQueryPortsCoverage(t *testing.T) {
	const ms = int64(time.Millisecond)
	cfg := label.DefaultConfig()
	c := label.New(cfg, label.Deps{Now: func() int64 { return 450 * ms }})
	srv := api.New("127.0.0.1:0", nil)
	c.RegisterAPI(srv)
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	export := func(recv int64, items ...telemetry.LabelItem) {
		r := &telemetry.Report{Format: telemetry.FormatLabel, RecvTime: recv, NLabels: uint8(len(items))}
		copy(r.Labels[:], items)
		c.Process(0, r)
	}
	// windows of 100 ms: 0 has 3/1 and 4/2, 1 has 3/1, 2 none, 3 has 4/2 (twice: once stale)
	export(10*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 1, IngressPort: 2, EgressTS: 100, DeqTimedelta: 700, DeqQDepth: 4},
		telemetry.LabelItem{SwitchID: 4, EgressPort: 2, EgressTS: 90})
	export(150*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 1, IngressPort: 2, EgressTS: 200, DeqTimedelta: 900, DeqQDepth: 5})
	export(350*ms, telemetry.LabelItem{SwitchID: 4, EgressPort: 2, EgressTS: 300, DeqTimedelta: 50})
	export(360*ms, telemetry.LabelItem{SwitchID: 4, EgressPort: 2, EgressTS: 250})
	addr := srv.Addr()

	code, out, errs := runVerb("query", "ports", "--api", addr)
	// Times with their unit and clock (issue 31: the label time was a bare number).
	want := `  switch  port  in  label time  latency  qdepth     age  received  updates  stale  shift  active
       3     1   2    t+200 ns   900 ns       5  300 ms  t+150 ms        2      0      0    true
       4     2   0    t+300 ns    50 ns       0  100 ms  t+360 ms        2      1      0    true
2 ports
`
	if code != 0 || out != want {
		t.Fatalf("query ports: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errs, out, want)
	}
	code, out, _ = runVerb("query", "ports", "--api", addr, "--switch", "4", "--json")
	var pr label.PortsResponse
	if err := json.Unmarshal([]byte(out), &pr); code != 0 || err != nil || pr.Count != 1 || len(pr.Ports) != 1 ||
		pr.Ports[0] != (label.PortState{SwitchID: 4, Port: 2, LabelTime: 300, LatencyNs: 50, AgeMs: 100, Updates: 2, Stale: 1, Active: true, LastReceived: 360 * ms}) {
		t.Fatalf("query ports --switch 4 --json: exit %d, %v, %s", code, err, out)
	}
	code, out, _ = runVerb("query", "coverage", "--api", addr, "--windows", "4")
	// Windows by their start on the collector's clock (here since its zero), coverage in
	// percent.
	want = `telemetry interval 100 ms, clock receive, 2 ports known
     start  updated  active  coverage
    t+0 ns        2       2   100.00%
  t+100 ms        1       2    50.00%
  t+200 ms        0       2     0.00%
  t+300 ms        1       2    50.00%
mean 50.00% over 4 windows
`
	if code != 0 || out != want {
		t.Fatalf("query coverage: exit %d, stdout\n%s\nwant\n%s", code, out, want)
	}
	code, out, _ = runVerb("query", "coverage", "--api", addr, "--windows", "1", "--json")
	var cr label.CoverageReport
	if err := json.Unmarshal([]byte(out), &cr); code != 0 || err != nil || len(cr.Windows) != 1 || cr.Windows[0] != (label.Window{Index: 3, StartNs: 300 * ms, Updated: 1, Active: 2, Coverage: 0.5}) {
		t.Fatalf("query coverage --json: exit %d, %v, %s", code, err, out)
	}
	// Bad parameters: 400 with the API's error, and the verbs' own checks.
	code, _, errs = runVerb("query", "coverage", "--api", addr, "--windows", "0")
	if code != 2 || !strings.Contains(errs, "--windows 0: must be in [1, 1000]") {
		t.Fatalf("--windows 0: exit %d, %q", code, errs)
	}
	resp, err := http.Get("http://" + addr + "/api/v1/label/ports?switch_id=300")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "switch_id") {
		t.Fatalf("switch_id=300: %s %s", resp.Status, body)
	}
}
