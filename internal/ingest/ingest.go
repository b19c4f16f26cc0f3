// Package ingest owns intake's receive path: the UDP sockets telemetry arrives on, the
// workers that read them, and the hand-off of every decoded report to the processors. It is
// INTCollector's fast path (§III: parse and filter at line rate, nothing per packet but the
// work), with the shape of akvorado's inlet and goflow2's receiver (docs/design.md, "Style"):
//
//   - per listener, N UDP sockets bound to one port with SO_REUSEPORT (the kernel spreads
//     datagrams over them by flow hash), each read by its own goroutine with recvmmsg into
//     buffers allocated at Start and reused for every batch;
//   - each worker owns a wire.Reader and a telemetry.Report, decodes in place and calls the
//     processors in the same goroutine: nothing is allocated, locked or queued per packet.
//     That dispatch is the exported Dispatcher (worker.go), which the socket worker, the
//     AF_XDP worker, RunCapture and collector's BenchmarkPipeline all run;
//   - everything that moves is counted: datagrams and bytes per listener, reports per format,
//     decode errors per reason, datagrams ingest drops per reason, the kernel's own socket
//     drops (SO_RXQ_OVFL, SO_MEMINFO at Stop), processor queue drops;
//   - the same worker code runs over a capture file at full speed (Receiver.RunCapture).
//
// A Receiver is inert after New, receives between Start and Stop, and can be started again;
// its counters are cumulative over its life. It knows the processors only as the small
// interfaces of processor.go: their lifecycles are the caller's (package collector starts
// them before the Receiver and stops them after it).
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/buildinfo"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// listener is one configured port and its workers.
type listener struct {
	idx     int
	cfg     Listener
	in      wire.Input
	dec     *wire.Decoder
	workers []*worker

	// Set by Start, read by Status.
	mu            sync.Mutex
	boundAddr     string
	rcvbufGranted int
	spread        string // as ListenerStatus.Spread

	foreign atomic.Uint64 // foreign sockets found on the port while running

	x    xdpState   // mode xdp: the program (under mu)
	sink *sinkState // mode sink: the sink program (under mu); nil otherwise
}

// Deps are what a Receiver works with besides its configuration.
type Deps struct {
	// Metrics is where its series go (a fresh registry when nil).
	Metrics *metrics.Registry
	// Processors receive every decoded report, in this order.
	Processors []Processor
	// Logger (slog.Default() when nil).
	Logger *slog.Logger
	// Kernel is the state the listeners' XDP programs work on beside parsing, each owned
	// (opened at its Start) by a processor: read at the Receiver's Start.
	Kernel KernelState
	// FeedProcessors are the processors of the feeds named (Config.Feeds) that hand their
	// reports to only some: a feed not named here hands them to Processors.
	FeedProcessors map[string][]Processor
}

// KernelState gives the XDP programs' state, each function nil when off and returning nil
// while the state is not open: DTA, the stores the programs of the listeners with format
// dta write (dta.kernel); Detect, the state the programs of the listeners with format report
// detect with (detect.kernel); FlowCache, the flow cache those programs keep
// (flowcache.kernel).
type KernelState struct {
	DTA       func() *xdp.DTAStores
	Detect    func() *xdp.DetectState
	FlowCache func() *xdp.FlowCacheState
}

// Receiver receives, decodes and dispatches telemetry for every configured listener.
type Receiver struct {
	cfg       Config
	reg       *metrics.Registry
	log       *slog.Logger
	procs     []Processor
	listeners []*listener
	workers   []*worker // all workers, indexed by id

	mu       sync.Mutex // serializes Start, Stop and RunCapture
	running  bool
	stopping atomic.Bool
	wg       sync.WaitGroup
	sampler  chan struct{}

	created time.Time
	started atomic.Int64 // Unix ns of the last Start, 0 when stopped

	rates rateState
	ports portState

	kernel KernelState
}

