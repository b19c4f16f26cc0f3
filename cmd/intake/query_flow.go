package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"

	"github.com/intake-int/intake/detect"
)

// query flow: GET /api/v1/flow of a running collector.

func init() {
	registerSub("query", verb{
		name:    "flow",
		summary: "a flow's latest values and path (reads /api/v1/flow)",
		run:     runQueryFlow,
	})
}

func runQueryFlow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query flow", "--src IP --dst IP --sport N --dport N --proto N [--addr HOST:PORT] [--json]", stdout)
	addr := apiFlag(fs)
	flow := flowFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	q, err := flow()
	if err != nil {
		return err
	}
	var f detect.FlowState
	if done, err := apiQuery(stdout, *addr, "/api/v1/flow", q, *asJSON, &f); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "flow %s:%d -> %s:%d proto %d\n", f.Src, f.Sport, f.Dst, f.Dport, f.Proto)
	fmt.Fprintf(stdout, "  path          %s (%d hops)\n", joinPath(f.Path), f.PathLen)
	if f.FlowLatency != nil {
		fmt.Fprintf(stdout, "  flow latency  %d\n", *f.FlowLatency)
	}
	for _, h := range f.Hops {
		fmt.Fprintf(stdout, "  hop switch %-6d latency %d\n", h.SwitchID, h.HopLatency)
	}
	for _, q := range f.Queues {
		fmt.Fprintf(stdout, "  queue switch %d queue %d: occupancy %v congestion %v\n", q.SwitchID, deref(q.QueueID), opt(q.QueueOccupancy), opt(q.QueueCongestion))
	}
	for _, p := range f.Ports {
		fmt.Fprintf(stdout, "  port switch %d port %d: tx utilization %v\n", p.SwitchID, deref(p.Port), opt(p.TxUtilization))
	}
	for _, b := range f.Buffers {
		fmt.Fprintf(stdout, "  buffer switch %d buffer %d: occupancy %v\n", b.SwitchID, deref(b.BufferID), opt(b.BufferOccupancy))
	}
	fmt.Fprintf(stdout, "  reports %d, first seen %s, last seen %s\n", f.Reports, f.FirstSeen.Format("2006-01-02T15:04:05.000Z07:00"), f.LastSeen.Format("2006-01-02T15:04:05.000Z07:00"))
	return nil
}

// flowFlags adds --src, --dst, --sport, --dport and --proto, the flow as the API addresses
// it; the function returned, called after parsing, gives the query parameters.
func flowFlags(fs *flag.FlagSet) func() (url.Values, error) {
	src := fs.String("src", "", "source `address`")
	dst := fs.String("dst", "", "destination `address`")
	sport := fs.Uint("sport", 0, "source `port`")
	dport := fs.Uint("dport", 0, "destination `port`")
	proto := fs.Uint("proto", 0, "IP `protocol` number (6 TCP, 17 UDP)")
	return func() (url.Values, error) {
		if *src == "" || *dst == "" {
			return nil, usageErr("--src and --dst are required")
		}
		return url.Values{"src": {*src}, "dst": {*dst}, "sport": {fmt.Sprint(*sport)}, "dport": {fmt.Sprint(*dport)}, "proto": {fmt.Sprint(*proto)}}, nil
	}
}

// opt prints an optional value, "-" when absent.
func opt[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
