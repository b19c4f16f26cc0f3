package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
)

// bench ingest measures the receive path against its ceiling ("an honest
// benchmark"): the same generator settings are sent for the same time first to a collector
// that only drains and counts its sockets, then to the full collector serve runs, with every
// processor the configuration turns on. The generator runs as a child process (`intake gen`),
// so that this process's CPU time is the collector's alone.

func init() {
	registerSub("bench", verb{
		name:    "ingest",
		summary: "the collector's report rate against a drain-only receiver, same load",
		run:     runBenchIngest,
	})
}

const benchIngestUsage = "[--duration D] [--rate PPS] [--senders N] [--sockets N] [--config FILE] [--json]\n" +
	"       [generator options, as intake gen: --format, --batch, --hops, --flows, ...]\n\n" +
	"Runs the generator against (a) a receiver that only drains and counts its sockets and (b) the\n" +
	"full collector (the processors of --config, default all), for --duration each, over loopback.\n" +
	"Prints reports/s of both, the ratio b/a, CPU ns per report (this process's CPU time, the\n" +
	"generator being a child process, over reports decoded) and the loss of each run."

// benchRun is one phase's outcome.
type benchRun struct {
	Sent      gen.Stats
	Received  uint64 // datagrams
	Reports   uint64 // decoded (drain: received × reports per datagram)
	Errors    uint64
	Kernel    uint64 // the collector's sockets' drops (receive buffer full)
	Backlog   uint64 // the whole host's input backlog drops over the phase (softnet_stat)
	CPU       time.Duration
	ReportsPS float64
	Loss      float64
}

// benchIngestResult is the --json object; the first five keys are the contract.
type benchIngestResult struct {
	DrainReportsPerS     float64  `json:"drain_reports_per_s"`
	CollectorReportsPerS float64  `json:"collector_reports_per_s"`
	CPUNsPerReport       float64  `json:"cpu_ns_per_report"`
	Loss                 float64  `json:"loss"`
	Ratio                float64  `json:"ratio"`
	DrainLoss            float64  `json:"drain_loss"`
	DrainCPUNsPerReport  float64  `json:"drain_cpu_ns_per_report"`
	DurationS            float64  `json:"duration_s"`
	Rounds               int      `json:"rounds"`
	Format               string   `json:"format"`
	ReportsPerDatagram   float64  `json:"reports_per_datagram"`
	DatagramsSent        uint64   `json:"datagrams_sent"`
	KernelDrops          uint64   `json:"kernel_drops"`
	BacklogDrops         uint64   `json:"backlog_drops"`
	DecodeErrors         uint64   `json:"decode_errors"`
	Processors           []string `json:"processors"`
	Sockets              int      `json:"sockets"`
}

