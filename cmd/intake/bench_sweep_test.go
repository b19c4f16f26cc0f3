package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/bench"
)

// TestBenchSweep runs a two-value rate sweep over loopback, below capacity: one point per
// value in order, each with socket mode's rate the one sent, no loss and some CPU; the SVG
// has the sweep given with --svg-with (dashed after it) and this one, with their names.
func TestBenchSweep(t *testing.T) {
	dir := t.TempDir()
	earlier := bench.Sweep{Param: "pps", Label: "earlier", Mode: "socket", Points: []bench.SweepPoint{
		{Value: 500, CPUPercent: map[string]float64{"socket": 1}}, {Value: 1500, CPUPercent: map[string]float64{"socket": 3}}}}
	b, _ := json.Marshal(earlier)
	with, svg := filepath.Join(dir, "earlier.json"), filepath.Join(dir, "fig.svg")
	if err := os.WriteFile(with, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runVerb("bench", "ingest", "--duration", "300ms", "--collector-sockets", "1", "--format", "tr2.0",
		"--sweep", "pps=1000,2000", "--sweep-label", "now", "--svg", svg, "--svg-with", with, "--title", "Fig. 10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s bench.Sweep
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if s.Param != "pps" || s.Label != "now" || s.Mode != "socket" || s.CPU != "collector process" || len(s.Points) != 2 ||
		!strings.Contains(s.Conditions, "tr2.0, 1 report(s)/datagram, 5 hops, ") || !strings.Contains(s.Conditions, "; the rate swept; socket mode across a loopback") {
		t.Fatalf("sweep %+v", s)
	}
	for i, want := range []float64{1000, 2000} {
		p := s.Points[i]
		if p.Value != want || math.Abs(p.ReportsPerS["socket"]-want) > 0.15*want || p.Loss["socket"] != 0 || p.CPUPercent["socket"] <= 0 {
			t.Errorf("point %d: %+v, want value %g at that many reports/s, no loss, some CPU", i, p, want)
		}
	}
	fig, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Fig. 10", "socket mode, earlier", "socket mode, now", "stroke-dasharray", "datagrams per second sent"} {
		if !strings.Contains(string(fig), want) {
			t.Errorf("figure has no %q", want)
		}
	}

	// Draw only: the two sweeps' JSON again, nothing measured, the same figure.
	now := filepath.Join(dir, "now.json")
	if err := os.WriteFile(now, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.svg")
	if code, out, errs := runVerb("bench", "ingest", "--svg", again, "--svg-with", with+","+now, "--title", "Fig. 10"); code != 0 || out != "" {
		t.Fatalf("draw only: exit %d, stdout %q: %s", code, out, errs)
	}
	if b, err := os.ReadFile(again); err != nil || string(b) != string(fig) {
		t.Errorf("draw only: %v; the figure differs from the measuring run's", err)
	}
}

func TestBenchSweepMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", "speed=1"}, `--sweep: "speed=1": want PARAM=V1,V2,... with PARAM one of pps, hops, flows, fields, vary`},
		{[]string{"--sweep", "hops=1,2.5"}, `--sweep: hops: "2.5": want a whole number`},
		{[]string{"--sweep", "pps=-1"}, `--sweep: pps: "-1": want a non-negative number`},
		{[]string{"--sweep", "vary=0,2"}, `--sweep: vary: "2": want a probability, 0 to 1`},
		{[]string{"--svg", "f.svg"}, "--svg, --svg-with and --sweep-label need --sweep (or --svg and --svg-with alone: draw those sweeps)"},
		{[]string{"--svg", "f.svg", "--svg-with", "a.json", "--sweep-label", "x"}, "--svg, --svg-with and --sweep-label need --sweep"},
		{[]string{"--sweep", "pps=1", "--svg-with", "a.json"}, "--svg-with: needs --svg"},
	} {
		code, _, errs := runVerb(append([]string{"bench", "ingest"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestBenchSweepEvents sweeps --events over loopback at 2000 reports/s (INTCollector Fig.
// 11's event-rate panel's report: 3 hops, 100 flows, 9 fields): at 0 the detector raises
// no event past the new keys, at 200 it raises 200 a second within the pacing's jitter, as
// its own counters say (events_per_s); the table prints them.
func TestBenchSweepEvents(t *testing.T) {
	args := []string{"bench", "ingest", "--duration", "1s", "--pps", "2000", "--collector-sockets", "1", "--format", "tr2.0",
		"--hops", "3", "--flows", "100", "--fields", "9", "--sweep", "events=0,200"}
	code, out, errs := runVerb(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s bench.Sweep
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if s.Param != "events" || len(s.Points) != 2 || !strings.Contains(s.Conditions, "3 hops, 100 flows, 9 fields, constant values but for the events (draw model, vary 0), events/s swept; 2000 datagrams/s") {
		t.Fatalf("sweep %+v", s)
	}
	for i, want := range []float64{0, 200} {
		p := s.Points[i]
		got := p.EventsPerS["socket"]
		if p.Value != want || math.Abs(got-want) > 0.05*want || p.Loss["socket"] != 0 {
			t.Errorf("point %d: value %g, %.1f events/s raised, loss %g; want %g events/s, no loss", i, p.Value, got, p.Loss["socket"], want)
		}
	}
	if code, _, errs := runVerb("bench", "ingest", "--events", "10", "--hops", "3"); code != 2 || !strings.Contains(errs, "--events: N a second needs a rate (--pps), or --interval for the generated time a report") {
		t.Errorf("--events without --pps: exit %d: %s", code, errs)
	}
}
