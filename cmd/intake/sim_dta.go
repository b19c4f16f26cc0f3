package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/intake-int/intake/dta"
)

// intake sim dta-bounds: the DTA appendix's bounds (eqs. 1-8). intake sim dta: the Monte
// Carlo over a real Key-Write store, one run or the papers' figures (DART Fig. 3 / DTA Fig.
// 12: success against load factor for N = 1-4; DART Fig. 4 / DTA Fig. 13: aging of 5-hop
// path traces).

func init() {
	registerSub("sim", verb{name: "dta-bounds", summary: "DTA/DART bounds on empty and wrong returns (Key-Write eqs. 1-4, Postcarding eqs. 5-8)", run: runSimBounds})
	registerSub("sim", verb{name: "dta", summary: "Monte Carlo of Key-Write over a real store; DART Fig. 3-4 / DTA Fig. 12-13", run: runSimDTA})
}

func runSimBounds(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim dta-bounds", "--n N --alpha A --bits B [--values V --hops H] [--json]", stdout)
	n := fs.Int("n", 2, "redundancy `N`")
	alpha := fs.Float64("alpha", 0.1, "later writes over slots (or chunks), `α`")
	b := fs.Int("bits", 32, "checksum (Postcarding: slot) width `b`")
	values := fs.Int("values", 0, "Postcarding: |V|, the number of possible values")
	hops := fs.Int("hops", 0, "Postcarding: B, hops per chunk")
	asJSON := fs.Bool("json", false, "print kw_empty, kw_wrong (and pc_empty, pc_wrong) as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case *n < 1 || *n > 64:
		return usageErr("--n %d: allowed is 1 to 64", *n)
	case *alpha < 0:
		return usageErr("--alpha %g: must be ≥ 0", *alpha)
	case *b < 1 || *b > 64:
		return usageErr("--bits %d: allowed is 1 to 64", *b)
	case (*values > 0) != (*hops > 0) || *values < 0 || *hops < 0:
		return usageErr("--values and --hops go together, both positive")
	}
	out := map[string]float64{"kw_empty": dta.KWEmpty(*n, *alpha, *b), "kw_wrong": dta.KWWrong(*n, *alpha, *b)}
	if *values > 0 {
		out["pc_empty"] = dta.PCEmpty(*n, *alpha, *b, *values, *hops)
		out["pc_wrong"] = dta.PCWrong(*n, *alpha, *b, *values, *hops)
	}
	if *asJSON {
		bs, _ := json.Marshal(out)
		_, err := fmt.Fprintf(stdout, "%s\n", bs)
		return err
	}
	fmt.Fprintf(stdout, "Key-Write   N=%d α=%g b=%d: empty ≤ %.4g (eqs. 1-3), wrong ≤ %.4g (eq. 4)\n", *n, *alpha, *b, out["kw_empty"], out["kw_wrong"])
	if *values > 0 {
		fmt.Fprintf(stdout, "Postcarding |V|=%d B=%d: empty ≤ %.4g (eqs. 5-7), wrong ≤ %.4g (eq. 8)\n", *values, *hops, out["pc_empty"], out["pc_wrong"])
	}
	return nil
}

