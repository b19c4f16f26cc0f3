package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/telemetry"
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

const demoUsage = "[--rate PPS] [--duration D] [--http ADDR] [--top N] [--config FILE] [--fabric] [generator options]\n\n" +
	"Starts the collector (listeners on loopback ports the kernel picks, so a running intake serve\n" +
	"is not disturbed; the HTTP API on --http) and sends it telemetry reports (generator options\n" +
	"as intake gen; default TR v2.0 INT-MD, 5 hops over 16 switches, 200 flows, --vary 0.01), plus DTA and\n" +
	"INT-label traffic at a tenth of --rate. Every second it prints reports/s, flows, drops, events,\n" +
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
	rate := fs.Float64("rate", 2000, "`PPS` report datagrams per second")
	duration := fs.Duration("duration", 0, "stop after `D` (default: at Ctrl-C)")
	httpAddr := fs.String("http", config.HTTPAddress, "HTTP API `address` (127.0.0.1:0 picks a free port; empty: off)")
	top := fs.Int("top", 5, "`N` slowest flows and switches shown")
	cfgPath := fs.String("config", "", "collector configuration `file` (its processor sections apply; listeners are replaced)")
	useFabric := fs.Bool("fabric", false, "send from the emulated INT fabric (the INT-label paper's testbed in real time: switches, ports, paths, coverage) instead of the generator; --rate is then packets/s")
	gcfg, err := parseGenArgs(fs, gf, args)
	if err != nil {
		return err
	}
	switch {
	case *rate <= 0:
		return usageErr("--rate: %g: must be positive", *rate)
	case *duration < 0:
		return usageErr("--duration: %v: must be positive", *duration)
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
	cfg.Listeners = []config.Listener{
		{Format: "report", Address: "127.0.0.1", Sockets: 1},
		{Format: "dta", Address: "127.0.0.1", Sockets: 1},
		{Format: "int-label", Address: "127.0.0.1", Sockets: 1},
	}
	cfg.HTTP.Address = *httpAddr
	cfg.FillDefaults()
	if *cfgPath == "" {
		cleanup, err := scratchDTA(&cfg)
		if err != nil {
			return err
		}
		defer cleanup()
	}

	watch := &demoWatch{}
	coll, env, err := newCollector(&cfg, true, watch)
	if err != nil {
		return err
	}
	events := env.Bus.Subscribe("demo", 1<<14)
	defer env.Bus.Unsubscribe(events)

	ctx, stop := runContext(*duration)
	defer stop()

	if err := coll.Start(); err != nil {
		return err
	}
	defer coll.Stop()
	httpLine := "off"
	if srv := env.API; srv != nil {
		if err := srv.Start(); err != nil {
			return fmt.Errorf("%w (is intake serve or another demo running? try --http 127.0.0.1:0)", err)
		}
		defer func() {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Stop(c)
		}()
		httpLine = "http://" + srv.Addr()
	}

	var wait func() error
	describe := func() string { return "" }
	var what string
	if *useFabric {
		describe, wait, err = startDemoFabric(ctx, coll.ListenerAddr(0), coll.ListenerAddr(2), *rate)
		what = fmt.Sprintf("the emulated testbed (4 spine, 4 leaf, 4 ToR switches, 8 hosts; INT-MD and INT-label Base A) at %.0f packets/s", *rate)
	} else {
		what, wait, err = startDemoGen(ctx, gcfg, *rate, coll)
	}
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- wait() }()

	scr := newDemoScreen(stdout, *top)
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
			if runErr != nil {
				break loop
			}
		case <-tick.C:
			scr.draw(time.Since(start), coll, watch, events, httpLine, describe())
		}
	}
	stop()
	if errc != nil {
		runErr = <-errc
	}
	settle(coll)
	// The last screen's rates are the whole run's: the generators have stopped.
	scr.lastByFmt, scr.lastT, scr.final = map[string]uint64{}, start, true
	scr.draw(time.Since(start), coll, watch, events, httpLine, describe())
	err = coll.Stop()
	fmt.Fprintf(stdout, "intake demo: stopped after %s\n", time.Since(start).Round(time.Millisecond))
	writeSummary(stdout, coll.Status())
	return errors.Join(runErr, err)
}

// startDemoGen starts the demo's generators: the report stream of gcfg at rate datagrams/s
// to the collector's first listener, and DTA Key-Writes and INT-label exports at a tenth of
// the rate to its second and third, until ctx is done. It returns what it sends, for the
// start line, and wait, which returns once every sender has stopped.
func startDemoGen(ctx context.Context, gcfg gen.Config, rate float64, coll *ingest.Collector) (string, func() error, error) {
	dta, label := gcfg, gcfg
	dta.Format, dta.Batch = "dta", 1
	label.Format, label.Batch = "int-label", 1
	streams := []struct {
		cfg  gen.Config
		rate float64
	}{{gcfg, rate}, {dta, rate / 10}, {label, rate / 10}}
	var senders []*gen.Sender
	var what string
	for i, s := range streams {
		g, err := gen.New(s.cfg)
		if err == nil && i == 0 {
			what = fmt.Sprintf("%s to %s at %.0f datagrams/s", g, coll.ListenerAddr(0), rate)
		}
		var snd *gen.Sender
		if err == nil {
			snd, err = gen.NewSender(g, gen.SendConfig{To: coll.ListenerAddr(i), Rate: s.rate})
		}
		if err != nil {
			for _, s := range senders {
				s.Close()
			}
			return "", nil, err
		}
		senders = append(senders, snd)
	}
	errs := make([]error, len(senders))
	var wg sync.WaitGroup
	for i, snd := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := snd.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs[i] = err
			}
		}()
	}
	return what, func() error {
		wg.Wait()
		for _, s := range senders {
			s.Close()
		}
		return errors.Join(errs...)
	}, nil
}

// scratchDTA points the DTA stores of a run on the defaults (demo, bench) at a temporary
// directory, so that they neither need nor overwrite the collector's; cleanup removes it.
func scratchDTA(cfg *config.Config) (cleanup func(), err error) {
	if !cfg.DTA.Enabled {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "intake-dta-")
	if err != nil {
		return nil, err
	}
	cfg.DTA.DataDir = dir
	return func() { os.RemoveAll(dir) }, nil
}

// demoWatch is the demo's own processor: per worker, the latest end-to-end latency and path
// of each flow (a direct-mapped table) and hop latency per switch, over the last second.
type demoWatch struct {
	shards []watchShard
}

const (
	watchFlows    = 1 << 12
	watchSwitches = 1 << 10
	watchPath     = 8
	watchProbe    = 8
)

type watchShard struct {
	mu    sync.Mutex
	flows [watchFlows]watchFlow
	sw    [watchSwitches]watchSwitch
	_     [64]byte
}

type watchFlow struct {
	key     telemetry.FlowKey
	used    bool
	seen    int64  // receive time of the last report, Unix ns
	latency uint64 // the last report's end-to-end latency (sum of hop latencies), ns
	path    [watchPath]uint32
	npath   uint8
}

type watchSwitch struct {
	node          uint32
	used          bool
	sum, n, worst uint64 // hop latency over the current second
}

func (w *demoWatch) Start(workers int) error {
	w.shards = make([]watchShard, workers)
	return nil
}

func (w *demoWatch) Name() string { return "demo" }

func (w *demoWatch) Process(worker int, r *telemetry.Report) {
	if r.NHops == 0 || r.Has&telemetry.HasFlow == 0 {
		return
	}
	s := &w.shards[worker]
	hops := r.HopList()
	var lat uint64
	s.mu.Lock()
	for i := range hops {
		h := &hops[i]
		if h.Fields&telemetry.FHopLatency == 0 || h.Fields&telemetry.FNodeID == 0 {
			continue
		}
		lat += uint64(h.HopLatency)
		sw := &s.sw[h.NodeID%watchSwitches]
		if !sw.used || sw.node != h.NodeID {
			*sw = watchSwitch{node: h.NodeID, used: true}
		}
		sw.sum += uint64(h.HopLatency)
		sw.n++
		sw.worst = max(sw.worst, uint64(h.HopLatency))
	}
	f := s.flow(&r.Flow)
	f.key, f.used, f.seen, f.latency = r.Flow, true, r.RecvTime, lat
	f.npath = uint8(min(len(hops), watchPath))
	for i := 0; i < int(f.npath); i++ { // source first
		f.path[i] = hops[len(hops)-1-i].NodeID
	}
	s.mu.Unlock()
}

// flow returns k's slot: its own among the few its hash probes, else a free one, else the
// least recently seen of them.
func (s *watchShard) flow(k *telemetry.FlowKey) *watchFlow {
	i := flowSlot(k)
	oldest := &s.flows[i]
	for j := 0; j < watchProbe; j++ {
		f := &s.flows[(i+j)%watchFlows]
		if !f.used || f.key == *k {
			return f
		}
		if f.seen < oldest.seen {
			oldest = f
		}
	}
	return oldest
}

func flowSlot(k *telemetry.FlowKey) int {
	x := uint64(k.Src[12])<<24 | uint64(k.Src[13])<<16 | uint64(k.Src[14])<<8 | uint64(k.Src[15])
	x = x*0x9e3779b97f4a7c15 ^ (uint64(k.Dst[12])<<24 | uint64(k.Dst[13])<<16 | uint64(k.Dst[14])<<8 | uint64(k.Dst[15]))
	x = x*0x9e3779b97f4a7c15 ^ (uint64(k.SrcPort)<<24 | uint64(k.DstPort)<<8 | uint64(k.Proto))
	x *= 0x9e3779b97f4a7c15
	return int(x >> (64 - 12))
}

// demoScreen draws the summary: over a terminal it redraws in place, otherwise it prints one
// block per second.
type demoScreen struct {
	w         io.Writer
	tty       bool
	top       int
	lastByFmt map[string]uint64
	lastT     time.Time
	final     bool // the last screen, after the generators stopped
	kinds     [event.NumKinds]uint64
	buf       []event.Event
}

func newDemoScreen(w io.Writer, top int) *demoScreen {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &demoScreen{w: w, tty: tty, top: top, buf: make([]event.Event, 4096), lastByFmt: map[string]uint64{}, lastT: time.Now()}
}

