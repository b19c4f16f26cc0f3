package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
)

// demo is intake's main job on its defaults, with nothing to set up: the collector serve runs
// (every processor, the HTTP API) and generators sending to it over loopback at a modest
// rate, with a one-screen summary every second until Ctrl-C.

func init() {
	register(verb{
		name:    "demo",
		summary: "collector and generator in one process over loopback, with a live summary",
		run:     runDemo,
	})
}

const demoUsage = "[--pps PPS] [--duration D | --count N] [--http ADDR] [--top N] [--config FILE] [--fabric] [options of intake gen]\n\n" +
	"Starts the collector (listeners on loopback ports the kernel picks, so a running intake serve\n" +
	"is not disturbed; the HTTP API on --http) and sends it telemetry reports (generator options\n" +
	"as intake gen; default TR v2.0 INT-MD, 5 hops over 16 switches, 200 flows), plus DTA and\n" +
	"INT-label traffic at a tenth of --pps. The values follow gen's network model (steady values\n" +
	"with jitter, bursts, queue build-ups, path changes), each datagram built as it is sent, in\n" +
	"generated time that runs with the wall clock (--interval sets another pace). Without --config\n" +
	"the detector also reports queues above the build-ups' level (detect.above.queue_occupancy:\n" +
	"1000 cells). Every second it prints reports/s, flows, drops, events, the slowest flows and the\n" +
	"slowest hops. Ctrl-C (or --duration) stops it with a final summary.\n" +
	"With --fabric the traffic comes from the emulated INT fabric instead: the INT-label paper's\n" +
	"testbed in real time, its sinks sending INT-MD reports and INT-label exports.\n" +
	"While it runs, intake status, intake query and curl http://ADDR/metrics work against it."

// demoGenConfig is the demo's generator defaults: gen's, with 200 flows, each datagram
// built as it is sent (a ring would replay its values and INT-label times every lap).
func demoGenConfig() gen.Config {
	c := gen.DefaultConfig()
	c.Flows, c.Fresh = 200, true
	return c
}

// demoConfig is the demo collector's configuration: the file's (or the defaults), with a
// listener per stream on a loopback port the kernel picks and the HTTP API on httpAddr.
// Without a file the DTA stores are scratch files (cleanup removes them) and the detector
// reports queues above the generator's build-up level.
func demoConfig(path, httpAddr string) (cfg config.Config, cleanup func(), err error) {
	cfg, err = loadConfig(path)
	if err != nil {
		return cfg, nil, err
	}
	if path == "" {
		// The generator's build-ups rise above this level and nothing else does: the
		// console shows a threshold crossing with each.
		cfg.Detect.Above["queue_occupancy"] = gen.BuildUpLevel
	}
	cfg.Listeners = []ingest.Listener{
		{Format: "report", Address: "127.0.0.1", Sockets: 1},
		{Format: "dta", Address: "127.0.0.1", Sockets: 1},
		{Format: "int-label", Address: "127.0.0.1", Sockets: 1},
	}
	cfg.HTTP.Address = httpAddr
	cfg.FillDefaults()
	cleanup = func() {}
	if path == "" {
		if cleanup, err = collector.ScratchDTA(&cfg); err != nil {
			return cfg, nil, err
		}
	}
	return cfg, cleanup, nil
}

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", demoUsage, stdout)
	gf := gen.AddFlags(fs, demoGenConfig())
	sf := gen.AddSendFlags(fs, 2000, stderr)
	httpAddr := fs.String("http", config.HTTPAddress, "HTTP API `address` (127.0.0.1:0 picks a free port; empty: off)")
	top := fs.Int("top", 5, "`N` slowest flows and switches shown")
	cfgPath := fs.String("config", "", "collector configuration `file` (its processor sections apply; listeners are replaced)")
	useFabric := fs.Bool("fabric", false, "send from the emulated INT fabric (the INT-label paper's testbed in real time: switches, ports, paths, coverage) instead of the generator; --pps is then the fabric's packets/s")
	lf := addLogFlags(fs)
	gcfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	sc, err := sf.Config()
	switch {
	case err != nil:
		return usageErr("%v", err)
	case sc.Rate <= 0:
		return usageErr("--pps: %g: must be positive", sc.Rate)
	case *useFabric && (sc.Count > 0 || sc.Sockets > 1 || sc.GSO > 0):
		return usageErr("--count, --sockets and --gso are the generator's: --fabric sends from the fabric")
	case *top < 1 || *top > 100:
		return usageErr("--top: %d: allowed is 1 to 100", *top)
	}
	if !gf.Set("interval") {
		gcfg.Interval = 0 // generated time at the wall clock's pace (gen.StartDemo)
	}
	if gcfg.Format == "dta" || gcfg.Format == "int-label" {
		return usageErr("--format: %s: the demo's main stream is telemetry reports (tr0.5, tr1.0, tr2.0); DTA and INT-label streams run beside it", gcfg.Format)
	}
	if err := ingest.CheckReceivePath(); err != nil { // the demo's collector listens
		return err
	}

	cfg, cleanup, err := demoConfig(*cfgPath, *httpAddr)
	if err != nil {
		return err
	}
	defer cleanup()

	logger, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	coll, err := collector.New(cfg, collector.Options{Logger: logger})
	if err != nil {
		return err
	}
	scr, err := newScreen(coll, stdout, "intake demo", "demo", *top)
	if err != nil {
		return err
	}
	defer scr.Close()

	ctx, stop := runContext(sc.Duration)
	defer stop()

	if err := coll.Start(context.Background()); err != nil {
		if coll.API != nil {
			err = fmt.Errorf("%w (is intake serve or another demo running? try --http 127.0.0.1:0)", err)
		}
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		coll.Stop(c)
	}()
	httpLine := "off"
	if srv := coll.API; srv != nil {
		httpLine = "http://" + srv.Addr()
	}
	recv := coll.Receiver

	var wait func() error
	describe := func() string { return "" }
	var what string
	if *useFabric {
		var live *fabric.Live
		live, err = fabric.StartLive(ctx, recv.ListenerAddr(0), recv.ListenerAddr(2), sc.Rate)
		if err == nil {
			describe, wait = live.Describe, live.Wait
		}
		what = fmt.Sprintf("the emulated testbed (4 spine, 4 leaf, 4 ToR switches, 8 hosts; INT-MD and INT-label Base A) at %.0f packets/s", sc.Rate)
	} else {
		what, wait, err = gen.StartDemo(ctx, gcfg, sc, [3]string{recv.ListenerAddr(0), recv.ListenerAddr(1), recv.ListenerAddr(2)})
	}
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- wait() }()

	fmt.Fprintf(stderr, "intake demo: %s; http %s; Ctrl-C stops\n", what, httpLine)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case runErr = <-errc:
			errc = nil
			if runErr != nil || sc.Count > 0 {
				break loop // a failure, or --count datagrams sent
			}
		case <-tick.C:
			scr.Draw(time.Since(start), httpLine, describe())
		}
	}
	stop()
	if errc != nil {
		runErr = <-errc
	}
	recv.Settle()
	// The last screen's rates are the whole run's: the generators have stopped.
	scr.Final(start)
	scr.Draw(time.Since(start), httpLine, describe())
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err = coll.Stop(sctx)
	fmt.Fprintf(stdout, "intake demo: stopped after %s\n", time.Since(start).Round(time.Millisecond))
	writeSummary(stdout, new(coll.Summary()))
	return errors.Join(runErr, err)
}
