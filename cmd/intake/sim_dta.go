package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/sim/dtasim"
	"github.com/intake-int/intake/internal/sim/plot"
)

// intake sim dta-bounds: the DTA appendix's bounds (eqs. 1-8). intake sim dta: the Monte
// Carlo over a real Key-Write store, one run or the papers' figures (DART Fig. 3 / DTA Fig.
// 12: success against load factor for N = 1-4; DART Fig. 4 / DTA Fig. 13: aging of 5-hop
// path traces; DART Fig. 5: wrong answers against storage size; DTA Fig. 14: postcard
// aggregation in the translator's cache). The work is package sim/dtasim's; this file parses
// flags and prints.

func init() {
	registerSub("sim", verb{name: "dta-bounds", summary: "DTA/DART bounds on empty and wrong returns (Key-Write eqs. 1-4, Postcarding eqs. 5-8)", run: runSimBounds})
	registerSub("sim", verb{name: "dta", summary: "Monte Carlo of Key-Write over a real store; DART Fig. 3-5 / DTA Fig. 12-14", run: runSimDTA})
}

func runSimBounds(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim dta-bounds", "--n N --alpha A --bits B [--values V --hops H] [--json]", stdout)
	n := fs.Int("n", 2, "redundancy `N`")
	alpha := fs.Float64("alpha", 0.1, "later writes over slots (or chunks), `α`")
	b := fs.Int("bits", 32, "checksum (Postcarding: slot) width `b`")
	values := fs.Int("values", 0, "Postcarding: |V|, the `NUMBER` of possible values")
	hops := fs.Int("hops", 0, "Postcarding: B, `HOPS` per chunk")
	asJSON := fs.Bool("json", false, "print kw_empty, kw_wrong (and with --hops pc_empty, pc_wrong and kw_path_wrong, Key-Write's wrong answer in at least one of B hops) as JSON")
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
	out := map[string]float64{"kw_empty": dtasim.KWEmpty(*n, *alpha, *b), "kw_wrong": dtasim.KWWrong(*n, *alpha, *b)}
	if *values > 0 {
		out["pc_empty"] = dtasim.PCEmpty(*n, *alpha, *b, *values, *hops)
		out["pc_wrong"] = dtasim.PCWrong(*n, *alpha, *b, *values, *hops)
		out["kw_path_wrong"] = dtasim.KWPathWrong(*n, *alpha, *b, *hops)
	}
	if *asJSON {
		bs, _ := json.Marshal(out)
		_, err := fmt.Fprintf(stdout, "%s\n", bs)
		return err
	}
	fmt.Fprintf(stdout, "Key-Write   N=%d α=%g b=%d: empty ≤ %.4g (eqs. 1-3), wrong ≤ %.4g (eq. 4)\n", *n, *alpha, *b, out["kw_empty"], out["kw_wrong"])
	if *values > 0 {
		fmt.Fprintf(stdout, "Postcarding |V|=%d B=%d: empty ≤ %.4g (eqs. 5-7), wrong ≤ %.4g (eq. 8)\n", *values, *hops, out["pc_empty"], out["pc_wrong"])
		fmt.Fprintf(stdout, "Key-Write for the same B=%d postcards: wrong in at least one hop ≈ %.4g (1-(1-eq. 4)^B)\n", *hops, out["kw_path_wrong"])
	}
	return nil
}