func (d *demoScreen) draw(up time.Duration, coll *ingest.Collector, watch *demoWatch, events *event.Consumer, httpLine, source string) {
	st := coll.Status()
	now := time.Now()
	for n := events.Poll(d.buf); n > 0; n = events.Poll(d.buf) {
		for _, e := range d.buf[:n] {
			if int(e.Kind) < len(d.kinds) {
				d.kinds[e.Kind]++
			}
		}
	}
	var b strings.Builder
	if d.tty {
		b.WriteString("\033[H\033[2J")
	} else {
		b.WriteString("\n")
	}
	state := "(Ctrl-C stops)"
	if d.final {
		state = "(stopped)"
	}
	fmt.Fprintf(&b, "intake demo   up %s   http %s   %s\n", up.Round(time.Second), httpLine, state)
	// reports/s by format over the last draw
	var perFmt []string
	var total float64
	dt := now.Sub(d.lastT).Seconds()
	for _, f := range []string{"tr0.5", "tr1.0", "tr2.0", "int-md", "dta", "int-label"} {
		v := st.ReportsByFormat[f]
		if dt > 0 && v > d.lastByFmt[f] {
			r := float64(v-d.lastByFmt[f]) / dt
			total += r
			perFmt = append(perFmt, fmt.Sprintf("%s %.0f", f, r))
		}
	}
	d.lastByFmt, d.lastT = st.ReportsByFormat, now
	over := ""
	if d.final {
		over = " (mean over the run)"
	}
	fmt.Fprintf(&b, "reports/s   %-10.0f %s%s\n", total, strings.Join(perFmt, ", "), over)
	var qd uint64
	for _, v := range st.ProcessorQueueDrops {
		qd += v
	}
	fmt.Fprintf(&b, "received    %d packets, %d reports   drops: kernel %d, decode errors %d, ingest %d, queues %d\n",
		st.PacketsReceived, st.ReportsDecoded, st.KernelDrops, st.DecodeErrors.Total, st.IngestDrops.Total, qd)
	fmt.Fprintf(&b, "events      new_key %d, path_change %d, change %d, above %d, below %d\n",
		d.kinds[event.KindNewKey], d.kinds[event.KindPathChange], d.kinds[event.KindChange], d.kinds[event.KindAbove], d.kinds[event.KindBelow])

	flows, switches := watch.take(now.Add(-5 * time.Second).UnixNano())
	fmt.Fprintf(&b, "flows       %d active in the last 5 s, through %d switches\n\n", len(flows), len(switches))
	sort.Slice(flows, func(i, j int) bool { return flows[i].latency > flows[j].latency })
	fmt.Fprintf(&b, "slowest flows (end-to-end latency of the last report)\n")
	for _, f := range flows[:min(d.top, len(flows))] {
		fmt.Fprintf(&b, "  %-44s %10s   path %s\n", flowString(&f.key), nsString(f.latency), pathString(f.path[:f.npath]))
	}
	sort.Slice(switches, func(i, j int) bool { return switches[i].sum*switches[j].n > switches[j].sum*switches[i].n })
	fmt.Fprintf(&b, "\nslowest hops (hop latency by switch, last second)\n")
	for _, s := range switches[:min(d.top, len(switches))] {
		fmt.Fprintf(&b, "  switch %-8d mean %10s   max %10s   %d reports\n", s.node, nsString(s.sum/s.n), nsString(s.worst), s.n)
	}
	if source != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(source, "\n"))
	}
	io.WriteString(d.w, b.String())
}

// take returns the flows seen since `since` and the switches of the last second (merged over
// workers), and starts a new second.
func (w *demoWatch) take(since int64) ([]watchFlow, []watchSwitch) {
	flows := map[telemetry.FlowKey]watchFlow{}
	sws := map[uint32]watchSwitch{}
	for i := range w.shards {
		s := &w.shards[i]
		s.mu.Lock()
		for _, f := range s.flows {
			if f.used && f.seen >= since {
				if g, ok := flows[f.key]; !ok || f.seen > g.seen {
					flows[f.key] = f
				}
			}
		}
		for j := range s.sw {
			x := &s.sw[j]
			if !x.used || x.n == 0 {
				continue
			}
			m := sws[x.node]
			m.node, m.used, m.sum, m.n, m.worst = x.node, true, m.sum+x.sum, m.n+x.n, max(m.worst, x.worst)
			sws[x.node] = m
			x.sum, x.n, x.worst = 0, 0, 0
		}
		s.mu.Unlock()
	}
	fl := make([]watchFlow, 0, len(flows))
	for _, f := range flows {
		fl = append(fl, f)
	}
	sl := make([]watchSwitch, 0, len(sws))
	for _, s := range sws {
		sl = append(sl, s)
	}
	return fl, sl
}

func flowString(k *telemetry.FlowKey) string {
	proto := fmt.Sprint(k.Proto)
	switch k.Proto {
	case 6:
		proto = "tcp"
	case 17:
		proto = "udp"
	}
	src, dst := k.SrcAddr(), k.DstAddr()
	return fmt.Sprintf("%s:%d > %s:%d %s", src, k.SrcPort, dst, k.DstPort, proto)
}

func pathString(p []uint32) string {
	s := make([]string, len(p))
	for i, n := range p {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " > ")
}

// nsString prints nanoseconds in the unit that reads best.
func nsString(ns uint64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