func progress(w io.Writer, label string) func(done, total int) {
	start := time.Now()
	return func(done, total int) {
		f := float64(done) / float64(total)
		bar := int(f * 30)
		fmt.Fprintf(w, "\r%s [%-30s] %5.1f%% %s", label, strings.Repeat("#", bar), 100*f, time.Since(start).Round(time.Second))
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}

func runSimDTA(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim dta", "[--figure load|aging] [--slots M --keys K --n N --bits B --value-bytes W] [--json] [--svg FILE]", stdout)
	figure := fs.String("figure", "", "reproduce a figure: load (DART Fig. 3 / DTA Fig. 12) or aging (DART Fig. 4 / DTA Fig. 13); empty: one run")
	slots := fs.Int("slots", 1<<20, "store slots `M` (a power of two)")
	keys := fs.Int("keys", 1<<20, "keys `K` inserted")
	n := fs.Int("n", 2, "redundancy `N`")
	bits := fs.Int("bits", 32, "checksum width `b`")
	vb := fs.Int("value-bytes", 4, "value width `W` (20: a 5-hop path of 4-byte ids)")
	buckets := fs.Int("buckets", 20, "age buckets")
	scale := fs.Float64("scale", 1, "aging: scale the 100 M-key / 3 GiB case by this `factor` at equal load factor")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	svg := fs.String("svg", "", "write a plot to `file` (SVG)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	prog := func(label string) func(int, int) {
		if *quiet {
			return nil
		}
		return progress(stderr, label)
	}
	var out any
	var plot []byte
	switch *figure {
	case "":
		r, err := dta.SimKW(dta.SimConfig{Slots: *slots, Keys: *keys, N: *n, Bits: *bits, ValueBytes: *vb, Buckets: *buckets, Seed: 1, Progress: prog("sim")})
		if err != nil {
			return usageErr("%v", err)
		}
		out = r
		var sim, bound dta.Series
		sim.Name, bound.Name, bound.Dashed = "simulated", "analysis", true
		for _, b := range r.Buckets {
			a := (b.AlphaFrom + b.AlphaTo) / 2
			sim.X, sim.Y = append(sim.X, a), append(sim.Y, b.Success)
			bound.X, bound.Y = append(bound.X, a), append(bound.Y, b.Bound)
		}
		plot = dta.PlotSVG(fmt.Sprintf("Key-Write N=%d, b=%d, M=%d, K=%d", *n, *bits, *slots, *keys), "key age (later inserts / slots)", "query success", r.Load, []dta.Series{sim, bound}, nil)
		if !*asJSON {
			fmt.Fprintf(stdout, "N=%d b=%d M=%d K=%d (load %.3g, %d MiB): success %.4f (analysis %.4f), empty %.4f, wrong %.2g; oldest %.0f%%: success %.4f (analysis %.4f)\n",
				*n, *bits, *slots, *keys, r.Load, r.Bytes>>20, r.Success, r.Expected, r.Empty, r.Wrong, 100.0/float64(*buckets), r.Oldest.Success, r.Oldest.Bound)
		}
	case "load":
		res, p, err := figureLoad(*slots, *bits, *vb, prog, stdout, *asJSON)
		if err != nil {
			return err
		}
		out, plot = res, p
	case "aging":
		res, p, err := figureAging(*scale, *n, prog, stdout, *asJSON)
		if err != nil {
			return err
		}
		out, plot = res, p
	default:
		return usageErr("--figure %q: allowed are load and aging", *figure)
	}
	if *asJSON {
		bs, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", bs)
	}
	if *svg != "" {
		return os.WriteFile(*svg, plot, 0o644)
	}
	return nil
}

// LoadPoint is one point of the load figure.
type LoadPoint struct {
	N        int     `json:"n"`
	Load     float64 `json:"load_factor"`
	Success  float64 `json:"success"`
	Expected float64 `json:"bound_success"`
}

// figureLoad: average success against load factor for N = 1-4 (DART Fig. 3, DTA Fig. 12).
func figureLoad(slots, bits, vb int, prog func(string) func(int, int), stdout io.Writer, quietText bool) ([]LoadPoint, []byte, error) {
	var pts []LoadPoint
	var series []dta.Series
	loads := []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1, 1.25, 1.5, 1.75, 2}
	best := make([]int, len(loads))
	bestV := make([]float64, len(loads))
	for n := 1; n <= 4; n++ {
		s := dta.Series{Name: fmt.Sprintf("N=%d", n)}
		for i, l := range loads {
			r, err := dta.SimKW(dta.SimConfig{Slots: slots, Keys: int(l * float64(slots)), N: n, Bits: bits, ValueBytes: vb, Buckets: 1, Seed: uint64(n), Progress: prog(fmt.Sprintf("N=%d load %.2f", n, l))})
			if err != nil {
				return nil, nil, usageErr("%v", err)
			}
			pts = append(pts, LoadPoint{N: n, Load: l, Success: r.Success, Expected: r.Expected})
			s.X, s.Y = append(s.X, l), append(s.Y, r.Success)
			if r.Success > bestV[i] {
				best[i], bestV[i] = n, r.Success
			}
			if !quietText {
				fmt.Fprintf(stdout, "N=%d load %.2f: success %.4f (analysis %.4f)\n", n, l, r.Success, r.Expected)
			}
		}
		series = append(series, s)
	}
	var bands [][3]float64
	for i := range loads {
		lo := 0.0
		if i > 0 {
			lo = (loads[i-1] + loads[i]) / 2
		}
		hi := loads[i]
		if i+1 < len(loads) {
			hi = (loads[i] + loads[i+1]) / 2
		}
		bands = append(bands, [3]float64{lo, hi, float64(best[i] - 1)})
	}
	return pts, dta.PlotSVG("Key-Write average query success vs load factor (shade: best N)", "load factor (keys / slots)", "average query success", 2, series, bands), nil
}

// AgingResult is the aging figure's outcome for one storage size.
type AgingResult struct {
	Label  string        `json:"label"`
	Scaled bool          `json:"scaled"`
	Result dta.SimResult `json:"result"`
}

// figureAging: 100 M 5-hop paths (20-byte values, 32-bit checksums, 24-byte slots) into
// 3 GiB = 2^27 slots and 30 GiB (scaled down 10x at equal load factor), N = 2 (and N = 4
// for 30 GiB) (DART Fig. 4, DTA Fig. 13).
func figureAging(scale float64, n int, prog func(string) func(int, int), stdout io.Writer, quietText bool) ([]AgingResult, []byte, error) {
	keys := int(100e6 * scale)
	slots3 := int(float64(1<<27) * scale)
	if !powerOfTwo(slots3) {
		return nil, nil, usageErr("--scale %g: slots (2^27 × scale) must stay a power of two", scale)
	}
	runs := []struct {
		label   string
		keys, m int
		n       int
		scaled  bool
	}{
		{"3 GiB N=2", keys, slots3, n, scale != 1},
		{"30 GiB N=2 (keys /10 at equal load)", keys / 10, slots3, n, true},
		{"30 GiB N=4 (keys /10 at equal load)", keys / 10, slots3, 4, true},
	}
	var out []AgingResult
	var series []dta.Series
	for _, rn := range runs {
		r, err := dta.SimKW(dta.SimConfig{Slots: rn.m, Keys: rn.keys, N: rn.n, Bits: 32, ValueBytes: 20, Buckets: 100, MaxQueries: 5_000_000, Seed: 7, Progress: prog(rn.label)})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, AgingResult{Label: rn.label, Scaled: rn.scaled, Result: r})
		s := dta.Series{Name: rn.label}
		for i, b := range r.Buckets {
			s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, b.Success)
		}
		series = append(series, s)
		if !quietText {
			fmt.Fprintf(stdout, "%s: %d keys into %d slots (%d MiB): average success %.4f (analysis %.4f), oldest 1%% %.4f (analysis %.4f), wrong %.2g\n",
				rn.label, rn.keys, rn.m, r.Bytes>>20, r.Success, r.Expected, r.Oldest.Success, r.Oldest.Bound, r.Wrong)
		}
	}
	return out, dta.PlotSVG("Key-Write aging: 5-hop path traces, 32-bit checksums", "key age (percentile of keys inserted after it)", "query success", 100, series, nil), nil
}

func powerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }
