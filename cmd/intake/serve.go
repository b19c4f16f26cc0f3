package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	grouprole "github.com/intake-int/intake/internal/group"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/wire"
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

// loadConfig reads --config, or the defaults without it. A configuration that cannot be
// read or is invalid is the user's misuse: its error exits 2, as a bad flag does.
func loadConfig(path string) (config.Config, error) {
	var c config.Config
	var err error
	if path == "" {
		c, err = config.Parse(nil)
	} else {
		c, err = config.Load(path)
	}
	if err != nil {
		return c, fmt.Errorf("%w: %w", errUsage, err)
	}
	return c, nil
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "[--config FILE] [--http ADDR:PORT] [--listen FORMAT=ADDR:PORT ...] [--check] [--dump] [--force] [--pcap FILE]", stdout)
	cfgPath := fs.String("config", "", "YAML configuration `file` (default: the built-in defaults, see --dump)")
	var ov overrides
	fs.Func("http", "serve the HTTP API on `ADDR:PORT` instead of the configuration's http.address (empty: no HTTP server)", func(s string) error {
		ov.http = &s
		return nil
	})
	fs.Func("listen", "`FORMAT=ADDR:PORT`: listen for FORMAT ("+strings.Join(wire.InputNames(), ", ")+") on udp ADDR:PORT (ADDR empty: every address); repeatable; "+
		"replaces the configuration's listeners of that FORMAT and keeps the others (docs/config.md, listeners[])", ov.addListener)
	check := fs.Bool("check", false, "validate the configuration, print what each component will take, and exit")
	dump := fs.Bool("dump", false, "print the effective configuration (defaults filled in) as YAML, with its budget as comments, and exit")
	force := fs.Bool("force", false, "start (or pass --check) even when the configuration needs more memory or disk than the machine has")
	lf := addLogFlags(fs)
	capture := fs.String("pcap", "", "process the capture `file` (pcap or pcapng) at full speed through the same workers and processors, print a summary and exit; datagrams go to the listener whose port they are sent to")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	logger, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if err := ov.apply(&cfg); err != nil {
		return err
	}
	for _, w := range cfg.FlowCache.Deprecated() {
		logger.Warn(w)
	}
	if *dump {
		_, err := stdout.Write(cfg.Dump())
		return err
	}
	if err := cfg.CheckBudget(budget.Local()); err != nil && !*force {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" { // docs/config.md, "Budget": garbage is collected within the budget
		debug.SetMemoryLimit(cfg.Budget().GoLimit())
	}
	if *check {
		// A data directory a running collector holds would stop this one's start: say so now.
		if err := cfg.DTA.CheckDataDir(); err != nil {
			return err
		}
		src := *cfgPath
		if src == "" {
			src = "defaults"
		}
		var ls []string
		for _, l := range cfg.Listeners {
			ls = append(ls, fmt.Sprintf("%s on udp %s", l.Format, hostPort(l.Address, l.Port)))
		}
		sinks := ""
		if len(cfg.Sinks) > 0 {
			var ss []string
			for _, s := range cfg.Sinks {
				ss = append(ss, s.Interface)
			}
			sinks = fmt.Sprintf(", INT sink on %s", strings.Join(ss, ", "))
		}
		listeners := "no listeners"
		if len(cfg.Listeners) > 0 {
			listeners = fmt.Sprintf("%d listeners (%s)", len(cfg.Listeners), strings.Join(ls, ", "))
		}
		fmt.Fprintf(stdout, "%s: ok: %s%s, http %s\n", src, listeners, sinks, orNone(cfg.HTTP.Address))
		cfg.Budget().Write(stdout)
		return nil
	}
	if *capture == "" { // --pcap needs no socket; the listeners need Linux
		if err := ingest.CheckReceivePath(); err != nil {
			return err
		}
	}

	coll, err := collector.New(cfg, collector.Options{NoHTTP: *capture != "", Logger: logger})
	if err != nil {
		return err
	}
	if *capture != "" {
		return serveCapture(coll, *capture, stdout)
	}
	// Register for the signals before anything listens, so that a signal sent as soon as
	// the listening line appears is ours to handle.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)

	if err := coll.Start(context.Background()); err != nil {
		return err
	}
	start := time.Now()
	g := &coll.Config.Group
	if g.Role == grouprole.RoleProcessor {
		fmt.Fprintf(stderr, "intake serve: processor %s of consumer group %s, consuming %s (listeners and sinks are the inlets')\n", g.Name, g.GroupID, g.Topic)
	} else {
		for i, l := range coll.Config.Listeners {
			fmt.Fprintf(stderr, "intake serve: listening for %s on udp %s (%d sockets)\n", l.Format, coll.Receiver.ListenerAddr(i), l.Sockets)
		}
		for _, s := range coll.Config.Sinks {
			fmt.Fprintf(stderr, "intake serve: the INT sink of interface %s (%s): INT taken out of arriving packets, which pass on\n", s.Interface, s.Name)
		}
	}
	if g.Role == grouprole.RoleInlet {
		fmt.Fprintf(stderr, "intake serve: inlet %s: every report to topic %s, partitioned by owner key\n", g.Name, g.Topic)
	}
	if srv := coll.API; srv != nil {
		scheme, auth := "http", "no token: anyone who reaches it may read and change settings"
		if srv.TLS() {
			scheme = "https"
		}
		if srv.Guarded() {
			auth = "bearer token required"
		}
		fmt.Fprintf(stderr, "intake serve: %s on %s (/metrics, /healthz, /api/v1/status; %s)\n", scheme, srv.Listening(), auth)
	}
	if cl := coll.Config.Cluster; cl.Enabled() {
		fmt.Fprintf(stderr, "intake serve: cluster member %s of %d (%s); queries to any member are answered by the keys' owners\n",
			cl.Self, len(cl.Members), strings.Join(cl.Names(), ", "))
	}
	fmt.Fprintf(stderr, "intake serve: ready; Ctrl-C or SIGTERM stops\n")
	sdNotify("READY=1")

	s := <-sig
	fmt.Fprintf(stderr, "intake serve: %s: draining and stopping\n", s)
	sdNotify("STOPPING=1")
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err = coll.Stop(ctx)
	fmt.Fprintf(stdout, "intake serve: stopped after %s\n", time.Since(start).Round(time.Millisecond))
	writeSummary(stdout, new(coll.Summary()))
	return err
}

