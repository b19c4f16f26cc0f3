package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/bench"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
)

// bench ingest measures the receive path against its ceiling (package bench); this file
// parses flags, runs the generator as a child process (`intake gen`), so that this process's
// CPU time is the collector's alone, and prints.

func init() {
	registerSub("bench", verb{
		name:    "ingest",
		summary: "the collector's report rate against a drain-only receiver, same load",
		run:     runBenchIngest,
	})
}

const benchIngestUsage = "[--duration D] [--pps PPS] [--senders N] [--gso N] [--gro=false] [--collector-sockets N] [--spread flow|source] [--veth] [--mode socket|xdp|kernel] [--baseline PROG] [--config FILE] [--json]\n" +
	"       [--sweep PARAM=V1,V2,... [--sweep-label NAME] [--svg FILE [--svg-with A.json,...] [--title T]]]\n" +
	"       [generator options, as intake gen: --format, --batch, --hops, --flows, ...]\n\n" +
	"Runs the generator against (a) a receiver that only drains and counts its sockets and (b) the\n" +
	"full collector (the processors of --config, default all), for --duration each, over loopback.\n" +
	"Prints reports/s of both, the ratio b/a, CPU ns per report (this process's CPU time, the\n" +
	"generator being a child process, over reports decoded) and the loss of each run.\n\n" +
	"--mode xdp (root) runs both across a veth pair twice, the listener in socket and in xdp mode.\n" +
	"--mode kernel (root) sends the same load across a veth pair to a floor (an XDP program that\n" +
	"counts and drops every frame, no collector) and to the collector in socket mode, xdp mode and\n" +
	"xdp mode with detect.kernel, with detection the only processor in every mode; it prints per\n" +
	"report the whole machine's CPU, that above the floor, the collector's CPU and the XDP\n" +
	"program's run time (docs/xdp.md, \"Measuring the modes\").\n\n" +
	"--events N (with --pps) sends constant values but for N reports a second, each a change that the\n" +
	"detector's default rules raise one event for (INTCollector Fig. 11's event rate); every mode's\n" +
	"result says the events its detector raised a second (events_per_s, new keys apart).\n\n" +
	"--sweep repeats the measurement of --mode once per value of one parameter (pps, or hops, flows,\n" +
	"fields, vary or events at the --pps rate) and prints CPU in % of one core per value and mode; --svg draws\n" +
	"it (INTCollector Figs. 10 and 11; docs/intcollector-results.md); --svg with --svg-with and no --sweep\n" +
	"draws earlier sweeps' --json output and measures nothing."

