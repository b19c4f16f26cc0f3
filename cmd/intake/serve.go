package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/pcap"
)

// serve runs the collector: listeners, workers, processors and the HTTP API, until SIGINT or
// SIGTERM; or, with --pcap, once over a capture at full speed.

func init() {
	register(verb{
		name:    "serve",
		summary: "run the collector (UDP listeners, processors, HTTP API)",
		run:     runServe,
	})
}

// procEnv is what a processor is built from: the configuration, the metrics registry its
// counters go to, the HTTP server its endpoints go to (nil when HTTP is off or for a --pcap
// run: a factory must check), and the event bus the detector publishes to and the event
// consumers (exporters, the event log, Redis) subscribe to.
type procEnv struct {
	Cfg     *config.Config
	Metrics *metrics.Registry
	API     *api.Server
	Bus     *event.Bus
}

// ProcessorFactory builds one processor. The processor packages (detect, flowcache, dta,
// label) append theirs to serveProcessors from an init function in a file of this package
// of their own (proc_<name>.go), so that serve, demo and bench build the same pipeline. A
// factory returns a nil Processor when its component is turned off in the configuration.
type ProcessorFactory func(env *procEnv) (ingest.Processor, error)

var serveProcessors []ProcessorFactory

// loadConfig reads --config, or the defaults without it.
func loadConfig(path string) (config.Config, error) {
	if path == "" {
		return config.Parse(nil)
	}
	return config.Load(path)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "[--config FILE] [--check] [--dump] [--pcap FILE]", stdout)
	cfgPath := fs.String("config", "", "YAML configuration `file` (default: the built-in defaults, see --dump)")
	check := fs.Bool("check", false, "validate the configuration and exit")
	dump := fs.Bool("dump", false, "print the effective configuration (defaults filled in) as YAML and exit")
	capture := fs.String("pcap", "", "process the capture `file` (pcap or pcapng) at full speed through the same workers and processors, print a summary and exit; datagrams go to the listener whose port they are sent to")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *dump {
		_, err := stdout.Write(cfg.Dump())
		return err
	}
	if *check {
		src := *cfgPath
		if src == "" {
			src = "defaults"
		}
		var ls []string
		for _, l := range cfg.Listeners {
			ls = append(ls, fmt.Sprintf("%s on udp %s", l.Format, hostPort(l.Address, l.Port)))
		}
		fmt.Fprintf(stdout, "%s: ok: %d listeners (%s), http %s\n", src, len(cfg.Listeners), strings.Join(ls, ", "), orNone(cfg.HTTP.Address))
		return nil
	}
	if *capture == "" { // --pcap needs no socket; the listeners need Linux
		if err := ingest.CheckReceivePath(); err != nil {
			return err
		}
	}

	coll, env, err := newCollector(&cfg, *capture == "")
	if err != nil {
		return err
	}
	srv := env.API
	if *capture != "" {
		return serveCapture(coll, *capture, stdout)
	}
	// Register for the signals before anything listens, so that a signal sent as soon as
	// the listening line appears is ours to handle.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)

	if err := coll.Start(); err != nil {
		return err
	}
	start := time.Now()
	for i, l := range cfg.Listeners {
		fmt.Fprintf(stderr, "intake serve: listening for %s on udp %s (%d sockets)\n", l.Format, coll.ListenerAddr(i), l.Sockets)
	}
	if srv != nil {
		if err := srv.Start(); err != nil {
			coll.Stop()
			return err
		}
		fmt.Fprintf(stderr, "intake serve: http on %s (/metrics, /healthz, /api/v1/status)\n", srv.Addr())
	}
	fmt.Fprintf(stderr, "intake serve: ready; Ctrl-C or SIGTERM stops\n")

	s := <-sig
	fmt.Fprintf(stderr, "intake serve: %s: draining and stopping\n", s)
	var errs []error
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, srv.Stop(ctx))
		cancel()
	}
	errs = append(errs, coll.Stop())
	fmt.Fprintf(stdout, "intake serve: stopped after %s\n", time.Since(start).Round(time.Millisecond))
	writeSummary(stdout, coll.Status())
	return errors.Join(errs...)
}

// newCollector builds the collector serve runs: every processor of serveProcessors over one
// metrics registry and event bus, and the HTTP server when withHTTP and the configuration has
// one (env.API, else nil). demo and bench ingest build theirs here too, so that they measure
// and show what serve runs; extra processors (the demo's) run after serve's.
func newCollector(cfg *config.Config, withHTTP bool, extra ...ingest.Processor) (*ingest.Collector, *procEnv, error) {
	reg := metrics.NewRegistry()
	var srv *api.Server
	if cfg.HTTP.Address != "" && withHTTP {
		srv = api.New(cfg.HTTP.Address, reg, nil)
	}
	env := &procEnv{Cfg: cfg, Metrics: reg, API: srv, Bus: &event.Bus{}}
	var procs []ingest.Processor
	for _, f := range serveProcessors {
		p, err := f(env)
		if err != nil {
			return nil, nil, err
		}
		if p != nil {
			procs = append(procs, p)
		}
	}
	coll, err := ingest.New(*cfg, reg, append(procs, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	if srv != nil {
		srv.SetCollector(coll)
	}
	return coll, env, nil
}

func serveCapture(coll *ingest.Collector, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := pcap.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sum, err := coll.RunCapture(rd)
	st := coll.Status()
	rate := 0.0
	if s := sum.Elapsed.Seconds(); s > 0 {
		rate = float64(st.ReportsDecoded) / s
	}
	fmt.Fprintf(stdout, "intake serve: %s: %d frames, %d telemetry datagrams in %s (%.0f reports/s)\n",
		path, sum.Frames, sum.Datagram, sum.Elapsed.Round(time.Microsecond), rate)
	writeSummary(stdout, st)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeSummary prints the final counters, one line per family, reasons that are not zero.
func writeSummary(w io.Writer, st ingest.Status) {
	fmt.Fprintf(w, "  packets received  %d (%d bytes)\n", st.PacketsReceived, st.BytesReceived)
	fmt.Fprintf(w, "  reports decoded   %d%s\n", st.ReportsDecoded, nonZero(st.ReportsByFormat))
	fmt.Fprintf(w, "  decode errors     %d%s\n", st.DecodeErrors.Total, nonZero(st.DecodeErrors.ByReason))
	fmt.Fprintf(w, "  ingest drops      %d%s\n", st.IngestDrops.Total, nonZero(st.IngestDrops.ByReason))
	fmt.Fprintf(w, "  kernel drops      %d\n", st.KernelDrops)
	if len(st.ProcessorQueueDrops) > 0 {
		var n uint64
		for _, v := range st.ProcessorQueueDrops {
			n += v
		}
		fmt.Fprintf(w, "  queue drops       %d%s\n", n, nonZero(st.ProcessorQueueDrops))
	}
}

// nonZero formats " (a 1, b 2)" from the non-zero entries of m, sorted by key.
func nonZero(m map[string]uint64) string {
	var ks []string
	for k, v := range m {
		if v != 0 {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return ""
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func hostPort(addr string, port int) string {
	if addr == "" {
		addr = "*"
	} else if strings.Contains(addr, ":") {
		addr = "[" + addr + "]"
	}
	return fmt.Sprintf("%s:%d", addr, port)
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}
