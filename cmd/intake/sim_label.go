package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/internal/sim/labelsim"
)

// intake sim label-dist: the labeling-times analysis of INT-label §4.3.
// intake sim label: the §6.2 evaluation on the emulated testbed.
// The work is package sim/labelsim's; this file parses flags and prints.

func init() {
	registerSub("sim", verb{name: "label-dist", summary: "INT-label §4.3: distribution and expectation of labeling times Z_A, Z_B", run: runSimLabelDist})
	registerSub("sim", verb{name: "label", summary: "INT-label §6.2: reproduce the evaluation figures on the emulated testbed", run: runSimLabel})
}

func runSimLabelDist(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim label-dist", "[--k K] [--ratio TS_OVER_T] [--algo a|b] [--function F1|F2|F3] [--interval-prob linear|flat] [--max-hop N] [--json]", stdout)
	k := fs.Int("k", 4, "fat tree arity `K` (even, ≥ 4)")
	ratio := fs.Float64("ratio", 0.01, "`RATIO` T_s/T: the per-switch interval-based labeling probability")
	algo := fs.String("algo", "b", "`ALGORITHM`: a (Base A) or b (Base B)")
	fname := fs.String("function", "F1", "Base B probability `FUNCTION`: F1 (f(0)=0, f(i)=1), F2 (i/(MAX_hop-1)), F3 (F2·interval/T, at interval/T = 1/2)")
	gname := fs.String("interval-prob", "linear", "`G`, the interval-based probability g given f: linear (g(x) = ratio·(1-x), the default) or flat (ratio until f = 1)")
	maxHop := fs.Int("max-hop", 5, "MAX_hop, at most `N` labels (Figs. 15-16 use f(i) = i/5: --function F2 --max-hop 6)")
	// The paper's letters, the flags' first names (fabric's --function is the same F).
	cli.Alias(fs, "f", "function", stderr)
	cli.Alias(fs, "g", "interval-prob", stderr)
	asJSON := fs.Bool("json", false, `print {"dist": [P(Z=0..5)], "expectation": E[Z], ...}`)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	switch {
	case *k < 4 || *k%2 != 0:
		return usageErr("--k %d: must be even and at least 4", *k)
	case !(*ratio > 0 && *ratio <= 1):
		return usageErr("--ratio %g: must be in (0, 1]", *ratio)
	case *algo != "a" && *algo != "b":
		return usageErr("--algo %q: must be a or b", *algo)
	case *maxHop < 2 || *maxHop > 127:
		return usageErr("--max-hop %d: must be in [2, 127]", *maxHop)
	}
	f, err := label.ParseF(*fname)
	if err == nil && f == label.F3Proto {
		err = fmt.Errorf("%q: the §4.3 analysis has no term for it; use F1, F2 or F3", f)
	}
	if err != nil {
		return usageErr("--function %v", err)
	}
	g, err := labelsim.ParseG(*gname)
	if err != nil {
		return usageErr("--interval-prob %v", err)
	}
	var d labelsim.Dist
	if *algo == "a" {
		d = labelsim.DistA(*k, *ratio)
	} else {
		d = labelsim.DistB(*k, *ratio, f, g, *maxHop)
	}
	if *asJSON {
		out := struct {
			Algo        string     `json:"algo"`
			K           int        `json:"k"`
			Ratio       float64    `json:"ratio"`
			F           string     `json:"f,omitempty"`
			G           string     `json:"g,omitempty"`
			MaxHop      int        `json:"max_hop"`
			Hops        [6]float64 `json:"hops"`
			Dist        [6]float64 `json:"dist"`
			Expectation float64    `json:"expectation"`
		}{*algo, *k, *ratio, "", "", *maxHop, labelsim.HopDist(*k), d.P, d.Expectation}
		if *algo == "b" {
			out.F, out.G = string(f), string(g)
		}
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}
	name := "Z_A (Base A)"
	if *algo == "b" {
		name = fmt.Sprintf("Z_B (Base B, %s, g %s, MAX_hop %d)", f, g, *maxHop)
	}
	fmt.Fprintf(stdout, "%s, k = %d, T_s/T = %g\n", name, *k, *ratio)
	hd := labelsim.HopDist(*k)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "s\tP(Z = s)\tP(H = s)\t\n")
	for s := range d.P {
		fmt.Fprintf(tw, "%d\t%.6g\t%.6g\t\n", s, d.P[s], hd[s])
	}
	tw.Flush()
	fmt.Fprintf(stdout, "E[Z] = %.6g\n", d.Expectation)
	return nil
}

