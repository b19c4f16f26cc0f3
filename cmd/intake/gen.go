package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/wire"
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
	"       [--interval D] [--latency DIST] [--queue DIST] [--util DIST] [--vary P] [--events N] [--batch N] [--pps PPS]\n" +
	"       [--duration D | --count N] [--gso N] [--seed S] [--fresh] [--collectors HOST[:PORT],...] [--json]\n" +
	"   or: intake gen --data IFACE --data-to IP:PORT [--data-from IP] [--data-mac MAC]\n" +
	"       [--dscp V | --int-port PORT [--npt 1|2]] [--host-int] [--int-version V] [--hops N] ...\n\n" +
	"Values follow the network model by default (steady values with jitter, bursts, queue build-ups\n" +
	"and path changes, in generated time of --interval a packet); --latency, --queue, --util and\n" +
	"--vary select the draw model, whose DIST is const:V, uniform:LO:HI or exp:MEAN (docs/gen.md).\n" +
	"--events N (with --pps) sends constant values but for N reports a second, each a change of one\n" +
	"hop's tx utilization that the detector's default rules raise exactly one event for.\n" +
	"A ring replays its values every lap; --fresh builds every datagram as it is sent. Without\n" +
	"--duration or --count, gen sends until interrupted. The default target is 127.0.0.1:32766 for\n" +
	"reports, :40040 for dta and :40050 for int-label. --collectors sends each report to the member\n" +
	"of a cluster that owns it (docs/scale-out.md); --pps and --count are then totals over the members.\n" +
	"--data sends INT-MD data packets instead of reports, for trying an INT sink: UDP datagrams to\n" +
	"--data-to, each flow from its own source port, carrying the stream's INT stacks as an INT source\n" +
	"inserts them, as Ethernet frames out of IFACE through an AF_PACKET socket (root or CAP_NET_RAW)."

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
	df := addDataFlags(fs)
	cfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	sc, err := sf.Config()
	if err != nil {
		return usageErr("%v", err)
	}
	if cfg.Events > 0 && (df.iface != "" || *collectors != "") {
		return usageErr("--events: one report stream to one collector (not with --data or --collectors)")
	}
	if err := gf.Pace(&cfg, sc.Rate); err != nil {
		return usageErr("%v", err)
	}
	if df.iface != "" {
		if *to != "" || *collectors != "" {
			return usageErr("--data sends data packets to --data-to: --to and --collectors are for reports")
		}
		return runGenData(fs, cfg, sc, df, *asJSON, *quiet, stdout, stderr)
	}
	if set := df.given(fs); set != "" {
		return usageErr("--%s: an option of --data", set)
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

// dataFlags are gen's data mode options (--data and the options that go with it).
type dataFlags struct {
	iface, to, from, mac string
	dscp, port, npt      uint
	hostINT              bool
}

func addDataFlags(fs *flag.FlagSet) *dataFlags {
	d := &dataFlags{}
	fs.StringVar(&d.iface, "data", "", "send INT-MD data packets out of interface `IFACE` instead of reports (an AF_PACKET socket: root or CAP_NET_RAW)")
	fs.StringVar(&d.to, "data-to", "", "the data packets' destination `IP:PORT` (required with --data)")
	fs.StringVar(&d.from, "data-from", "", "the data packets' source `IP` (default: the interface's first address of --data-to's family)")
	fs.StringVar(&d.mac, "data-mac", "", "the next hop's `MAC` (default: --data-to's entry in the IPv4 neighbour table; IPv6 needs it)")
	fs.UintVar(&d.dscp, "dscp", 0x17, "data mode: the DSCP `VALUE` that marks INT (v2.x NPT 0, v1.0, v0.5, host-int); the original is saved in the shim or tail")
	fs.UintVar(&d.port, "int-port", 0, "data mode: mark INT by UDP destination `PORT` instead of DSCP (v2.x NPT 1 or 2, v0.5)")
	fs.UintVar(&d.npt, "npt", 1, "data mode, v2.x with --int-port: the shim's `NPT`, 1 (the shim keeps the port) or 2 (a UDP header is inserted)")
	fs.BoolVar(&d.hostINT, "host-int", false, "data mode: Intel host-int's shim Type 3 with a flow sequence number (INT v0.5)")
	return d
}

// given names a data mode option given without --data, or "".
func (d *dataFlags) given(fs *flag.FlagSet) string {
	name := ""
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data-to", "data-from", "data-mac", "dscp", "int-port", "npt", "host-int":
			name = f.Name
		}
	})
	return name
}