func runBenchIngest(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench ingest", benchIngestUsage, stdout)
	gf := gen.AddFlags(fs, gen.DefaultConfig())
	duration := fs.Duration("duration", 5*time.Second, "`D` each phase sends for")
	rate := fs.Float64("rate", 0, "`PPS` datagrams per second the generator sends (0: as fast as it can)")
	senders := fs.Int("senders", 1, "`N` generator sockets")
	sockets := fs.Int("sockets", 0, "`N` collector sockets (SO_REUSEPORT workers); 0: one per core")
	rcvbuf := fs.Int("rcvbuf", ingest.DefaultRcvBuf, "receive buffer `bytes` requested per collector socket")
	cfgPath := fs.String("config", "", "collector configuration `file` (its processor sections apply; listeners and http are replaced)")
	rounds := fs.Int("rounds", 1, "`N` rounds of both phases, alternating; the median round of each phase counts")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the collector phase to `file` (go tool pprof)")
	gcfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	switch {
	case *duration <= 0:
		return usageErr("--duration: %v: must be positive", *duration)
	case *rate < 0:
		return usageErr("--rate: %g: must be 0 (as fast as possible) or positive", *rate)
	case *rcvbuf < ingest.MinRcvBuf || *rcvbuf > ingest.MaxRcvBuf:
		return usageErr("--rcvbuf: %d: allowed is %d to %d bytes", *rcvbuf, ingest.MinRcvBuf, ingest.MaxRcvBuf)
	case *rounds < 1 || *rounds > 100:
		return usageErr("--rounds: %d: allowed is 1 to 100", *rounds)
	case *senders < 1 || *senders > 256:
		return usageErr("--senders: %d: allowed is 1 to 256", *senders)
	case *sockets < 0 || *sockets > ingest.MaxSockets:
		return usageErr("--sockets: %d: allowed is 0 (one per core) to %d", *sockets, ingest.MaxSockets)
	}
	if err := cmp.Or(ingest.CheckReceivePath(), gen.CheckSend()); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	input := gcfg.Input().String()
	cfg.Listeners = []ingest.Listener{{Format: input, Address: "127.0.0.1", Sockets: *sockets, RcvBuf: *rcvbuf}}
	cfg.HTTP.Address = ""
	cfg.FillDefaults()
	if *cfgPath == "" {
		cleanup, err := scratchDTA(&cfg)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	genArgs := append(passGenFlags(fs), "--rate", fmt.Sprint(*rate), "--sockets", fmt.Sprint(*senders),
		"--duration", duration.String(), "--json", "--quiet")

	phase := func(drain bool) (benchRun, []string, error) {
		// The drain phase runs the receive path alone; the collector phase, what serve runs.
		var recv *ingest.Receiver
		var start, stop func(context.Context) error
		if drain {
			r, err := ingest.New(cfg.Ingest(), ingest.Deps{})
			if err != nil {
				return benchRun{}, nil, err
			}
			r.SetDrainOnly(true)
			recv, start, stop = r, r.Start, r.Stop
		} else {
			c, err := collector.New(cfg, collector.Options{NoHTTP: true})
			if err != nil {
				return benchRun{}, nil, err
			}
			recv, start, stop = c.Receiver, c.Start, c.Stop
		}
		coll := recv
		var names []string
		for _, p := range coll.Processors() {
			names = append(names, p.Name())
		}
		ctx := context.Background()
		if err := start(ctx); err != nil {
			return benchRun{}, nil, err
		}
		defer stop(ctx)
		if *profile != "" && !drain {
			f, err := os.Create(*profile)
			if err != nil {
				return benchRun{}, nil, err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return benchRun{}, nil, err
			}
			defer pprof.StopCPUProfile()
		}
		cpu0, backlog0 := processCPU(), softnetDrops()
		sent, err := runGenChild(append([]string{"--to", coll.ListenerAddr(0)}, genArgs...))
		if err != nil {
			return benchRun{}, nil, err
		}
		settle(coll)
		cpu := processCPU() - cpu0
		// Stop reads the sockets' final drop counts (SO_MEMINFO): drops after the last
		// datagram read carry no SO_RXQ_OVFL message.
		if err := stop(ctx); err != nil {
			return benchRun{}, nil, err
		}
		st := coll.Status()
		r := benchRun{Sent: sent, Received: st.PacketsReceived, Reports: st.ReportsDecoded,
			Errors: st.DecodeErrors.Total, Kernel: st.KernelDrops, Backlog: softnetDrops() - backlog0, CPU: cpu}
		if drain && sent.Datagrams > 0 {
			r.Reports = uint64(float64(r.Received) * float64(sent.Reports) / float64(sent.Datagrams))
		}
		if s := sent.Elapsed.Seconds(); s > 0 {
			r.ReportsPS = float64(r.Reports) / s
		}
		if sent.Datagrams > 0 && r.Received < sent.Datagrams {
			r.Loss = float64(sent.Datagrams-r.Received) / float64(sent.Datagrams)
		}
		return r, names, nil
	}

	// Rounds alternate the phases, so that a machine whose load drifts weighs on both alike;
	// each phase's median round (by reports/s) is the result.
	var as, bs []benchRun
	var procs []string
	for round := 1; round <= *rounds; round++ {
		fmt.Fprintf(stderr, "bench ingest: round %d/%d: %s to 127.0.0.1, %s per phase; (a) drain-only receiver...\n", round, *rounds, input, *duration)
		a, _, err := phase(true)
		if err != nil {
			return fmt.Errorf("drain phase: %w", err)
		}
		fmt.Fprintf(stderr, "bench ingest: round %d/%d: (b) full collector...\n", round, *rounds)
		b, names, err := phase(false)
		if err != nil {
			return fmt.Errorf("collector phase: %w", err)
		}
		as, bs, procs = append(as, a), append(bs, b), names
	}
	a, b := median(as), median(bs)
	res := benchIngestResult{DrainReportsPerS: a.ReportsPS, CollectorReportsPerS: b.ReportsPS, Loss: b.Loss,
		DrainLoss: a.Loss, DurationS: duration.Seconds(), Rounds: *rounds, Format: gcfg.Format, DatagramsSent: b.Sent.Datagrams,
		KernelDrops: b.Kernel, BacklogDrops: b.Backlog, DecodeErrors: b.Errors, Processors: procs, Sockets: cfg.Listeners[0].Sockets}
	if procs == nil {
		res.Processors = []string{}
	}
	if b.Sent.Datagrams > 0 {
		res.ReportsPerDatagram = float64(b.Sent.Reports) / float64(b.Sent.Datagrams)
	}
	if b.Reports > 0 {
		res.CPUNsPerReport = float64(b.CPU.Nanoseconds()) / float64(b.Reports)
	}
	if a.Reports > 0 {
		res.DrainCPUNsPerReport = float64(a.CPU.Nanoseconds()) / float64(a.Reports)
	}
	if a.ReportsPS > 0 {
		res.Ratio = b.ReportsPS / a.ReportsPS
	}
	if *asJSON {
		j, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", j)
		return err
	}
	w := func(name string, r benchRun, cpuNs float64) {
		fmt.Fprintf(stdout, "  %-10s %12.0f reports/s  %8.1f CPU ns/report  loss %.4f  (%d of %d datagrams; drops: %d socket, %d host backlog; %d decode errors)\n",
			name, r.ReportsPS, cpuNs, r.Loss, r.Received, r.Sent.Datagrams, r.Kernel, r.Backlog, r.Errors)
	}
	fmt.Fprintf(stdout, "bench ingest: %s, %.3g reports/datagram, %s per phase, %d collector sockets, processors: %s\n",
		gcfg.Format, res.ReportsPerDatagram, *duration, res.Sockets, orNone(strings.Join(procs, ", ")))
	w("drain", a, res.DrainCPUNsPerReport)
	w("collector", b, res.CPUNsPerReport)
	_, err = fmt.Fprintf(stdout, "  ratio      %.3f (collector / drain)\n", res.Ratio)
	return err
}

// median returns the run with the median report rate.
func median(rs []benchRun) benchRun {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y benchRun) int { return cmp.Compare(x.ReportsPS, y.ReportsPS) })
	return rs[len(rs)/2]
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

// runGenChild runs `intake gen` with args in a child process and returns what it sent.
func runGenChild(args []string) (gen.Stats, error) {
	exe, err := os.Executable()
	if err != nil {
		return gen.Stats{}, err
	}
	cmd := exec.CommandContext(context.Background(), exe, append([]string{"gen"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return gen.Stats{}, fmt.Errorf("intake gen: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	var s genSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return gen.Stats{}, fmt.Errorf("intake gen: unreadable summary %q: %v", out.String(), err)
	}
	return gen.Stats{Datagrams: s.Datagrams, Reports: s.Reports, Bytes: s.Bytes, SendErrors: s.SendErrors,
		Elapsed: time.Duration(s.ElapsedS * float64(time.Second))}, nil
}

// childEnv marks a process that bench started as intake itself; the tests' TestMain reads it
// so that the test binary can stand in for intake.
const childEnv = "INTAKE_CHILD"

// settle waits until the collector has read what the kernel still holds: the received count
// stops moving for 200 ms (at most 3 s).
func settle(c *ingest.Receiver) {
	last, still := c.Status().PacketsReceived, 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && still < 4; {
		time.Sleep(50 * time.Millisecond)
		if n := c.Status().PacketsReceived; n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}
