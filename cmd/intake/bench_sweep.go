package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/bench"
	"github.com/intake-int/intake/internal/gen"
)

// bench ingest --sweep: INTCollector's Figs. 10 and 11 on intake (package bench, sweep.go).
// One measurement of the chosen mode per value of one load parameter, printed as a table or
// one JSON object (a bench.Sweep), and drawn as an SVG figure with --svg, beside earlier
// sweeps' JSON (--svg-with: the sweep without event detection beside the one with it).

// sweepFlags are bench ingest's sweep options.
type sweepFlags struct {
	sweep, label, svg, with, title *string
}

func addSweepFlags(fs *flag.FlagSet) sweepFlags {
	return sweepFlags{
		sweep: fs.String("sweep", "", "measure once per value of one load parameter, `PARAM=V1,V2,...`: pps (the rate), or hops, flows, fields, vary or events (the generator's, at the --pps rate); prints CPU (% of one core) and, with events, the events raised per value and mode"),
		label: fs.String("sweep-label", "", "the sweep's `name` in a figure of several (e.g. \"no detection\")"),
		svg:   fs.String("svg", "", "with --sweep: draw CPU against the parameter into the SVG `file`"),
		with:  fs.String("svg-with", "", "with --svg: also draw the sweeps of these JSON `files` (comma-separated; earlier --sweep --json output of the same parameter), solid first, dashed after; without --sweep, draw only those and measure nothing"),
		title: fs.String("title", "", "with --svg: the figure's `title` (default: CPU against the parameter)"),
	}
}

// check validates the sweep options and returns the parameter and values (none without
// --sweep).
func (f sweepFlags) check() (string, []string, error) {
	if *f.sweep == "" {
		if *f.svg != "" && *f.with != "" && *f.label == "" {
			return "", nil, nil // draw only (drawOnly)
		}
		if *f.svg != "" || *f.with != "" || *f.label != "" {
			return "", nil, usageErr("--svg, --svg-with and --sweep-label need --sweep (or --svg and --svg-with alone: draw those sweeps)")
		}
		return "", nil, nil
	}
	param, vals, err := bench.ParseSweep(*f.sweep)
	if err != nil {
		return "", nil, usageErr("--sweep: %v", err)
	}
	if *f.with != "" && *f.svg == "" {
		return "", nil, usageErr("--svg-with: needs --svg")
	}
	return param, vals, nil
}

// sweepRun is one sweep: measure runs the mode's measurement with the extra generator
// arguments given and adds its figures for value v to the sweep.
type sweepRun struct {
	param   string
	values  []string
	flags   sweepFlags
	sweep   bench.Sweep
	measure func(v float64, extra []string, s *bench.Sweep) error
}

func (r *sweepRun) run(stdout, stderr io.Writer, asJSON bool) error {
	for i, v := range r.values {
		f, _ := strconv.ParseFloat(v, 64)
		fmt.Fprintf(stderr, "bench ingest: sweep %s=%s (%d of %d)\n", r.param, v, i+1, len(r.values))
		if err := r.measure(f, []string{"--" + r.param + "=" + v}, &r.sweep); err != nil {
			return fmt.Errorf("%s=%s: %w", r.param, v, err)
		}
	}
	if *r.flags.svg != "" {
		if err := writeSweepSVG(*r.flags.svg, *r.flags.title, *r.flags.with, &r.sweep); err != nil {
			return err
		}
	}
	return printResult(stdout, r.sweep, nil, asJSON, func(w io.Writer) { writeSweep(w, &r.sweep) })
}

// drawOnly reports whether the options ask only to draw earlier sweeps (--svg and --svg-with
// without --sweep), and draws them.
func (f sweepFlags) drawOnly() (bool, error) {
	if *f.sweep != "" || *f.svg == "" || *f.with == "" {
		return false, nil
	}
	return true, writeSweepSVG(*f.svg, *f.title, *f.with, nil)
}

// writeSweepSVG draws the sweeps of the files in with (comma-separated) and s (if any) into
// path.
func writeSweepSVG(path, title, with string, s *bench.Sweep) error {
	var sweeps []bench.Sweep
	if with != "" {
		for _, name := range strings.Split(with, ",") {
			b, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			var w bench.Sweep
			if err := json.Unmarshal(b, &w); err != nil {
				return fmt.Errorf("%s: not a sweep's JSON: %v", name, err)
			}
			sweeps = append(sweeps, w)
		}
	}
	if s != nil {
		sweeps = append(sweeps, *s)
	}
	if title == "" && len(sweeps) > 0 {
		title = "intake: CPU against " + sweeps[0].Param
	}
	c, err := bench.SweepChart(title, sweeps)
	if err != nil {
		return err
	}
	return os.WriteFile(path, c.SVG(), 0o644)
}

