package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/gen"
)

// gen blasts a collector with a reproducible telemetry stream (package gen): the load for
// throughput benchmarks and end-to-end tests without a switch.

func init() {
	register(verb{
		name:    "gen",
		summary: "send a reproducible stream of telemetry datagrams (a packet blaster)",
		run:     runGen,
	})
}

const genUsage = "[--to HOST:PORT] [--format tr0.5|tr1.0|tr2.0|dta|int-label] [--mode md|xd] [--int-version V]\n" +
	"       [--hops N] [--fields N | --bitmap 0x...] [--flows N] [--switches N] [--model network|draw]\n" +
	"       [--interval D] [--latency DIST] [--queue DIST] [--util DIST] [--vary P] [--batch N] [--pps PPS]\n" +
	"       [--duration D | --count N] [--gso N] [--seed S] [--fresh] [--collectors HOST[:PORT],...] [--json]\n\n" +
	"Values follow the network model by default (steady values with jitter, bursts, queue build-ups\n" +
	"and path changes, in generated time of --interval a packet); --latency, --queue, --util and\n" +
	"--vary select the draw model, whose DIST is const:V, uniform:LO:HI or exp:MEAN (docs/gen.md).\n" +
	"A ring replays its values every lap; --fresh builds every datagram as it is sent. Without\n" +
	"--duration or --count, gen sends until interrupted. The default target is 127.0.0.1:32766 for\n" +
	"reports, :40040 for dta and :40050 for int-label. --collectors sends each report to the member\n" +
	"of a cluster that owns it (docs/scale-out.md); --pps and --count are then totals over the members."

// parseGenArgs parses the arguments of a verb that takes the generator's options and no
// positional argument, and returns the generator configuration.
func parseGenArgs(fs *flag.FlagSet, gf *gen.Flags, args []string) (gen.Config, error) {
	if err := parseNoArgs(fs, args); err != nil {
		return gen.Config{}, err
	}
	cfg, err := gf.Config()
	if err != nil {
		return cfg, usageErr("%v", err)
	}
	return cfg, nil
}

func runGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gen", genUsage, stdout)
	gf := gen.AddFlags(fs, gen.DefaultConfig())
	to := fs.String("to", "", "collector `address` HOST:PORT (default by format: 127.0.0.1:32766, :40040 for dta, :40050 for int-label)")
	sf := gen.AddSendFlags(fs, 0, stderr)
	asJSON := fs.Bool("json", false, "print the final summary as one JSON object")
	quiet := fs.Bool("quiet", false, "no start and progress lines on stderr")
	collectors := fs.String("collectors", "", "send each report to its owner among these collectors: `HOST[:PORT],...` in cluster.members order (a port left out: the format's default)")
	cfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	sc, err := sf.Config()
	if err != nil {
		return usageErr("%v", err)
	}
	port := config.PortReport
	switch cfg.Format {
	case "dta":
		port = config.PortDTA
	case "int-label":
		port = config.PortLabel
	}
	if *collectors != "" {
		addrs, err := cluster.ParseCollectors(*collectors, port)
		switch {
		case err != nil:
			return usageErr("--collectors: %v", err)
		case *to != "":
			return usageErr("--to and --collectors exclude each other")
		case sc.Count > 0 && sc.Count < uint64(len(addrs)):
			return usageErr("--count %d: at least one datagram per collector (%d)", sc.Count, len(addrs))
		}
		return runGenCluster(cfg, sc, addrs, *asJSON, *quiet, stdout, stderr)
	}
	if *to == "" {
		*to = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if _, _, err := net.SplitHostPort(*to); err != nil {
		return usageErr("--to %q: want HOST:PORT", *to)
	}
	if err := gen.CheckSend(); err != nil {
		return err
	}

	start := time.Now()
	g, err := gen.New(cfg)
	if err != nil {
		return err
	}
	var progress io.Writer
	if !*quiet {
		built := fmt.Sprintf("%d datagrams prebuilt in %v", g.Len(), time.Since(start).Round(time.Millisecond))
		if cfg.Fresh {
			built = "fresh datagrams built as sent"
		}
		fmt.Fprintf(stderr, "gen: %s; %s; sending to %s\n", g, built, *to)
		progress = stderr
	}
	sc.To, sc.Progress = *to, progress
	s, err := gen.NewSender(g, sc)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, stop := runContext(0)
	defer stop()
	st, err := s.Run(ctx)
	return printResult(stdout, g.Summary(*to, st), err, *asJSON, func(w io.Writer) {
		fmt.Fprintf(w, "gen: sent %d datagrams (%d reports, %d bytes) to %s in %s: %.0f datagrams/s, %.0f reports/s; %d send errors\n",
			st.Datagrams, st.Reports, st.Bytes, *to, st.Elapsed.Round(time.Millisecond), st.DatagramsPerSec(), st.ReportsPerSec(), st.SendErrors)
	})
}

// runGenCluster sends to a cluster: one generator per member, each with the reports the
// member owns.
func runGenCluster(cfg gen.Config, send gen.SendConfig, addrs []string, asJSON, quiet bool, stdout, stderr io.Writer) error {
	if err := gen.CheckSend(); err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "gen: %d collectors, each report to its owner: %s\n", len(addrs), strings.Join(addrs, ", "))
		send.Progress = stderr
	}
	ctx, stop := runContext(0)
	defer stop()
	gens, sts, err := gen.Run(ctx, gen.Partition(cfg, send, addrs)...)
	if err != nil {
		return err
	}
	sum := gen.NewClusterSummary(gens, addrs, sts)
	return printResult(stdout, sum, nil, asJSON, func(w io.Writer) { writeClusterSummary(w, &sum) })
}