// New builds a Receiver from a configuration (defaults are filled in, then it is
// validated). It registers its metrics and opens nothing: see Start.
func New(cfg Config, deps Deps) (*Receiver, error) {
	cfg.Listeners = append([]Listener(nil), cfg.Listeners...)
	cfg.Sinks = append([]Sink(nil), cfg.Sinks...)
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reg, log, procs := deps.Metrics, deps.Logger, deps.Processors
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Receiver{cfg: cfg, reg: reg, log: log.With("component", "ingest"), procs: procs, kernel: deps.Kernel, created: time.Now(),
		ports: portState{seen: map[uint64]bool{}, lastLog: map[string]time.Time{}}}
	for i, lc := range cfg.Listeners {
		in, _ := wire.ParseInput(lc.Format)
		dec, err := wire.NewDecoder(cfg.DecoderFor(i))
		if err != nil {
			return nil, fmt.Errorf("listeners[%d].decoder: %w", i, err)
		}
		l := &listener{idx: i, cfg: lc, in: in, dec: dec}
		coalesce := DefaultCoalesce
		if lc.Coalesce != nil {
			coalesce = *lc.Coalesce
		}
		prefixes, _ := ParseAllow(lc.Allow) // validated
		allow := newAllowList(prefixes)
		for j := 0; j < lc.Sockets; j++ {
			w := &worker{l: l, coalesce: coalesce, allow: allow, wlog: workerLog{log: c.log}}
			w.init(len(c.workers), dec, in, procs)
			l.workers = append(l.workers, w)
			c.workers = append(c.workers, w)
		}
		c.listeners = append(c.listeners, l)
	}
	for i := range cfg.Sinks {
		s := cfg.Sinks[i]
		dec, err := wire.NewDecoder(s.decoder(cfg.Decoder))
		if err != nil {
			return nil, fmt.Errorf("sinks[%d]: %w", i, err)
		}
		l := &listener{idx: len(c.listeners), cfg: s.listener(), in: wire.InputINTMD, dec: dec, sink: &sinkState{cfg: s}}
		w := &worker{l: l, wlog: workerLog{log: c.log}}
		w.init(len(c.workers), dec, wire.InputINTMD, procs)
		w.sinkHop = newSinkHop(&s)
		l.workers = append(l.workers, w)
		c.workers = append(c.workers, w)
		c.listeners = append(c.listeners, l)
	}
	for _, name := range cfg.Feeds {
		dec, _ := wire.NewDecoder(cfg.Decoder) // validated with the listeners'; a feed decodes nothing
		l := &listener{idx: len(c.listeners), cfg: feedListener(name), in: wire.InputReport, dec: dec}
		w := &worker{l: l, wlog: workerLog{log: c.log}}
		fp, ok := deps.FeedProcessors[name]
		if !ok {
			fp = procs
		}
		w.init(len(c.workers), dec, wire.InputReport, fp)
		l.workers = append(l.workers, w)
		c.workers = append(c.workers, w)
		c.listeners = append(c.listeners, l)
	}
	c.register()
	return c, nil
}

// SetDrainOnly makes the workers count datagrams and bytes without decoding them or calling
// processors: the same sockets and recvmmsg loop as the collector, so its rate is the
// ceiling the collector is measured against (`intake bench ingest`). Call before Start.
func (rcv *Receiver) SetDrainOnly(drain bool) {
	for _, w := range rcv.workers {
		w.drain = drain
	}
}

// Registry returns the registry the Receiver's metrics are on.
func (rcv *Receiver) Registry() *metrics.Registry { return rcv.reg }

// Workers returns the number of workers, the bound on the worker argument of Process.
func (rcv *Receiver) Workers() int { return len(rcv.workers) }

// Processors returns the processors in call order.
func (rcv *Receiver) Processors() []Processor { return rcv.procs }

// Start opens every listener's sockets and starts their workers. On error nothing is left
// open. The processors must be started already.
func (rcv *Receiver) Start(context.Context) (err error) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.running {
		return errors.New("ingest: already running")
	}
	defer func() {
		if err != nil {
			for _, w := range rcv.workers {
				if w.sock != nil {
					w.sock.close()
					w.sock = nil
				}
			}
			for _, l := range rcv.listeners {
				l.closeXDP()
				l.closeSink()
			}
		}
	}()
	for _, l := range rcv.listeners {
		if err := rcv.open(l); err != nil {
			return fmt.Errorf("listener %s: %w", l.cfg.Name, err)
		}
		rcv.log.Debug("listening", "listener", l.cfg.Name, "format", l.cfg.Format, "address", l.boundAddr, "sockets", len(l.workers))
	}
	fs, err := rcv.ForeignSockets()
	if err != nil {
		return fmt.Errorf("checking the ports for other sockets: %w", err)
	}
	if len(fs) > 0 {
		return foreignError(fs)
	}
	for _, l := range rcv.listeners {
		if len(l.cfg.Allow) == 0 {
			rcv.log.Info("accepting datagrams from every source (listeners[].allow is empty)", "listener", l.cfg.Name, "address", l.boundAddr)
		} else {
			rcv.log.Info("accepting datagrams only from the allowed sources", "listener", l.cfg.Name, "allow", strings.Join(l.cfg.Allow, ","))
		}
	}
	rcv.stopping.Store(false)
	rcv.running = true
	rcv.started.Store(time.Now().UnixNano())
	for _, w := range rcv.workers {
		if w.l.cfg.Mode == ModeFeed {
			continue
		}
		rcv.wg.Add(1)
		go func() {
			defer rcv.wg.Done()
			switch {
			case w.xsk != nil:
				w.runXDP(&rcv.stopping)
			case w.l.sink != nil:
				w.runSink(&rcv.stopping)
			default:
				w.run(&rcv.stopping)
			}
		}()
	}
	rcv.sampler = make(chan struct{})
	rcv.wg.Add(1)
	go rcv.sample(rcv.sampler)
	return nil
}

