package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/sim/dtasim"
)

// intake sim dta-bounds: --json's keys are exactly kw_empty, kw_wrong (and with --values and
// --hops, pc_empty, pc_wrong and kw_path_wrong), the values the paper's examples (DTA §4);
// the text form and the usage errors.
func TestSimDTABounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want map[string]float64
	}{
		{[]string{"--n", "2", "--alpha", "0.1", "--bits", "32", "--json"},
			map[string]float64{"kw_empty": dtasim.KWEmpty(2, 0.1, 32), "kw_wrong": dtasim.KWWrong(2, 0.1, 32)}},
		{[]string{"--n", "2", "--alpha", "0.1", "--bits", "32", "--values", "262144", "--hops", "5", "--json"},
			map[string]float64{"kw_empty": 0.03285853993348377, "kw_wrong": 1.5300949979422426e-11, "pc_empty": 0.032858539879675595, "pc_wrong": 5.566559347829482e-23,
				"kw_path_wrong": 7.650474989477094e-11}}, // DTA §4: "≈ 8·10⁻¹¹ (in at least one hop)"
	} {
		code, out, errs := runVerb(append([]string{"sim", "dta-bounds"}, c.args...)...)
		var got map[string]float64
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("%v: %d %q %s", c.args, code, out, errs)
		}
		gk, wk := keysOf(got), keysOf(c.want)
		if !slices.Equal(gk, wk) {
			t.Errorf("%v: keys %v, want %v", c.args, gk, wk)
		}
		for k, w := range c.want {
			if math.Abs(got[k]-w) > 1e-12*w {
				t.Errorf("%v: %s = %g, want %g", c.args, k, got[k], w)
			}
		}
	}
	if e := dtasim.KWEmpty(2, 0.1, 32); e >= 0.033 { // the paper: < 3.3%
		t.Errorf("kw_empty %g", e)
	}
	code, out, _ := runVerb("sim", "dta-bounds", "--n", "1", "--alpha", "0.1", "--bits", "32", "--values", "2", "--hops", "1")
	want := "Key-Write   N=1 α=0.1 b=32: empty ≤ 0.09516 (eqs. 1-3), wrong ≤ 2.216e-11 (eq. 4)\n" +
		"Postcarding |V|=2 B=1: empty ≤ 0.09516 (eqs. 5-7), wrong ≤ 6.647e-11 (eq. 8)\n" + // (1-e^-0.1)·3·2^-32
		"Key-Write for the same B=1 postcards: wrong in at least one hop ≈ 2.216e-11 (1-(1-eq. 4)^B)\n"
	if code != 0 || out != want {
		t.Errorf("text: %d\n%s\nwant\n%s", code, out, want)
	}
	for _, c := range []struct{ args, err string }{
		{"--values 5", "--values and --hops go together, both positive"},
		{"--n 0", "--n 0: allowed is 1 to 64"},
		{"--bits 65", "--bits 65: allowed is 1 to 64"},
		{"--alpha -1", "--alpha -1: must be ≥ 0"},
	} {
		code, _, errs := runVerb(append([]string{"sim", "dta-bounds"}, strings.Fields(c.args)...)...)
		if code != 2 || !strings.Contains(errs, c.err) {
			t.Errorf("%s: %d %q, want exit 2 and %q", c.args, code, errs, c.err)
		}
	}
}

func keysOf(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// intake sim dta: one small run, --json and an SVG plot; the simulated success within
// sampling error of the analysis it prints beside it.
func TestSimDTARun(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "dta-run.svg")
	code, out, errs := runVerb("sim", "dta", "--slots", "65536", "--keys", "65536", "--n", "2", "--bits", "32", "--json", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	if errs != "intake sim dta: wrote "+svg+"\n" { // it says which file it wrote (issue 31)
		t.Errorf("stderr %q", errs)
	}
	var r dtasim.SimResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Queries != 65536 || r.Load != 1 || r.Wrong != 0 || len(r.Buckets) != 20 ||
		math.Abs(r.Success-r.Expected) > 4*dtasim.StdErr(r.Expected, r.Queries) {
		t.Errorf("result: queries %d load %g success %g (analysis %g) wrong %g buckets %d", r.Queries, r.Load, r.Success, r.Expected, r.Wrong, len(r.Buckets))
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.HasPrefix(string(b), "<svg") || !strings.Contains(string(b), "Key-Write N=2, b=32, M=65536, K=65536") {
		t.Errorf("svg: %v %.200s", err, b)
	}
}

// intake sim dta --figure wrong (DART Fig. 5), scaled down: 6 storage sizes for each of 8-,
// 16- and 32-bit checksums, every key queried, the wrong answers within sampling error of
// eq. 4 and none with 32 bits, the plot written; a scale that leaves the keys no power of
// two is a usage error.
func TestSimDTAWrongFigure(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runVerb("sim", "dta", "--figure", "wrong", "--scale", "0.0078125", "--json", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var pts []dtasim.WrongPoint
	if err := json.Unmarshal([]byte(out), &pts); err != nil || len(pts) != 18 {
		t.Fatalf("%v: %d points", err, len(pts))
	}
	for _, p := range pts {
		if p.Keys != 1<<14 || p.Queries != p.Keys || math.Abs(float64(p.Wrong)-p.Expected) > 4*math.Sqrt(p.Expected)+1 || (p.Bits == 32 && p.Wrong != 0) {
			t.Errorf("%+v", p)
		}
	}
	if pts[0].Bits != 8 || pts[0].SlotsPerKey != 0.25 || pts[0].Slots != 1<<12 || pts[0].Wrong == 0 {
		t.Errorf("first point %+v", pts[0])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dta-fig-wrong.svg")); err != nil || !strings.Contains(string(b), "DART Fig. 5") {
		t.Errorf("svg: %v", err)
	}
	code, _, errs = runVerb("sim", "dta", "--figure", "wrong", "--scale", "0.3")
	if code != 2 || !strings.Contains(errs, "--scale 0.3: keys (2^21 × scale) must stay a power of two") {
		t.Errorf("--scale 0.3: %d %q", code, errs)
	}
}

// intake sim dta --figure postcard (DTA Fig. 14), scaled down: 5 cache sizes by 12
// interleavings through package dta's translator cache, each success rate within sampling
// error of (1-1/C)^I; an unknown figure lists all four.
func TestSimDTAPostcardFigure(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runVerb("sim", "dta", "--figure", "postcard", "--scale", "0.0625", "--json", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var pts []dtasim.PostcardPoint
	if err := json.Unmarshal([]byte(out), &pts); err != nil || len(pts) != 60 {
		t.Fatalf("%v: %d points", err, len(pts))
	}
	for _, p := range pts {
		if p.Flows < 8192 || p.Flows%(p.Intermediate+1) != 0 || math.Abs(p.Success-p.Expected) > 4*dtasim.StdErr(p.Expected, p.Flows)+1e-9 {
			t.Errorf("%+v", p)
		}
	}
	if p := pts[0]; p.Cache != 1024 || p.Intermediate != 1 {
		t.Errorf("first point %+v", p)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dta-fig-postcard.svg")); err != nil || !strings.Contains(string(b), "DTA Fig. 14") {
		t.Errorf("svg: %v", err)
	}
	code, _, errs = runVerb("sim", "dta", "--figure", "fig99")
	if code != 2 || !strings.Contains(errs, `--figure "fig99": allowed are load, aging, wrong and postcard`) {
		t.Errorf("--figure fig99: %d %q", code, errs)
	}
}
