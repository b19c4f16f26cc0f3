package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
)

// intake fabric: run the emulated INT fabric in real time against a collector.

func init() {
	register(verb{name: "fabric", summary: "run an emulated INT fabric in real time, sending INT-label exports and reports over UDP", run: runFabric})
}

// fabricUsage is fabric's synopsis: the flags the other verbs share keep their names
// (--duration, --seed, --json, --bps as gen's --pps).
const fabricUsage = "[--topology testbed|fattree:K|FILE] [--label HOST:PORT] [--report HOST:PORT] [--control HOST:PORT]\n" +
	"       [--algo a|b|none] [--interval DURATION] [--rest DURATION] [--function F1|F2|F3] [--max-hop N]\n" +
	"       [--bps BPS] [--size BYTES] [--pattern random|permutation|all] [--senders INDEX,...] [--routing ecmp|fixed]\n" +
	"       [--loss P] [--int-md N] [--postcard N] [--duration DURATION] [--seed SEED] [--collectors HOST,...] [--json]\n\n" +
	"At the defaults the fabric sends INT-label exports to 127.0.0.1:40050 and, every 100th packet, an\n" +
	"INT-MD report to 127.0.0.1:32766: what `intake serve` listens on at its defaults, so that its\n" +
	"console shows the fabric's flows, paths and switches. --control opens INT-label's shift channel\n" +
	"for the collector's label.control (docs/fabric.md)."

// DefaultFabricINTMD is fabric's --int-md: one packet in 100 carries INT-MD, enough for the
// collector's flow cache (and so its topology and console) to see every flow's path within
// a second at the default rate.
const DefaultFabricINTMD = 100