// overrides are serve's flags that change the configuration it loaded: --http and --listen.
type overrides struct {
	http   *string           // --http, when given
	listen []ingest.Listener // --listen, in the order given
}

// addListener parses one --listen FORMAT=ADDR:PORT.
func (o *overrides) addListener(s string) error {
	format, hp, ok := strings.Cut(s, "=")
	if !ok || format == "" {
		return fmt.Errorf("%q: want FORMAT=ADDR:PORT, e.g. report=:32766 (formats: %s)", s, strings.Join(wire.InputNames(), ", "))
	}
	if !slices.Contains(wire.InputNames(), format) {
		return fmt.Errorf("%q: format %q: want one of %s", s, format, strings.Join(wire.InputNames(), ", "))
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("%q: want FORMAT=ADDR:PORT, e.g. report=127.0.0.1:32766: %v", s, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q: want 0-65535 (0: a free port the kernel picks)", s, port)
	}
	o.listen = append(o.listen, ingest.Listener{Format: format, Address: host, Port: p})
	return nil
}

// apply puts the flags over cfg and validates the result again: --http replaces
// http.address; the --listen listeners replace cfg's listeners of their formats (given in
// the file or the defaults) and keep those of other formats, in cfg's order, the new ones
// last.
func (o *overrides) apply(cfg *config.Config) error {
	if o.http == nil && len(o.listen) == 0 {
		return nil
	}
	if o.http != nil {
		cfg.HTTP.Address = *o.http
	}
	if len(o.listen) > 0 {
		given := map[string]bool{}
		for _, l := range o.listen {
			given[l.Format] = true
		}
		var ls []ingest.Listener
		for _, l := range cfg.Listeners {
			if !given[l.Format] {
				ls = append(ls, l)
			}
		}
		cfg.Listeners = append(ls, o.listen...)
		cfg.FillDefaults()
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("--http/--listen: %v", err)
	}
	return nil
}

// stopTimeout bounds a collector's stop: the sinks flush what they hold until then.
const stopTimeout = 5 * time.Second

func serveCapture(coll *collector.Collector, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := pcap.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sum, err := coll.RunCapture(context.Background(), rd)
	st := coll.Status()
	rate := 0.0
	if s := sum.Elapsed.Seconds(); s > 0 {
		rate = float64(st.ReportsDecoded) / s
	}
	fmt.Fprintf(stdout, "intake serve: %s: %d frames, %d telemetry datagrams in %s (%.0f reports/s)\n",
		path, sum.Frames, sum.Datagram, sum.Elapsed.Round(time.Microsecond), rate)
	writeSummary(stdout, new(coll.Summary()))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
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
