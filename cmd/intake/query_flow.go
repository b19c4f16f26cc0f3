package main

import (
	"flag"
	"io"
	"net/url"
	"strconv"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/detect"
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
	o := cli.AddQuery(fs, false, stderr)
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
	return writeFlowState(stdout, &f)
}

// flowFlags adds --src, --dst, --sport, --dport and --proto, the flow as the API addresses
// it; the function returned, called after parsing with the positional arguments, gives the
// query parameters: from the flags, or from one argument written as the demo and the queries
// write flows ("10.0.0.1:1000 > 10.0.0.2:80 udp"; "->" and the console's "→" too: telemetry.ParseFlowKey).
func flowFlags(fs *flag.FlagSet) func(pos []string) (url.Values, error) {
	src := fs.String("src", "", "source `address`")
	dst := fs.String("dst", "", "destination `address`")
	sport := fs.Uint("sport", 0, "source `port`")
	dport := fs.Uint("dport", 0, "destination `port`")
	var proto uint8
	var protoSet, portsSet bool
	fs.Func("proto", "IP `protocol`: tcp, udp, icmp, icmpv6, sctp (any case) or a number", func(s string) (err error) {
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