// config returns the data mode configuration for the stream cfg.
func (d *dataFlags) config(fs *flag.FlagSet, cfg gen.Config) (gen.DataConfig, error) {
	dc := gen.DataConfig{Iface: d.iface, HostINT: d.hostINT}
	var err error
	if d.to == "" {
		return dc, fmt.Errorf("--data needs --data-to IP:PORT, the data packets' destination")
	}
	if dc.To, err = netip.ParseAddrPort(d.to); err != nil {
		return dc, fmt.Errorf("--data-to %q: want IP:PORT ([IPv6]:PORT)", d.to)
	}
	if d.from != "" {
		if dc.From, err = netip.ParseAddr(d.from); err != nil {
			return dc, fmt.Errorf("--data-from %q: want an IP address", d.from)
		}
	}
	if d.mac != "" {
		if dc.DstMAC, err = net.ParseMAC(d.mac); err != nil || len(dc.DstMAC) != 6 {
			return dc, fmt.Errorf("--data-mac %q: want an Ethernet address such as 02:00:00:00:00:01", d.mac)
		}
	}
	if d.dscp > 0x3f {
		return dc, fmt.Errorf("--dscp %#x: a DSCP has 6 bits (0 to 0x3f)", d.dscp)
	}
	if d.port > 0xffff {
		return dc, fmt.Errorf("--int-port %d: want a UDP port", d.port)
	}
	dc.Marking = wire.Marking{DSCP: uint8(d.dscp), Port: uint16(d.port)}
	npt := false
	fs.Visit(func(f *flag.Flag) { npt = npt || f.Name == "npt" })
	if npt && d.port == 0 {
		return dc, fmt.Errorf("--npt: NPT 1 and 2 mark by port: give --int-port")
	}
	if d.port != 0 && (cfg.INTVersion == "" && cfg.Format == "tr2.0" || strings.HasPrefix(cfg.INTVersion, "2")) {
		dc.NPT = uint8(min(d.npt, 255))
	}
	if err := dc.Validate(cfg); err != nil {
		return dc, err
	}
	return dc, nil
}

// runGenData is gen --data: the stream's INT stacks in data packets out of an interface.
func runGenData(fs *flag.FlagSet, cfg gen.Config, sc gen.SendConfig, d *dataFlags, asJSON, quiet bool, stdout, stderr io.Writer) error {
	dc, err := d.config(fs, cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	g, err := gen.New(cfg)
	if err != nil {
		return err
	}
	to := dc.To.String()
	if !quiet {
		marked := fmt.Sprintf("DSCP %#x", dc.Marking.DSCP)
		if dc.Marking.Port != 0 {
			marked = fmt.Sprintf("UDP port %d", dc.Marking.Port)
		}
		fmt.Fprintf(stderr, "gen: %s; INT-MD data packets marked by %s, %v -> %s via %s (next hop %s)\n", g, marked, dc.From, to, dc.Iface, dc.DstMAC)
		sc.Progress = stderr
	}
	ctx, stop := runContext(0)
	defer stop()
	st, err := gen.SendData(ctx, g, &dc, sc)
	sum := g.Summary(to, st)
	sum.Data = dc.Iface
	return printResult(stdout, sum, err, asJSON, func(w io.Writer) {
		fmt.Fprintf(w, "gen: sent %d data packets (%d bytes) to %s via %s in %s: %.0f packets/s; %d send errors\n",
			st.Datagrams, st.Bytes, to, dc.Iface, st.Elapsed.Round(time.Millisecond), st.DatagramsPerSec(), st.SendErrors)
	})
}
