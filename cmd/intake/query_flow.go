package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/detect"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/telemetry"
)

// query flow: GET /api/v1/flow of a running collector.

func init() {
	registerSub("query", verb{
		name:    "flow",
		summary: "a flow's latest values and path (reads /api/v1/flow)",
		run:     runQueryFlow,
	})
}

// flowUsage is the flow verbs' usage: the flow as the demo and the queries write it, or as
// flags.
const flowUsage = `["SRC:SPORT > DST:DPORT PROTO" | --src IP --dst IP --sport N --dport N --proto udp|tcp|N] [--api HOST:PORT] [--json|--table]`

func runQueryFlow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query flow", flowUsage, stdout)
	o := cli.AddQuery(fs, false)
	flow := flowFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	q, err := flow(pos)
	if err != nil {
		return err
	}
	var f detect.FlowState
	if done, err := apiQuery(stdout, o, "/api/v1/flow", q, &f); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "flow     %s\n", cli.Flow(f.Src, f.Sport, f.Dst, f.Dport, f.Proto))
	fmt.Fprintf(stdout, "path     %s (%d hops)\n", cli.Path(f.Path), f.PathLen)
	if f.FlowLatency != nil {
		fmt.Fprintf(stdout, "latency  %s end to end\n", cli.Nanos(float64(*f.FlowLatency)))
	}
	fmt.Fprintf(stdout, "reports  %d, first seen %s, last seen %s\n", f.Reports, f.FirstSeen.Format(time.RFC3339Nano), f.LastSeen.Format(time.RFC3339Nano))
	// One line a hop: its latency, and the busiest queue, port and buffer of its switch
	// (every one of them: --json).
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tSWITCH\tHOP LATENCY\tQUEUE OCCUPANCY\tTX UTILIZATION\tBUFFER OCCUPANCY")
	for i, h := range f.Hops {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", i+1, h.SwitchID, cli.Nanos(float64(h.HopLatency)),
			busiest(f.Queues, h.SwitchID, "queue", func(v detect.SwitchValue) *uint64 { return v.QueueOccupancy }),
			busiest(f.Ports, h.SwitchID, "port", func(v detect.SwitchValue) *uint64 { return v.TxUtilization }),
			busiest(f.Buffers, h.SwitchID, "buffer", func(v detect.SwitchValue) *uint64 { return v.BufferOccupancy }))
	}
	return tw.Flush()
}

// busiest writes the greatest value among switch sw's keys, "12 (queue 3, max of 8)", or "-".
func busiest(vs []detect.SwitchValue, sw uint32, what string, val func(detect.SwitchValue) *uint64) string {
	var best *detect.SwitchValue
	n := 0
	for i := range vs {
		if v := val(vs[i]); vs[i].SwitchID == sw && v != nil {
			n++
			if best == nil || *v > *val(*best) {
				best = &vs[i]
			}
		}
	}
	if best == nil {
		return "-"
	}
	id := deref(best.Port)
	if best.QueueID != nil {
		id = uint32(*best.QueueID)
	} else if best.BufferID != nil {
		id = uint32(*best.BufferID)
	}
	if n > 1 {
		return fmt.Sprintf("%d (%s %d, max of %d)", *val(*best), what, id, n)
	}
	return fmt.Sprintf("%d (%s %d)", *val(*best), what, id)
}

// flowFlags adds --src, --dst, --sport, --dport and --proto, the flow as the API addresses
// it; the function returned, called after parsing with the positional arguments, gives the
// query parameters: from the flags, or from one argument written as the demo and the queries
// write flows ("10.0.0.1:1000 > 10.0.0.2:80 udp").
func flowFlags(fs *flag.FlagSet) func(pos []string) (url.Values, error) {
	src := fs.String("src", "", "source `address`")
	dst := fs.String("dst", "", "destination `address`")
	sport := fs.Uint("sport", 0, "source `port`")
	dport := fs.Uint("dport", 0, "destination `port`")
	var proto uint8
	var protoSet, portsSet bool
	fs.Func("proto", "IP `protocol`: tcp, udp, icmp or a number", func(s string) (err error) {
		proto, err = telemetry.ParseProto(s)
		protoSet = true
		return err
	})
	return func(pos []string) (url.Values, error) {
		fs.Visit(func(f *flag.Flag) { portsSet = portsSet || f.Name == "sport" || f.Name == "dport" })
		switch {
		case len(pos) > 1:
			return nil, usageErr(`one flow, quoted: "SRC:SPORT > DST:DPORT PROTO"`)
		case len(pos) == 1 && (*src != "" || *dst != "" || portsSet || protoSet):
			return nil, usageErr("the flow as an argument or as flags, not both")
		case len(pos) == 1:
			k, err := telemetry.ParseFlowKey(pos[0])
			if err != nil {
				return nil, usageErr("%q: %v", pos[0], err)
			}
			*src, *dst, *sport, *dport, proto = k.SrcAddr().String(), k.DstAddr().String(), uint(k.SrcPort), uint(k.DstPort), k.Proto
		case *src == "" || *dst == "":
			return nil, usageErr(`the flow is required: "SRC:SPORT > DST:DPORT PROTO", or --src, --dst, --sport, --dport and --proto`)
		case !portsSet || !protoSet:
			return nil, usageErr("--sport, --dport and --proto are required with --src and --dst (a flow is its 5-tuple)")
		case *sport > 65535 || *dport > 65535:
			return nil, usageErr("--sport %d, --dport %d: ports are 0 to 65535", *sport, *dport)
		}
		return url.Values{"src": {*src}, "dst": {*dst}, "sport": {strconv.FormatUint(uint64(*sport), 10)},
			"dport": {strconv.FormatUint(uint64(*dport), 10)}, "proto": {strconv.Itoa(int(proto))}}, nil
	}
}

// opt prints an optional value, "-" when absent.
func opt[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
