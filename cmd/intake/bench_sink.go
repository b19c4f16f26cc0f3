package main

import (
	"fmt"
	"io"
	"time"

	"github.com/intake-int/intake/internal/bench"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/gen"
)

// bench sink measures what the INT sink costs per packet above an XDP_PASS floor (package
// bench's Sink); this file parses flags, runs `intake gen --data` in the veth pair's
// namespace as a child process, so that this process's CPU time is the collector's, and
// prints.

func init() {
	registerSub("bench", verb{
		name:    "sink",
		summary: "the INT sink's CPU per packet above an XDP_PASS floor, same load",
		run:     runBenchSink,
	})
}

const benchSinkUsage = "[--duration D] [--pps PPS] [--rounds N] [--pipeline=false] [--config FILE] [--json]\n" +
	"       [generator options, as intake gen: --format, --hops, --fields, --flows, ...]\n\n" +
	"Sends INT-MD data packets (intake gen --data: by default TR v2.0's INT v2.x, NPT 0, DSCP 0x17,\n" +
	"5 hops) across a veth pair it creates (root) to a UDP socket on the receiving side that reads\n" +
	"and discards them, for --duration per phase, with on the receiving interface in turn: (f) floor,\n" +
	"an XDP program that counts and passes every packet; (r) ring, the INT sink program, its ring\n" +
	"read by the sink's worker and thrown away; (p) pipeline, the sink as serve runs it (a sinks[]\n" +
	"entry; the processors of --config, default all). Prints per phase packets/s, the whole\n" +
	"machine's CPU ns per packet and that above the floor, this process's CPU ns per packet (the\n" +
	"collector's), the XDP program's run time per packet, and what the sink stripped (docs/sink.md)."