// writeSweep prints a sweep as a table: per value, each mode's CPU, rate and loss.
func writeSweep(w io.Writer, s *bench.Sweep) {
	fmt.Fprintf(w, "sweep of %s, %s mode (%s CPU)", s.Param, s.Mode, s.CPU)
	if s.Label != "" {
		fmt.Fprintf(w, ", %s", s.Label)
	}
	fmt.Fprintf(w, "\n%s\n\n%-10s", s.Conditions, s.Param)
	series := bench.SweepSeries(s.Mode)
	for _, name := range series {
		fmt.Fprintf(w, "  %-34s", name+": CPU %, reports/s, loss")
	}
	events := s.Param == "events"
	if events {
		fmt.Fprintf(w, "  events/s raised (%s)", strings.Join(series, ", "))
	}
	fmt.Fprintln(w)
	for _, p := range s.Points {
		fmt.Fprintf(w, "%-10g", p.Value)
		for _, name := range series {
			fmt.Fprintf(w, "  %-34s", fmt.Sprintf("%6.1f %% %10.0f %6.2f %%", p.CPUPercent[name], p.ReportsPerS[name], 100*p.Loss[name]))
		}
		if events {
			for _, name := range series {
				fmt.Fprintf(w, "  %.1f", p.EventsPerS[name])
			}
		}
		fmt.Fprintln(w)
	}
}

// measureSweepPoint runs mode's measurement once and adds value v's figures to s: the
// collector process's CPU per report plus, with an XDP program, the program's run time per
// report (the kernel's BPF statistics), the work the kernel does for the collector. Not the
// machine's CPU: on a shared machine that is other processes' as much as the collector's.
func measureSweepPoint(icfg bench.IngestConfig, mode string, ns *bench.Veth, v float64, s *bench.Sweep) error {
	switch mode {
	case bench.ModeKernel:
		kc, err := bench.IngestKernel(icfg, ns.Device())
		if err != nil {
			return err
		}
		for _, m := range []struct {
			name string
			c    *bench.ModeCost
		}{{"socket", &kc.Socket}, {"xdp", &kc.XDP}, {"kernel", &kc.Kernel}} {
			s.Add(v, m.name, m.c.CollectorCPU+m.c.BPF, m.c.ReportsPerS, m.c.Loss)
			s.SetEvents(m.name, m.c.EventsPerS)
		}
	case "xdp":
		mc, err := bench.IngestModes(icfg, ns.Device())
		if err != nil {
			return err
		}
		s.Add(v, "socket", mc.Socket.CPUNsPerReport, mc.Socket.CollectorReportsPerS, mc.Socket.Loss)
		s.SetEvents("socket", mc.Socket.EventsPerS)
		s.Add(v, "xdp", mc.XDP.CPUNsPerReport+mc.BPFNsPerFrame/max(mc.XDP.ReportsPerDatagram, 1), mc.XDP.CollectorReportsPerS, mc.XDP.Loss)
		s.SetEvents("xdp", mc.XDP.EventsPerS)
	default:
		res, err := bench.Ingest(icfg)
		if err != nil {
			return err
		}
		s.Add(v, "socket", res.CPUNsPerReport, res.CollectorReportsPerS, res.Loss)
		s.SetEvents("socket", res.EventsPerS)
	}
	return nil
}

// sweepConditions is the figure's subtitle: the load the sweep varies one part of (param,
// which reads "swept").
func sweepConditions(g gen.Config, pps float64, param string, d time.Duration, rounds int, mode string, veth bool) string {
	path := "loopback"
	if veth {
		path = "veth pair"
	}
	rate := "as fast as the sender can"
	switch {
	case param == "pps":
		rate = "the rate swept"
	case pps > 0:
		rate = fmt.Sprintf("%g datagrams/s", pps)
	}
	load := []string{g.Format, fmt.Sprintf("%d report(s)/datagram", g.Batch)}
	for _, p := range []struct {
		name string
		v    int
	}{{"hops", g.Hops}, {"flows", g.Flows}, {"fields", g.Fields}} {
		if p.name == param {
			load = append(load, p.name+" swept")
		} else {
			load = append(load, fmt.Sprintf("%d %s", p.v, p.name))
		}
	}
	model := g.Model + " model"
	switch {
	case param == "vary":
		model += ", vary swept"
	case param == "events":
		model = "constant values but for the events (draw model, vary 0), events/s swept"
	case g.Events > 0:
		model = fmt.Sprintf("constant values but for %d events/s (draw model, vary 0)", g.Events)
	}
	return fmt.Sprintf("%s, %s; %s; %s mode across a %s; %s per phase, median of %d rounds",
		strings.Join(load, ", "), model, rate, mode, path, d, rounds)
}