// open binds the listener's sockets. With port 0 the first socket's port, picked by the
// kernel, is the port of the others.
func (rcv *Receiver) open(l *listener) error {
	if l.cfg.Mode == ModeXDP {
		if err := rcv.openXDP(l); err != nil {
			return xdpError(l, err)
		}
		return nil
	}
	if l.sink != nil {
		return rcv.openSink(l)
	}
	if l.cfg.Mode == ModeFeed {
		return nil // its owner drives it (feed.go)
	}
	port := l.cfg.Port
	for i, w := range l.workers {
		network, addr := bindSpec(l.cfg.Address, port)
		s, err := openSocket(network, addr, l.cfg.RcvBuf, l.cfg.Batch, l.cfg.MaxDatagram, *l.cfg.GRO, w.allow != nil)
		// Port 0: Linux picks the port without counting another SO_REUSEPORT socket of the
		// same user on it as a use (udp_lib_get_port), so the port it gives may be shared
		// already. Pick again rather than share it (Start would refuse it).
		for try := 0; err == nil && port == 0 && try < 16 && portTaken(s); try++ {
			s.close()
			s, err = openSocket(network, addr, l.cfg.RcvBuf, l.cfg.Batch, l.cfg.MaxDatagram, *l.cfg.GRO, w.allow != nil)
		}
		if err != nil {
			return err
		}
		w.sock = s
		if i == 0 {
			port = s.local.Port
			l.mu.Lock()
			l.boundAddr = s.local.String()
			l.rcvbufGranted = s.rcvbufGranted
			l.mu.Unlock()
		}
	}
	spread := SpreadSource
	if l.cfg.spreads() {
		// Attached once every socket is in the reuseport group: the program's answer is an
		// index into the group, which is the workers' order.
		prog, err := spreadProgram(l.in, rcv.cfg.DecoderFor(l.idx), len(l.workers))
		if err == nil {
			err = l.workers[0].sock.attachSpread(prog)
		}
		if err != nil {
			spread = SpreadSource + ": " + err.Error()
			rcv.log.Warn("datagrams are spread by their source, not by flow: one exporter uses one worker",
				"listener", l.cfg.Name, "error", err)
		} else {
			spread = SpreadFlow
		}
	}
	l.mu.Lock()
	l.spread = spread
	l.mu.Unlock()
	return nil
}

// Stop makes every worker drain what its socket holds and return, and closes the sockets.
// It returns once no worker runs: a worker blocked in its read is woken at once, and its
// drain is bounded, so the context's deadline is not needed to bound it.
func (rcv *Receiver) Stop(context.Context) error {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if !rcv.running {
		return nil
	}
	rcv.stopping.Store(true)
	for _, w := range rcv.workers {
		switch {
		case w.xsk != nil:
			w.xsk.Wake()
		case w.l.sink != nil:
			if p := w.l.sink.prog; p != nil {
				p.Wake()
			}
		case w.l.cfg.Mode == ModeFeed:
		default:
			w.sock.wake()
		}
	}
	close(rcv.sampler)
	rcv.wg.Wait()
	for _, w := range rcv.workers {
		switch {
		case w.xsk != nil:
			w.finishXDP()
		case w.l.sink != nil:
			w.publish()
		case w.l.cfg.Mode == ModeFeed: // its owner publishes (Feed.EndBatch)
		default:
			w.finish()
		}
	}
	for _, l := range rcv.listeners {
		l.closeXDP()
		l.closeSink()
	}
	rcv.running = false
	rcv.started.Store(0)
	return nil
}