func runBenchSink(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench sink", benchSinkUsage, stdout)
	gf := gen.AddFlags(fs, gen.DefaultConfig())
	duration := fs.Duration("duration", 5*time.Second, "`D` each phase sends for")
	rate := cli.Rate(fs, "pps", "rate", 0, "`PPS` data packets per second the generator sends (0: as fast as it can)", stderr)
	rounds := fs.Int("rounds", 1, "`N` rounds of the phases, alternating; the median round of each phase (by machine CPU per packet) counts")
	pipeline := fs.Bool("pipeline", true, "run the pipeline phase (false: the floor and ring phases only)")
	cfgPath := fs.String("config", "", "collector configuration `file` (its processor sections apply to the pipeline phase; listeners, sinks and http are replaced)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	gcfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	switch {
	case *duration <= 0:
		return usageErr("--duration: %v: must be positive", *duration)
	case *rate < 0:
		return usageErr("--pps: %g: must be 0 (as fast as possible) or positive", *rate)
	case *rounds < 1 || *rounds > 100:
		return usageErr("--rounds: %d: allowed is 1 to 100", *rounds)
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	cfg.FillDefaults()
	if *cfgPath == "" {
		cleanup, err := collector.ScratchDTA(&cfg)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	v, err := bench.NewVeth()
	if err != nil {
		return err
	}
	defer v.Close()
	genArgs := append(passGenFlags(fs), "--data", v.PeerDevice(), "--pps", fmt.Sprint(*rate),
		"--duration", duration.String(), "--json", "--quiet")
	what := map[string]string{bench.SinkPhaseFloor: "(f) XDP floor that counts and passes",
		bench.SinkPhaseRing: "(r) INT sink, ring read and discarded", bench.SinkPhasePipeline: "(p) INT sink and the pipeline"}
	res, err := bench.Sink(bench.SinkConfig{
		Collector: cfg, Dev: v.Device(), Host: v.Host, Rounds: *rounds, NoPipeline: !*pipeline,
		Send: func(addr string) (gen.Stats, error) {
			return runGenChild(v, append([]string{"--data-to", addr}, genArgs...))
		},
		Progress: func(round, rounds int, phase string) {
			fmt.Fprintf(stderr, "bench sink: round %d/%d: %s data packets to %s, %s per phase; %s...\n", round, rounds, gcfg.Format, v.Host, *duration, what[phase])
		},
	})
	res.Format, res.Hops, res.DurationS = gcfg.Format, gcfg.Hops, duration.Seconds()
	return printResult(stdout, res, err, *asJSON, func(w io.Writer) { writeSinkResult(w, &res) })
}

// sinkTargetNs is issue 29's target: at most 200 ns of machine CPU per packet above the
// XDP_PASS floor for 5-hop INT-MD packets.
const sinkTargetNs = 200

// writeSinkResult prints bench sink's table.
func writeSinkResult(w io.Writer, r *bench.SinkResult) {
	fmt.Fprintf(w, "bench sink: %s INT-MD data packets, %d hops, across a veth pair, %s per phase, %d rounds (medians by machine CPU per packet)\n",
		r.Format, r.Hops, seconds(r.DurationS), r.Rounds)
	fmt.Fprintf(w, "  floor: an XDP program that counts and passes every packet (%s); ring: the INT sink (%s), its ring read and discarded; pipeline: the sink as serve runs it (processors: %s)\n",
		r.FloorAttach, r.SinkAttach, processors(r.Processors))
	fmt.Fprintf(w, "  %-8s %11s %11s %11s %11s %9s %9s %7s %10s %10s %10s\n", "", "", "machine CPU", "above floor", "collector", "BPF", "BPF above", "machine", "", "", "")
	fmt.Fprintf(w, "  %-8s %11s %11s %11s %11s %9s %9s %7s %10s %10s %10s\n", "phase", "packets/s", "ns/packet", "ns/packet", "ns/packet", "ns/packet", "floor", "busy", "sent", "stripped", "delivered")
	phases := []struct {
		name string
		c    *bench.SinkCost
	}{{bench.SinkPhaseFloor, &r.Floor}, {bench.SinkPhaseRing, &r.Ring}, {bench.SinkPhasePipeline, r.Pipeline}}
	for _, p := range phases {
		if p.c == nil {
			continue
		}
		fmt.Fprintf(w, "  %-8s %11.0f %11.1f %11.1f %11.1f %9.1f %9.1f %6.0f%% %10d %10d %10d\n", p.name, p.c.PacketsPerS, p.c.MachineCPU,
			p.c.AboveFloor, p.c.CollectorCPU, p.c.BPF, p.c.BPFAboveFloor, 100*p.c.MachineBusy, p.c.PacketsSent, p.c.Stripped, p.c.Delivered)
	}
	for _, p := range phases[1:] {
		if p.c == nil {
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", p.name, sinkVerdict(p.c, &r.Floor))
		if p.c.Stripped != p.c.PacketsSent || p.c.Delivered != p.c.PacketsSent {
			fmt.Fprintf(w, "  note: %s: %d packets sent, %d stripped, %d delivered to the socket; outcomes %v\n", p.name, p.c.PacketsSent, p.c.Stripped, p.c.Delivered, p.c.Outcomes)
		}
	}
}

// sinkBusy is the machine's busy share above which its CPU per packet says little: the
// phase's load was not what kept it busy.
const sinkBusy = 0.9

// sinkVerdict says whether a sink phase met the target. The program's own run time above the
// floor's is machine CPU above the floor too, so above the target it settles the question; a
// machine figure below the floor, or taken on a machine busy with other work, settles nothing.
func sinkVerdict(c, floor *bench.SinkCost) string {
	busy := max(c.MachineBusy, floor.MachineBusy)
	switch {
	case c.BPFAboveFloor > sinkTargetNs:
		return fmt.Sprintf("target of at most %d ns of machine CPU per packet above the floor not met: the sink program alone runs %.1f ns per packet above the floor's (machine: %.1f)",
			sinkTargetNs, c.BPFAboveFloor, c.AboveFloor)
	case busy > sinkBusy || c.AboveFloor < 0:
		return fmt.Sprintf("target of at most %d ns above the floor not settled: the machine was %.0f%% busy, its %.1f ns per packet above the floor is noise; the sink program runs %.1f ns above the floor's",
			sinkTargetNs, 100*busy, c.AboveFloor, c.BPFAboveFloor)
	case c.AboveFloor > sinkTargetNs:
		return fmt.Sprintf("%.1f ns of machine CPU per packet above the floor: the target of at most %d ns is not met", c.AboveFloor, sinkTargetNs)
	}
	return fmt.Sprintf("%.1f ns of machine CPU per packet above the floor: the target of at most %d ns is met", c.AboveFloor, sinkTargetNs)
}
