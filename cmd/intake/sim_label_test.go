package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimLabelDistJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"sim", "label-dist", "--k", "4", "--ratio", "1", "--algo", "a", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v struct {
		Dist        []float64 `json:"dist"`
		Expectation float64   `json:"expectation"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	// ratio 1: every switch labels, Z_A = H: E = (1·1 + 3·2 + 5·12)/15
	if len(v.Dist) != 6 || v.Expectation < 4.4666 || v.Expectation > 4.4667 {
		t.Fatalf("%s", out.String())
	}
	// Base B with F1 at T_s/T = 1/2: unlabeled until a first label (probability 1/2 per
	// hop), then labeled at every later hop (f = 1). H = 1, 3, 5 with probabilities
	// 1/15, 2/15, 12/15 (k = 4); E = (1/2 + 2·17/8 + 12·129/32)/15 = 53.125/15.
	out.Reset()
	if code := run([]string{"sim", "label-dist", "--k", "4", "--ratio", "0.5", "--algo", "b", "--function", "F1", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	want := []float64{(0.5 + 2*0.125 + 12.0/32) / 15, (0.5 + 2*0.125 + 12.0/32) / 15, (2*0.25 + 12.0/16) / 15, (2*0.5 + 12.0/8) / 15, 12.0 / 4 / 15, 12.0 / 2 / 15}
	for s := range want {
		if math.Abs(v.Dist[s]-want[s]) > 1e-12 {
			t.Fatalf("P(Z_B = %d) = %v, want %v (%s)", s, v.Dist[s], want[s], out.String())
		}
	}
	if math.Abs(v.Expectation-53.125/15) > 1e-12 {
		t.Fatalf("E[Z_B] = %v, want %v", v.Expectation, 53.125/15)
	}
	errb.Reset()
	if code := run([]string{"sim", "label-dist", "--function", "F9"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `--function "F9": must be one of F1, F2, F3`) {
		t.Fatalf("bad --f: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"sim", "label-dist", "--f", "F3-prototype"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "intake: --f is deprecated: use --function, which means the same\n") || !strings.Contains(errb.String(), `--function "F3-prototype": the §4.3 analysis has no term for it; use F1, F2 or F3`) {
		t.Fatalf("--f F3-prototype: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"sim", "label-dist", "--algo", "c"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `--algo "c": must be a or b`) {
		t.Fatalf("bad --algo: exit %d, %q", code, errb.String())
	}
}

func TestSimLabelOneFigure(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	if code := run([]string{"sim", "label", "--figure", "fig19", "--json", "--quiet", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "intake sim label: wrote " + filepath.Join(dir, "label-fig19.svg") + "\n"; errb.String() != want { // issue 31
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	var v struct {
		Figures []struct {
			ID     string `json:"id"`
			Series []struct {
				Y []float64 `json:"y"`
			} `json:"series"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Figures) != 1 || v.Figures[0].ID != "fig19" {
		t.Fatalf("%v %s", err, out.String())
	}
	svg, err := os.ReadFile(filepath.Join(dir, "label-fig19.svg"))
	if err != nil || !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "Impact of the probability function (Base B)") {
		t.Errorf("--out: %v %.200s", err, svg)
	}
}

// The paper's configuration is the default (issue 32): Fig. 19 with the time-only F3 labelled
// as inferred, at 5 Mb/s in total over the prototype's routes. --paper-setup, which once
// selected it, still works and says it is deprecated; --testbed is the emulator's own
// setup, with the F3 the paper writes (the old default's numbers).
func TestSimLabelPaperSetup(t *testing.T) {
	fig19 := func(args ...string) (string, string, string) {
		var out, errb bytes.Buffer
		if code := run(append([]string{"sim", "label", "--figure", "fig19", "--json", "--quiet"}, args...), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		var v struct {
			Figures []struct {
				Conditions string `json:"conditions"`
				Series     []struct {
					Y []float64 `json:"y"`
				} `json:"series"`
			} `json:"figures"`
		}
		if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Figures) != 1 || len(v.Figures[0].Series) != 2 {
			t.Fatalf("%v %s", err, out.String())
		}
		f := v.Figures[0]
		return f.Conditions, fmt.Sprint(f.Series[0].Y, f.Series[1].Y), errb.String()
	}
	cond, got, _ := fig19()
	if !strings.HasPrefix(cond, "paper configuration: 5 Mb/s total (2 senders), the prototype's source routes (25 ports)") || !strings.Contains(cond, "F3 inferred from the prototype's code, time only") {
		t.Errorf("conditions %q", cond)
	}
	if got != "[2826 3364 7706] [8147 7593 14424]" {
		t.Errorf("labeled packets, labeling times: %s", got)
	}
	if _, dep, stderr := fig19("--paper-setup"); dep != got || stderr != "intake: --paper-setup is deprecated: the paper's configuration is the default\n" {
		t.Errorf("--paper-setup: %s, stderr %q", dep, stderr)
	}
	cond, got, _ = fig19("--testbed")
	if !strings.HasPrefix(cond, "emulator testbed (--testbed): 10 Mb/s total") || strings.Contains(cond, "F3 inferred") || got != "[1316 1605 1714] [2946 2875 2744]" {
		t.Errorf("--testbed: %q %s", cond, got)
	}
	var out, errb bytes.Buffer
	// fig7-8, the one panel Figs. 7 and 8 once shared, names both.
	if code := run([]string{"sim", "label", "--figure", "fig7-8", "--json", "--quiet"}, &out, &errb); code != 0 || !strings.Contains(out.String(), `"id": "fig7"`) || !strings.Contains(out.String(), `"id": "fig8"`) {
		t.Errorf("--figure fig7-8: exit %d, %.300s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"sim", "label", "--coverage", "all"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `--coverage "all": must be active or fixed`) {
		t.Errorf("--coverage all: exit %d, %q", code, errb.String())
	}
}