func runSimLabel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim label", simUsage("ID,...")+" [--seed N] [--long] [--testbed] [--rate MBPS] [--coverage active|fixed]", stdout)
	figs := fs.String("figure", "", "the figures to reproduce, `ID,...` (default all): "+strings.Join(labelsim.IDs(), ", ")+"; fig7-8 names fig7 and fig8")
	cli.Alias(fs, "fig", "figure", stderr)
	so := addSimOutput(fs)
	seed := fs.Uint64("seed", 1, "the PCG `SEED`")
	long := fs.Bool("long", false, "longer and larger runs: 100 s instead of 20 s per coverage point, Figs. 15-16 simulated on fat trees up to k = 14 with 1,000,000 packets per point")
	paper := fs.Bool("paper-setup", false, "deprecated, now the default: the paper's configuration (5 Mb/s in total, the prototype's source routes over 25 ports, 1 Gb/s links, Pro the §5 flag controller, Fig. 19's F3 time only)")
	testbed := fs.Bool("testbed", false, "the emulator's own testbed instead of the paper's configuration: fixed routes over 18 ports, 20 Mb/s links, 5 Mb/s per sender, Fig. 19's F3 as the paper writes it")
	rate := fs.Float64("rate", 0, "the senders' total rate in `MBPS` (default 5, or 10 with --testbed; Fig. 6 sweeps its own)")
	coverage := fs.String("coverage", "active", "the coverage definition: `active` (ports updated over ports with traffic per 100 ms window, §6.2) or fixed (over the prototype's list of 25 ports)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cov, err := labelsim.ParseCoverage(*coverage)
	switch {
	case err != nil:
		return usageErr("--coverage %v", err)
	case *paper && *testbed:
		return usageErr("--paper-setup and --testbed: choose one")
	case *rate < 0:
		return usageErr("--rate %g: must be positive", *rate)
	}
	if *paper {
		fmt.Fprintln(stderr, "intake: --paper-setup is deprecated: the paper's configuration is the default")
	}
	var only []string
	if *figs != "" {
		only = strings.Split(*figs, ",")
	}
	start := time.Now()
	res, err := labelsim.Reproduce(labelsim.Options{Long: *long, Seed: *seed, Paper: *paper, Testbed: *testbed, Rate: *rate * 1e6, Coverage: cov, Progress: func(id string) {
		if !so.quiet {
			fmt.Fprintf(stderr, "intake sim label: %s (%s)\n", id, time.Since(start).Round(time.Millisecond))
		}
	}}, only...)
	if errors.Is(err, labelsim.ErrUnknownFigure) {
		return usageErr("--figure %v", err)
	}
	if err != nil {
		return err
	}
	for i := range res {
		if err := so.write("sim label", "label-"+res[i].ID+".svg", res[i].Chart().SVG(), stderr); err != nil {
			return err
		}
	}
	asJSON := &so.json
	if *asJSON {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(struct {
			Figures []labelsim.Figure `json:"figures"`
		}{res})
	}
	for _, f := range res {
		fmt.Fprintf(stdout, "== %s: %s\nconditions: %s\npaper:  %s\nintake: %s\n", f.ID, f.Title, f.Conditions, f.Paper, f.Intake)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "series\t%s\t%s\t\n", f.XLabel, f.YLabel)
		for _, s := range f.Series {
			for i := range s.X {
				fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t\n", s.Name, s.X[i], s.Y[i])
			}
		}
		tw.Flush()
		fmt.Fprintln(stdout)
	}
	if !so.quiet {
		fmt.Fprintf(stderr, "intake sim label: done in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}