// Running reports whether the Receiver is between Start and Stop.
func (rcv *Receiver) Running() bool {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return rcv.running
}

// ListenerAddr returns the address listener i is bound to ("[::]:32766"), empty when the
// Receiver is not running.
func (rcv *Receiver) ListenerAddr(i int) string {
	l := rcv.listeners[i]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.boundAddr
}

// sum adds counter slot i over workers.
func sum(ws []*worker, i int) uint64 {
	var n uint64
	for _, w := range ws {
		n += w.count(i)
	}
	return n
}

// register puts the Receiver's series on the registry. The functions read the workers'
// published counters at scrape time.
func (rcv *Receiver) register() {
	r := rcv.reg
	pk := r.Counter("intake_packets_received_total", "Datagrams received (captured frames, offline), by listener and input format.", "listener", "format")
	by := r.Counter("intake_bytes_received_total", "Bytes of datagram payload received, by listener and input format.", "listener", "format")
	rep := r.Counter("intake_reports_decoded_total", "Reports decoded, by listener and report format.", "listener", "format")
	de := r.Counter("intake_decode_errors_total", "Reports that failed to decode, by listener and reason.", "listener", "reason")
	ie := r.Counter("intake_inner_errors_total", "Reports decoded whose inner data packet did not (kept with their header metadata), by listener and reason.", "listener", "reason")
	dr := r.Counter("intake_ingest_drops_total", "Datagrams or frames ingest discarded without decoding, by listener and reason.", "listener", "reason")
	fo := r.Counter("intake_listener_foreign_sockets_total", "Sockets not intake's found bound to a listener's port while it ran (checked every 10 s): they take a share of the datagrams.", "listener")
	kd := r.Counter("intake_kernel_drops_total", "Datagrams the kernel dropped on the listener's sockets (receive buffer full), from SO_RXQ_OVFL.", "listener")
	rq := r.Gauge("intake_socket_rcvbuf_requested_bytes", "Socket receive buffer requested per socket (config rcvbuf).", "listener")
	rg := r.Gauge("intake_socket_rcvbuf_granted_bytes", "Socket receive buffer granted per socket, as getsockopt(SO_RCVBUF) reports it (Linux doubles the request for bookkeeping).", "listener")
	rd := r.Counter("intake_socket_reads_total", "recvmmsg calls that returned datagrams, by listener: received datagrams over it is the mean batch per read.", "listener")
	gr := r.Counter("intake_gro_datagrams_total", "Datagrams that arrived coalesced in GRO super-datagrams (UDP_GRO), after splitting; included in packets received.", "listener")
	xf := r.Counter("intake_xdp_frames_total", "Frames the XDP program of an xdp listener handled, by outcome: redirected to an AF_XDP socket, or passed to the kernel (pass_*: another port or protocol, a fragment, malformed headers, a queue without a socket, IPv6 extension headers).", "listener", "outcome")
	sp := r.Counter("intake_sink_packets_total", "Packets the INT sink program of a sink handled, by outcome: stripped (INT taken out, metadata lifted, packet passed on), ring_full (INT taken out and passed, its metadata lost: the ring was full), or passed untouched (pass_*: not marked, a fragment, IPv6 extension headers, malformed headers, INT that does not parse, too long, a helper error).", "listener", "outcome")
	rt := r.Counter("intake_sink_report_to_errors_total", "Reports a sink's report_to could not encode or send (UDP send errors; what the network loses is not seen).", "listener")
	so := r.Gauge("intake_listener_sockets", "SO_REUSEPORT sockets (and workers) per listener.", "listener")
	for _, l := range rcv.listeners {
		l := l
		name, format := l.cfg.Name, l.cfg.Format
		pk.Func(func() float64 { return float64(sum(l.workers, cPackets)) }, name, format)
		by.Func(func() float64 { return float64(sum(l.workers, cBytes)) }, name, format)
		rd.Func(func() float64 { return float64(sum(l.workers, cReads)) }, name)
		gr.Func(func() float64 { return float64(sum(l.workers, cGRO)) }, name)
		for f := telemetry.Format(1); int(f) < numFormats; f++ {
			if !formatOn(l.in, f) {
				continue
			}
			slot := cFormat0 + int(f)
			rep.Func(func() float64 { return float64(sum(l.workers, slot)) }, name, f.String())
		}
		for _, reason := range wire.Reasons() {
			slot := cReason0 + int(reason)
			de.Func(func() float64 { return float64(sum(l.workers, slot)) }, name, reason.String())
		}
		for _, reason := range wire.Reasons() {
			slot := cInner0 + int(reason)
			ie.Func(func() float64 { return float64(sum(l.workers, slot)) }, name, reason.String())
		}
		for _, reason := range DropReasons() {
			slot := cDrop0 + int(reason)
			dr.Func(func() float64 { return float64(sum(l.workers, slot)) }, name, reason.String())
		}
		kd.Func(func() float64 { return float64(sum(l.workers, cKernelDrops)) }, name)
		fo.Func(func() float64 { return float64(l.foreign.Load()) }, name)
		rq.With(name).SetInt(int64(l.cfg.RcvBuf))
		rg.Func(func() float64 {
			l.mu.Lock()
			defer l.mu.Unlock()
			return float64(l.rcvbufGranted)
		}, name)
		so.With(name).SetInt(int64(len(l.workers)))
		if h := l.workers[0].sinkHop; l.sink != nil && h != nil && len(h.to) > 0 {
			rt.Func(func() float64 { return float64(h.sendErr.Load()) }, name)
		}
		if l.sink != nil {
			for o := range xdp.NumSinkOutcomes {
				sp.Func(func() float64 { return float64(l.sinkCounts()[o.String()]) }, name, o.String())
			}
		}
		if l.cfg.Mode == ModeXDP {
			for o := range xdp.NumOutcomes {
				xf.Func(func() float64 { return float64(l.xdpCounts()[o.String()]) }, name, o.String())
			}
		}
	}
	qd := r.Counter("intake_processor_queue_drops_total", "Reports a processor dropped because its queue was full.", "processor")
	for _, p := range rcv.procs {
		if q, ok := p.(QueueDropper); ok {
			qd.Func(func() float64 { return float64(q.QueueDrops()) }, p.Name())
		}
	}
	r.Gauge("intake_uptime_seconds", "Seconds since the collector started receiving (0 when stopped).").Func(func() float64 {
		return rcv.uptime().Seconds()
	})
	r.Gauge("intake_workers", "Receive workers over all listeners.").Func(func() float64 { return float64(len(rcv.workers)) })
	// Deprecated, kept for the dashboards and alerts that name them: the registry's Go and
	// process collectors serve the same as go_goroutines and process_start_time_seconds.
	r.Gauge("intake_goroutines", "Goroutines of the process. Deprecated: use go_goroutines.").Func(func() float64 { return float64(runtime.NumGoroutine()) })
	r.Gauge("intake_process_start_time_seconds", "Unix time the process created its collector. Deprecated: use process_start_time_seconds.").Func(func() float64 {
		return float64(rcv.created.UnixNano()) / 1e9
	})
	version, revision := buildLabels()
	r.Gauge("intake_build_info", "Constant 1, labelled with the Go version, intake's version and its VCS revision.", "go_version", "version", "revision").
		With(runtime.Version(), version, revision).Set(1)
}

