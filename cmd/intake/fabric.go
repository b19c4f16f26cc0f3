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

func runFabric(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fabric", "[flags]", stdout)
	topo := fs.String("topology", "testbed", "testbed (INT-label §6.1), fattree:K, or a topology `file` (docs/fabric.md)")
	labelAddr := fs.String("label", "127.0.0.1:40050", "collector's INT-label UDP `address`")
	reportAddr := fs.String("report", "127.0.0.1:32766", "collector's telemetry report UDP `address` (INT-MD, postcards)")
	control := fs.String("control", "127.0.0.1:8050", "control endpoint listen `address` (empty: none)")
	algo := fs.String("algo", "a", "INT-label algorithm: a, b or none")
	t := fs.Duration("t", 50*time.Millisecond, "labeling interval T")
	t1 := fs.Duration("t1", 0, "Base B rest time T1")
	fn := fs.String("f", "F1", "Base B probability function F1, F2 or F3")
	maxHop := fs.Int("max-hop", 5, "MAX_hop")
	rate := cli.Rate(fs, "bps", "rate", 5e6, "`BPS` bits per second each sender sends", stderr)
	size := fs.Int("size", 1000, "packet size in bytes")
	pattern := fs.String("pattern", "random", "destinations: random, permutation or all")
	senders := fs.String("senders", "", "comma-separated sending host indices, 0-based (default all)")
	routing := fs.String("routing", "ecmp", "ecmp or fixed")
	loss := fs.Float64("loss", 0, "loss probability on every switch-to-switch link")
	intmd := fs.Int("int-md", 0, "every `n`-th packet carries INT-MD; the sink sends a TR v2.0 report (0: off)")
	postcard := fs.Int("postcard", 0, "every `n`-th packet makes each switch send an INT-XD postcard (0: off)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	seed := fs.Uint64("seed", 1, "PCG seed")
	collectors := fs.String("collectors", "", "a cluster's collectors, `HOST,...` in cluster.members order: each export and report goes to its owner, at the --label and --report ports")
	asJSON := fs.Bool("json", false, "print the final counters as JSON instead of a summary")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg := fabric.Config{
		Routing:       *routing,
		Traffic:       fabric.Traffic{Rate: *rate, PacketSize: *size, Pattern: *pattern, Poisson: true},
		Label:         fabric.LabelConfig{Algo: fabric.Algo(*algo), T: *t, T1: *t1, F: label.F(*fn), MaxHop: *maxHop},
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
	fmt.Fprintf(stderr, "intake fabric: %s, %d switches, %d hosts, algo %s, T %s; exports to udp %s", tp.Name, tp.Switches(), len(tp.Hosts), *algo, *t, *labelAddr)
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