func runSimDTA(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sim dta", simUsage("load|aging|wrong|postcard")+" [--slots M --keys K --n N --bits B --value-bytes W --buckets N] [--scale F]", stdout)
	figure := fs.String("figure", "", "reproduce a `FIGURE`: load (DART Fig. 3 / DTA Fig. 12), aging (DART Fig. 4 / DTA Fig. 13), wrong (DART Fig. 5: wrong answers against storage size, 8-, 16- and 32-bit checksums) or postcard (DTA Fig. 14: postcard aggregation against intermediate flows and cache size); empty: one run")
	slots := fs.Int("slots", 1<<20, "store slots `M` (a power of two)")
	keys := fs.Int("keys", 1<<20, "keys `K` inserted")
	n := fs.Int("n", 2, "redundancy `N`")
	bits := fs.Int("bits", 32, "checksum width `B` in bits")
	vb := fs.Int("value-bytes", 4, "value width `W` in bytes (20: a 5-hop path of 4-byte ids)")
	buckets := fs.Int("buckets", 20, "`N` age buckets")
	scale := fs.Float64("scale", 1, "aging: scale the 100 M-key / 3 GiB case by this `FACTOR` at equal load factor; wrong: its 2^21 keys a run (the slots follow at equal load factor); postcard: its 2^17 flows a point")
	store := fs.String("store", dtasim.StoreCompact, "the `STORE` written: compact (4 bytes a slot, the same answers) or real (package dta's store, 24 bytes a slot for 5-hop paths)")
	so := addSimOutput(fs)
	so.svgFlag(fs, stderr)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *store != dtasim.StoreCompact && *store != dtasim.StoreReal {
		return usageErr("--store %q: allowed are compact and real", *store)
	}
	asJSON, quiet := &so.json, &so.quiet
	prog := dtasim.Progress(func(label string) func(int, int) {
		if *quiet {
			return nil
		}
		return cli.Progress(stderr, label)
	})
	var out any
	var chart *plot.Chart
	switch *figure {
	case "":
		r, err := dtasim.SimKW(dtasim.SimConfig{Slots: *slots, Keys: *keys, N: *n, Bits: *bits, ValueBytes: *vb, Buckets: *buckets, Seed: 1, Store: *store, Progress: prog("sim")})
		if err != nil {
			return usageErr("%v", err)
		}
		out, chart = r, dtasim.RunChart(r)
		if !*asJSON {
			fmt.Fprintf(stdout, "N=%d b=%d M=%d K=%d (load %.3g, %d MiB): success %.4f (analysis %.4f), empty %.4f, wrong %.2g; oldest %.0f%%: success %.4f (analysis %.4f)\n",
				*n, *bits, *slots, *keys, r.Load, r.Bytes>>20, r.Success, r.Expected, r.Empty, r.Wrong, 100.0/float64(*buckets), r.Oldest.Success, r.Oldest.Bound)
		}
	case "load":
		var each func(dtasim.LoadPoint)
		if !*asJSON {
			each = func(p dtasim.LoadPoint) {
				fmt.Fprintf(stdout, "N=%d load %.2f: success %.4f (analysis %.4f)\n", p.N, p.Load, p.Success, p.Expected)
			}
		}
		res, c, err := dtasim.LoadFigure(*slots, *bits, *vb, *store, prog, each)
		if err != nil {
			return usageErr("%v", err)
		}
		out, chart = res, c
	case "aging":
		var each func(dtasim.AgingResult)
		if !*asJSON {
			each = func(a dtasim.AgingResult) {
				r := a.Result
				fmt.Fprintf(stdout, "%s: %d keys into %d slots (%d MiB): average success %.4f (analysis %.4f), oldest 1%% %.4f (analysis %.4f), wrong %.2g\n",
					a.Label, r.Config.Keys, r.Config.Slots, r.Bytes>>20, r.Success, r.Expected, r.Oldest.Success, r.Oldest.Bound, r.Wrong)
			}
		}
		res, c, err := dtasim.AgingFigure(*scale, *n, *store, prog, each)
		if errors.Is(err, dtasim.ErrScale) {
			return usageErr("--scale %g: slots (2^27 × scale) must stay a power of two", *scale)
		}
		if err != nil {
			return err
		}
		out, chart = res, c
	case "wrong":
		k := int(float64(dtasim.WrongKeys) * *scale)
		if k < 1 || k&(k-1) != 0 {
			return usageErr("--scale %g: keys (2^21 × scale) must stay a power of two", *scale)
		}
		var each func(dtasim.WrongPoint)
		if !*asJSON {
			each = func(p dtasim.WrongPoint) {
				fmt.Fprintf(stdout, "%d-bit, %g slots a key (%d keys into %d slots; %.3g GiB for 10^8 keys): %d wrong of %d (%.3g), analysis %.4g (%.3g)\n",
					p.Bits, p.SlotsPerKey, p.Keys, p.Slots, p.FullScaleGiB, p.Wrong, p.Queries, p.WrongRate, p.Expected, p.ExpectedRate)
			}
		}
		res, c, err := dtasim.WrongFigure(k, *n, *store, prog, each)
		if err != nil {
			return err
		}
		out, chart = res, c
	case "postcard":
		var each func(dtasim.PostcardPoint)
		if !*asJSON {
			each = func(p dtasim.PostcardPoint) {
				fmt.Fprintf(stdout, "cache %d, %d intermediate flows: %d of %d paths whole (%.4f), analysis %.4f, %d early emissions\n",
					p.Cache, p.Intermediate, p.Complete, p.Flows, p.Success, p.Expected, p.Early)
			}
		}
		res, c, err := dtasim.PostcardFigure(max(1, int(float64(dtasim.PostcardFlows)**scale)), each)
		if err != nil {
			return err
		}
		out, chart = res, c
	default:
		return usageErr("--figure %q: allowed are load, aging, wrong and postcard", *figure)
	}
	if *asJSON {
		bs, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", bs)
	}
	name := "dta-run.svg"
	if *figure != "" {
		name = "dta-fig-" + *figure + ".svg"
	}
	return so.write("sim dta", name, chart.SVG(), stderr)
}

// simOutput is what sim label and sim dta share: --figure aside, --out DIR (one SVG a
// figure), --json and --quiet; and sim dta's --svg FILE, deprecated.
type simOutput struct {
	out, svg    string
	json, quiet bool
}

// simUsage is the synopsis sim label and sim dta share, with the --figure values of each.
func simUsage(figures string) string {
	return "[--figure " + figures + "] [--out DIR] [--json] [--quiet]"
}

func addSimOutput(fs *flag.FlagSet) *simOutput {
	o := &simOutput{}
	fs.StringVar(&o.out, "out", "", "write one SVG plot a figure into `DIR` (created if missing); each file written is named on stderr")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr (a bar only on a terminal); the files written are still named")
	return o
}

// svgFlag adds --svg FILE, sim dta's older way to write its one plot: it still works and
// warns that --out DIR replaces it.
func (o *simOutput) svgFlag(fs *flag.FlagSet, warn io.Writer) {
	fs.Func("svg", "deprecated: write the plot to `FILE`; use --out DIR", func(s string) error {
		fmt.Fprintf(warn, "intake: --svg is deprecated: use --out DIR, which writes the plot into DIR\n")
		o.svg = s
		return nil
	})
}

// write writes an SVG plot: into --out as name, and to --svg's file; it names each file
// written on stderr, "intake VERB: wrote PATH".
func (o *simOutput) write(verb, name string, svg []byte, stderr io.Writer) error {
	var paths []string
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		paths = append(paths, filepath.Join(o.out, name))
	}
	if o.svg != "" {
		paths = append(paths, o.svg)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, svg, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "intake %s: wrote %s\n", verb, p)
	}
	return nil
}