func runFabric(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fabric", fabricUsage, stdout)
	topo := fs.String("topology", "testbed", "`TOPOLOGY`: testbed (INT-label §6.1), fattree:K, or a topology file (docs/fabric.md)")
	labelAddr := fs.String("label", "127.0.0.1:40050", "the collector's INT-label UDP `HOST:PORT`")
	reportAddr := fs.String("report", "127.0.0.1:32766", "the collector's telemetry report UDP `HOST:PORT` (INT-MD reports, postcards)")
	control := fs.String("control", "", "open the control endpoint (INT-label's shift channel, /v1/topology, /v1/stats) on `HOST:PORT` (default: none)")
	algo := fs.String("algo", "a", "INT-label `ALGORITHM`: a (Base A), b (Base B) or none")
	interval := fs.Duration("interval", 50*time.Millisecond, "INT-label's labeling interval T, a `DURATION`")
	cli.Alias(fs, "t", "interval", stderr)
	rest := fs.Duration("rest", 0, "Base B's rest time T1, a `DURATION`")
	cli.Alias(fs, "t1", "rest", stderr)
	fn := fs.String("function", "F1", "Base B's probability `FUNCTION`: F1, F2 or F3")
	cli.Alias(fs, "f", "function", stderr)
	maxHop := fs.Int("max-hop", 5, "INT-label's MAX_hop: at most `N` labels a packet carries")
	rate := cli.Rate(fs, "bps", "rate", 5e6, "`BPS` bits per second each sender sends", stderr)
	size := fs.Int("size", 1000, "packet size in `BYTES`")
	pattern := fs.String("pattern", "random", "destinations, a `PATTERN`: random, permutation or all")
	senders := fs.String("senders", "", "the sending hosts, `INDEX,...` 0-based (default: all)")
	routing := fs.String("routing", "ecmp", "`ROUTING`: ecmp or fixed")
	loss := fs.Float64("loss", 0, "loss `PROBABILITY` on every switch-to-switch link")
	intmd := fs.Int("int-md", DefaultFabricINTMD, "every `N`th packet carries INT-MD and its sink sends a TR v2.0 report: the collector's flows and fabric page (0: off)")
	postcard := fs.Int("postcard", 0, "every `N`th packet makes each switch send an INT-XD postcard (0: off)")
	duration := fs.Duration("duration", 0, "stop after this `DURATION` (0: until Ctrl-C)")
	seed := fs.Uint64("seed", 1, "the PCG `SEED`")
	collectors := fs.String("collectors", "", "a cluster's collectors, `HOST,...` in cluster.members order: each export and report goes to its owner, at the --label and --report ports")
	asJSON := fs.Bool("json", false, "print the final counters as JSON instead of a summary")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg := fabric.Config{
		Routing:       *routing,
		Traffic:       fabric.Traffic{Rate: *rate, PacketSize: *size, Pattern: *pattern, Poisson: true},
		Label:         fabric.LabelConfig{Algo: fabric.Algo(*algo), T: *interval, T1: *rest, F: label.F(*fn), MaxHop: *maxHop},
		INTMDEvery:    *intmd,
		PostcardEvery: *postcard,
		Seed:          *seed,
	}
	var err error
	if cfg.Topology, err = loadTopology(*topo); err != nil {
		return usageErr("--topology: %v", err)
	}
	if *senders != "" {
		for _, s := range strings.Split(*senders, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				return usageErr("--senders %q: want comma-separated integers", *senders)
			}
			cfg.Traffic.Senders = append(cfg.Traffic.Senders, n)
		}
	}
	if *loss < 0 || *loss > 1 {
		return usageErr("--loss %g: must be in [0, 1]", *loss)
	}
	for i := range cfg.Topology.Links {
		l := &cfg.Topology.Links[i]
		if cfg.Topology.Nodes[l.A].Kind == fabric.Switch && cfg.Topology.Nodes[l.B].Kind == fabric.Switch {
			l.Loss = *loss
		}
	}
	f, err := fabric.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	rep := *reportAddr
	if *intmd == 0 && *postcard == 0 {
		rep = ""
	}
	ep := fabric.Endpoints{Label: *labelAddr, Report: rep, Control: *control}
	if *collectors != "" {
		if ep.Labels, err = cluster.AtPort(*collectors, *labelAddr); err != nil {
			return usageErr("--collectors: %v", err)
		}
		if rep != "" {
			if ep.Reports, err = cluster.AtPort(*collectors, rep); err != nil {
				return usageErr("--collectors: %v", err)
			}
		}
		*labelAddr, rep = strings.Join(ep.Labels, ","), strings.Join(ep.Reports, ",")
	}
	if err := f.Listen(ep); err != nil {
		return err
	}
	ctx, stop := runContext(*duration)
	defer stop()
	tp := f.Topology()
	fmt.Fprintf(stderr, "intake fabric: %s, %d switches, %d hosts, algo %s, T %s; exports to udp %s", tp.Name, tp.Switches(), len(tp.Hosts), *algo, *interval, *labelAddr)
	if rep != "" {
		fmt.Fprintf(stderr, ", reports to udp %s", rep)
	}
	if a := f.ControlAddr(); a != "" {
		fmt.Fprintf(stderr, "; control on http://%s (%s, /v1/topology, /v1/stats)", a, label.ControlPath)
	}
	fmt.Fprintln(stderr)
	if cli.IsTerminal(stderr) { // a progress line a second, redrawn in place
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if st := f.LiveStats(); st.Now > 0 {
						fmt.Fprintf(stderr, "\r\033[Kintake fabric: %s", fabricProgress(&st))
					}
				}
			}
		}()
	}
	if err := f.Run(ctx, ep); err != nil {
		return err
	}
	sent, errs := f.UDPSent()
	st := f.Stats()
	if *asJSON {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(st)
	}
	fmt.Fprintf(stdout, "\nintake fabric: stopped after %s: %d datagrams sent over UDP (%d errors)\n", time.Duration(st.Now).Round(time.Millisecond), sent, errs)
	writeFabricStats(stdout, &st)
	return nil
}

func loadTopology(s string) (*fabric.Topology, error) {
	switch {
	case s == "testbed":
		return fabric.Testbed(fabric.DefaultLink), nil
	case strings.HasPrefix(s, "fattree:"):
		k, err := strconv.Atoi(strings.TrimPrefix(s, "fattree:"))
		if err != nil {
			return nil, fmt.Errorf("%q: want fattree:K", s)
		}
		return fabric.FatTree(k, fabric.DefaultLink)
	}
	fh, err := os.Open(s)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return fabric.ParseTopology(fh, fabric.DefaultLink)
}