func runBenchIngest(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench ingest", benchIngestUsage, stdout)
	gf := gen.AddFlags(fs, gen.DefaultConfig())
	duration := fs.Duration("duration", 5*time.Second, "`D` each phase sends for")
	rate := cli.Rate(fs, "pps", "rate", 0, "`PPS` datagrams per second the generator sends (0: as fast as it can)", stderr)
	senders := fs.Int("senders", 1, "`N` generator sockets")
	gso := fs.Int("gso", 0, "the generator sends up to `N` datagrams per UDP_SEGMENT (GSO) send (0: off)")
	sockets := fs.Int("collector-sockets", 0, "`N` collector sockets (SO_REUSEPORT workers); 0: one per core")
	cli.Alias(fs, "sockets", "collector-sockets", stderr) // gen's --sockets are senders: --senders here
	gro := fs.Bool("gro", true, "UDP GRO on the collector's sockets (false: each datagram is received alone, as switches' single datagrams are from a NIC without GRO, also when --gso makes the sender cheap)")
	spread := fs.String("spread", "", "how the collector's sockets share the datagrams, a `SPREAD`: flow (by each report's flow, through a reuseport program; GRO off unless --gro is given) or source (the kernel's hash of the sender); default: source, as --gro asks")
	rcvbuf := fs.Int("rcvbuf", ingest.DefaultRcvBuf, "receive buffer `bytes` requested per collector socket")
	cfgPath := fs.String("config", "", "collector configuration `file` (its processor sections apply; listeners and http are replaced)")
	rounds := fs.Int("rounds", 1, "`N` rounds of both phases, alternating; the median round of each phase counts")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the collector phase to `file` (go tool pprof)")
	veth := fs.Bool("veth", false, "run the generator in a network namespace it creates, across a veth pair, so that datagrams take a device's receive path (NAPI, GRO) as from a NIC; needs root")
	mode := recvModeFlag(fs)
	baseline := fs.String("baseline", "", "also run the receiver `program` with the same load and compare its CPU per datagram with the drain phase's (a minimal C recvmmsg loop: bench/testdata/recvmmsg.c)")
	sf := addSweepFlags(fs)
	gcfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	sweepParam, sweepValues, err := sf.check()
	if err != nil {
		return err
	}
	if drawn, err := sf.drawOnly(); drawn || err != nil {
		return err
	}
	switch {
	case *duration <= 0:
		return usageErr("--duration: %v: must be positive", *duration)
	case *rate < 0:
		return usageErr("--pps: %g: must be 0 (as fast as possible) or positive", *rate)
	case *rcvbuf < ingest.MinRcvBuf || *rcvbuf > ingest.MaxRcvBuf:
		return usageErr("--rcvbuf: %d: allowed is %d to %d bytes", *rcvbuf, ingest.MinRcvBuf, ingest.MaxRcvBuf)
	case *rounds < 1 || *rounds > 100:
		return usageErr("--rounds: %d: allowed is 1 to 100", *rounds)
	case *senders < 1 || *senders > 256:
		return usageErr("--senders: %d: allowed is 1 to 256", *senders)
	case *gso < 0 || *gso > gen.MaxGSO:
		return usageErr("--gso: %d: allowed is 0 (off) to %d", *gso, gen.MaxGSO)
	case *sockets < 0 || *sockets > ingest.MaxSockets:
		return usageErr("--collector-sockets: %d: allowed is 0 (one per core) to %d", *sockets, ingest.MaxSockets)
	case *spread != "" && *spread != ingest.SpreadFlow && *spread != ingest.SpreadSource:
		return usageErr("--spread: %q: allowed is flow or source", *spread)
	case *mode == bench.ModeKernel && *baseline != "":
		return usageErr("--baseline: not with --mode kernel (its floor is the baseline)")
	case (gf.Set("events") || sweepParam == "events") && !(*rate > 0) && !gf.Set("interval"):
		return usageErr("--events: N a second needs a rate (--pps), or --interval for the generated time a report")
	}
	groSet := false
	fs.Visit(func(f *flag.Flag) { groSet = groSet || f.Name == "gro" })
	if *spread == ingest.SpreadFlow && !groSet {
		gro = nil // the listener's default with spread flow: off
	}
	if err := cmp.Or(ingest.CheckReceivePath(), gen.CheckSend()); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	input := gcfg.Input().String()
	cfg.Listeners = []ingest.Listener{{Format: input, Address: "127.0.0.1", Sockets: *sockets, RcvBuf: *rcvbuf, GRO: gro, Spread: *spread}}
	cfg.HTTP.Address = ""
	cfg.FillDefaults()
	if *cfgPath == "" {
		cleanup, err := collector.ScratchDTA(&cfg)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	host, inNS := "127.0.0.1", (*bench.Veth)(nil)
	if *veth || *mode != ingest.ModeSocket {
		if inNS, err = bench.NewVeth(); err != nil {
			return err
		}
		defer inNS.Close()
		host = inNS.Host
		cfg.Listeners[0].Address = host
	}
	genArgs := append(passGenFlags(fs), "--pps", fmt.Sprint(*rate), "--sockets", fmt.Sprint(*senders), "--gso", fmt.Sprint(*gso),
		"--duration", duration.String(), "--json", "--quiet")

	icfg := bench.IngestConfig{
		Collector: cfg, Rounds: *rounds, CPUProfile: *profile, Baseline: *baseline, Host: host,
		Send: func(addr string) (gen.Stats, error) {
			return runGenChild(inNS, append([]string{"--to", addr}, genArgs...))
		},
		Progress: func(round, rounds int, phase string) {
			mode, phase, ok := strings.Cut(phase, ":") // IngestModes: "xdp:drain"
			if !ok {
				mode, phase = "", mode
			} else {
				mode += " mode, "
			}
			what := map[string]string{"baseline": "(c) baseline receiver", "drain": "(a) drain-only receiver", "collector": "(b) full collector",
				"floor": "(f) XDP floor that counts and drops, no collector"}[phase]
			fmt.Fprintf(stderr, "bench ingest: %sround %d/%d: %s to %s, %s per phase; %s...\n", mode, round, rounds, input, host, *duration, what)
		},
	}
	if sweepParam != "" {
		base := genArgs
		sr := sweepRun{param: sweepParam, values: sweepValues, flags: sf,
			sweep: bench.Sweep{Param: sweepParam, Label: *sf.label, Mode: *mode, CPU: "collector process",
				Conditions: sweepConditions(gcfg, *rate, sweepParam, *duration, *rounds, *mode, inNS != nil)},
			measure: func(v float64, extra []string, s *bench.Sweep) error {
				genArgs = append(base[:len(base):len(base)], extra...) // icfg.Send sends genArgs
				return measureSweepPoint(icfg, *mode, inNS, v, s)
			}}
		if *mode != ingest.ModeSocket {
			sr.sweep.CPU = "collector process and XDP program"
		}
		return sr.run(stdout, stderr, *asJSON)
	}
	if *mode == bench.ModeKernel {
		kc, err := bench.IngestKernel(icfg, inNS.Device())
		kc.Format, kc.DurationS = gcfg.Format, duration.Seconds()
		return printResult(stdout, kc, err, *asJSON, func(w io.Writer) { writeKernelComparison(w, &kc) })
	}
	if *mode == ingest.ModeXDP {
		mc, err := bench.IngestModes(icfg, inNS.Device())
		mc.Socket.Format, mc.Socket.DurationS, mc.XDP.Format, mc.XDP.DurationS = gcfg.Format, duration.Seconds(), gcfg.Format, duration.Seconds()
		return printResult(stdout, mc, err, *asJSON, func(w io.Writer) { writeModeComparison(w, &mc) })
	}
	res, err := bench.Ingest(icfg)
	res.Format, res.DurationS = gcfg.Format, duration.Seconds()
	return printResult(stdout, res, err, *asJSON, func(w io.Writer) { writeIngestResult(w, &res, *baseline != "") })
}

// printResult prints v as one JSON object, or with text, unless err.
func printResult(stdout io.Writer, v any, err error, asJSON bool, text func(io.Writer)) error {
	if err != nil {
		return err
	}
	if !asJSON {
		text(stdout)
		return nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", j)
	return err
}

// modeValue is bench ingest's --mode: socket, xdp and kernel choose the receive path, md
// and xd are the generator's report mode (as intake gen --mode); the value sets do not
// overlap, and the flag may be given twice to set both.
type modeValue struct {
	recv *string
	gen  flag.Value
}

func (m modeValue) String() string {
	if m.gen == nil {
		return ""
	}
	return m.gen.String()
}

func (m modeValue) Set(v string) error {
	if v == ingest.ModeSocket || v == ingest.ModeXDP || v == bench.ModeKernel {
		*m.recv = v
		return nil
	}
	return m.gen.Set(v)
}

// recvModeFlag puts the receive path on the generator's --mode flag.
func recvModeFlag(fs *flag.FlagSet) *string {
	recv := ingest.ModeSocket
	f := fs.Lookup("mode")
	f.Value = modeValue{recv: &recv, gen: f.Value}
	f.Usage = "socket, xdp or kernel: xdp measures across a veth pair (as --veth) twice, the listener in socket mode and then in xdp mode (XDP program, AF_XDP sockets), and compares them (root); kernel measures a floor (XDP counts and drops) and the collector in socket, xdp and xdp mode with detect.kernel, detection alone in every mode (root); md or xd: the generator's report `mode` (give --mode twice for both)"
	return &recv
}

// passGenFlags returns the generator options given on the command line, for `intake gen`.
func passGenFlags(fs *flag.FlagSet) []string {
	own := flag.NewFlagSet("", flag.ContinueOnError)
	gen.AddFlags(own, gen.DefaultConfig())
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if own.Lookup(f.Name) != nil {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// runGenChild runs `intake gen` with args in a child process (in the namespace of ns, if
// set) and returns what it sent.
func runGenChild(ns *bench.Veth, args []string) (gen.Stats, error) {
	exe, err := os.Executable()
	if err != nil {
		return gen.Stats{}, err
	}
	cmd := exec.Command(exe, append([]string{"gen"}, args...)...)
	if ns != nil {
		cmd = ns.Command(exe, append([]string{"gen"}, args...)...)
	}
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return gen.Stats{}, fmt.Errorf("intake gen: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var s gen.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return gen.Stats{}, fmt.Errorf("intake gen: unreadable summary %q: %v", out.String(), err)
	}
	return s.Stats(), nil
}

// childEnv marks a process that bench started as intake itself; the tests' TestMain reads it
// so that the test binary can stand in for intake.
const childEnv = "INTAKE_CHILD"
