package main

import (
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/label"
)

// intake query ports | coverage: the INT-label database of a running collector.

func init() {
	registerSub("query", verb{name: "ports", summary: "INT-label ports: newest state per (switch, port), age, shift", run: runQueryPorts})
	registerSub("query", verb{name: "coverage", summary: "INT-label coverage per telemetry interval", run: runQueryCoverage})
}

func runQueryPorts(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query ports", "[--api HOST:PORT] [--switch N] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
	sw := fs.Int("switch", -1, "only this switch `id`")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *sw > 255 || *sw < -1 {
		return usageErr("--switch %d: must be in [0, 255]", *sw)
	}
	q := url.Values{}
	if *sw >= 0 {
		q.Set("switch_id", fmt.Sprint(*sw))
	}
	var pr label.PortsResponse
	if done, err := apiQuery(stdout, o, "/api/v1/label/ports", q, &pr); done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The label time is the switch's egress timestamp, on its own clock (since its zero);
	// received is the collector's clock (clockTime).
	fmt.Fprintf(tw, "switch\tport\tin\tlabel time\tlatency\tqdepth\tage\treceived\tupdates\tstale\tshift\tactive\t\n")
	for _, p := range pr.Ports {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%v\t\n", p.SwitchID, p.Port, p.IngressPort, "t+"+nanos(float64(p.LabelTime)),
			nanos(float64(p.LatencyNs)), p.DeqQDepth, nanos(p.AgeMs*1e6), clockTime(p.LastReceived), p.Updates, p.Stale, p.Shift, p.Active)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d ports\n", pr.Count)
	return nil
}

func runQueryCoverage(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query coverage", "[--api HOST:PORT] [--windows N] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
	n := fs.Int("windows", 10, "show the last `N` complete telemetry intervals")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 1000 {
		return usageErr("--windows %d: must be in [1, 1000]", *n)
	}
	var cr label.CoverageReport
	if done, err := apiQuery(stdout, o, "/api/v1/label/coverage", url.Values{"windows": {fmt.Sprint(*n)}}, &cr); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "telemetry interval %.0f ms, clock %s, %d ports known\n", cr.TelemetryIntervalMs, cr.Clock, cr.PortsKnown)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	// A window starts at a time of the collector's clock: wall time (UTC) when it is one,
	// otherwise since the clock's zero.
	fmt.Fprintf(tw, "start\tupdated\tactive\tcoverage\t\n")
	for _, w := range cr.Windows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f%%\t\n", clockTime(w.StartNs), w.Updated, w.Active, 100*w.Coverage)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "mean %.2f%% over %d windows\n", 100*cr.Mean, len(cr.Windows))
	return nil
}

// clockTime writes a time of the INT-label controller's clock: UTC time of day when it is a
// wall clock (Unix ns), "t+" the time since its zero otherwise (a capture's, a test's).
func clockTime(ns int64) string {
	if ns > 1e18 {
		return time.Unix(0, ns).UTC().Format("15:04:05.000")
	}
	return "t+" + nanos(float64(ns))
}