// buildLabels returns intake_build_info's version and revision: the main module's version
// ("(devel)" for a build from a checkout) and the commit, suffixed "-modified" for a dirty
// work tree; "unknown" for what the build did not record.
func buildLabels() (version, revision string) {
	version, revision = "unknown", "unknown"
	if i, ok := buildinfo.Read(); ok {
		if i.Version != "" {
			version = i.Version
		}
		if i.Revision != "" {
			revision = i.Revision
			if i.Modified {
				revision += "-modified"
			}
		}
	}
	return version, revision
}

// formatOn says which report formats a listener input can produce, so that /metrics lists
// only series that can move.
func formatOn(in wire.Input, f telemetry.Format) bool {
	switch in {
	case wire.InputReport:
		return f == telemetry.FormatTR05 || f == telemetry.FormatTR10 || f == telemetry.FormatTR20
	case wire.InputINTMD:
		return f == telemetry.FormatINTMD
	case wire.InputDTA:
		return f == telemetry.FormatDTA
	case wire.InputLabel:
		return f == telemetry.FormatLabel
	}
	return false
}

func (rcv *Receiver) uptime() time.Duration {
	s := rcv.started.Load()
	if s == 0 {
		return 0
	}
	return time.Duration(time.Now().UnixNano() - s)
}

// Name is the Receiver's component name.
func (rcv *Receiver) Name() string { return "ingest" }
