package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/fabric"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
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
	"as intake gen; default TR v2.0 INT-MD, 5 hops over 16 switches, 200 flows, --vary 0.01), plus DTA and\n" +
	"INT-label traffic at a tenth of --pps. Every second it prints reports/s, flows, drops, events,\n" +
	"the slowest flows and the slowest hops. Ctrl-C (or --duration) stops it with a final summary.\n" +
	"With --fabric the traffic comes from the emulated INT fabric instead: the INT-label paper's\n" +
	"testbed in real time, its sinks sending INT-MD reports and INT-label exports.\n" +
	"While it runs, intake status, intake query and curl http://ADDR/metrics work against it."

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", demoUsage, stdout)
	def := gen.DefaultConfig()
	def.Flows = 200
	def.Vary = 0.01 // values change now and then, as a network's do, so events mean something
	gf := gen.AddFlags(fs, def)
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
	if gcfg.Format == "dta" || gcfg.Format == "int-label" {
		return usageErr("--format: %s: the demo's main stream is telemetry reports (tr0.5, tr1.0, tr2.0); DTA and INT-label streams run beside it", gcfg.Format)
	}
	if err := ingest.CheckReceivePath(); err != nil { // the demo's collector listens
		return err
	}

	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	cfg.Listeners = []ingest.Listener{
		{Format: "report", Address: "127.0.0.1", Sockets: 1},
		{Format: "dta", Address: "127.0.0.1", Sockets: 1},
		{Format: "int-label", Address: "127.0.0.1", Sockets: 1},
	}
	cfg.HTTP.Address = *httpAddr
	cfg.FillDefaults()
	if *cfgPath == "" {
		cleanup, err := collector.ScratchDTA(&cfg)
		if err != nil {
			return err
		}
		defer cleanup()
	}

	logger, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	coll, err := collector.New(cfg, collector.Options{Logger: logger})
	if err != nil {
		return err
	}
	scr, err := coll.NewScreen(stdout, "intake demo", "demo", *top)
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
	coll.WriteSummary(stdout)
	return errors.Join(runErr, err)
}
