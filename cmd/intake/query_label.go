package main

import (
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/label"
)

// intake query ports | coverage: the INT-label database of a running collector.

func init() {
	registerSub("query", verb{name: "ports", summary: "INT-label ports: newest state per (switch, port), age, shift", run: runQueryPorts})
	registerSub("query", verb{name: "coverage", summary: "INT-label coverage per telemetry interval", run: runQueryCoverage})
}

func runQueryPorts(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query ports", "[--addr HOST:PORT] [--switch N] [--json]", stdout)
	addr := fs.String("addr", config.HTTPAddress, addrHelp)
	sw := fs.Int("switch", -1, "only this switch `id`")
	asJSON := fs.Bool("json", false, "print the API's JSON")
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
	if done, err := apiQuery(stdout, *addr, "/api/v1/label/ports", q, *asJSON, &pr); done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "switch\tport\tin\tlabel time\tlatency ns\tqdepth\tage ms\tupdates\tstale\tshift\tactive\t\n")
	for _, p := range pr.Ports {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%v\t\n", p.SwitchID, p.Port, p.IngressPort, p.LabelTime,
			p.LatencyNs, p.DeqQDepth, p.AgeMs, p.Updates, p.Stale, p.Shift, p.Active)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d ports\n", pr.Count)
	return nil
}

func runQueryCoverage(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query coverage", "[--addr HOST:PORT] [--windows N] [--json]", stdout)
	addr := fs.String("addr", config.HTTPAddress, addrHelp)
	n := fs.Int("windows", 10, "complete telemetry intervals to show")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 1000 {
		return usageErr("--windows %d: must be in [1, 1000]", *n)
	}
	var cr label.CoverageReport
	if done, err := apiQuery(stdout, *addr, "/api/v1/label/coverage", url.Values{"windows": {fmt.Sprint(*n)}}, *asJSON, &cr); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "telemetry interval %.0f ms, clock %s, %d ports known\n", cr.TelemetryIntervalMs, cr.Clock, cr.PortsKnown)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "window\tupdated\tactive\tcoverage\t\n")
	for _, w := range cr.Windows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t\n", w.Index, w.Updated, w.Active, w.Coverage)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "mean %.4f over %d windows\n", cr.Mean, len(cr.Windows))
	return nil
}
