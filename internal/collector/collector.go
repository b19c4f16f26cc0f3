// Package collector is intake's composition root: it builds the pipeline that `intake
// serve`, `intake demo`, `intake bench ingest` and the end-to-end tests run from the
// aggregate configuration (package config), and owns its lifecycle (docs/design.md, "The
// data flow"):
//
//	sinks (Kafka, Redis, InfluxDB flow records), the export pipeline
//	→ processors (detect, dta, flowcache, label), in the order ingest calls them
//	→ the receive path (ingest) → the HTTP API, with the web console (package console) at /
//
// Every component is inert after New and has Start(ctx) and Stop(ctx); the Collector starts
// them in that order and stops them in reverse, so that nothing is offered to a stopped
// sink and no report reaches a stopped processor. Components register their own metrics and
// HTTP endpoints; the Collector only wires them together.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/console"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/group"
	"github.com/intake-int/intake/internal/history"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/record"
)

// Component is what the Collector starts and stops.
type Component interface {
	Name() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Options are the Collector's settings beside the configuration file.
type Options struct {
	// NoHTTP leaves the API server out even when http.address is set (a capture run).
	NoHTTP bool
	// Logger (slog.Default() when nil).
	Logger *slog.Logger
	// Sinks are components beside the sinks the configuration turns on (tests): each is
	// offered what it takes, as those are (export.EventSink, RecordSink, LatestSink,
	// HistogramSink, ReportSink).
	Sinks []Component
}

// Collector is the whole pipeline. Its fields are the components, for the commands and
// tests that read their state (nil when turned off in the configuration).
type Collector struct {
	Config   config.Config
	Metrics  *metrics.Registry
	Bus      *event.Bus
	Receiver *ingest.Receiver
	API      *api.Server

	Detector   *detect.Detector
	Export     *export.Pipeline
	FlowCache  *flowcache.FlowCache
	Translator *dta.Translator
	Label      *label.Controller
	Redis      *redis.Sink
	Kafka      *kafka.Sink
	History    *history.History
	// Inlet and GroupProcessor are the consumer group's roles (group.role), nil outside one.
	Inlet          *group.Inlet
	GroupProcessor *group.Processor

	records *influx.Records
	sinkIn  sinkInputs       // the sinks, sorted by what they take (buildSinks)
	kdta    *kernelDTA       // dta.kernel
	kdet    *kernelDetect    // detect.kernel
	kfc     *kernelFlowCache // flowcache.kernel

	groupMembers *group.Members // the group's assignment, for the router and status

	log   *slog.Logger
	comps []Component // in start order, without the receiver and the API
	// sources feed the receiver (a group processor): started after it, stopped before.
	sources []Component
	mu      sync.Mutex
	running bool
}

// New builds the pipeline of cfg (defaults filled in, validated). It opens nothing.
func New(cfg config.Config, opts Options) (*Collector, error) {
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	inlet := cfg.Group.Role == group.RoleInlet
	if inlet {
		inletOnly(&cfg)
	}
	if cfg.Group.Role == group.RoleProcessor {
		a, err := advertise(&cfg)
		if err != nil {
			return nil, err
		}
		cfg.Group.Advertise = a
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Collector{Config: cfg, Metrics: metrics.NewRegistry(), Bus: &event.Bus{}, log: log}
	c.Bus.RegisterMetrics(c.Metrics)
	in := cfg.Ingest()
	workers := in.Workers()
	if cfg.HTTP.Address != "" && !opts.NoHTTP {
		srv, err := api.NewFromConfig(cfg.HTTP, api.Deps{Metrics: c.Metrics, Logger: log.With("component", "http")})
		if err != nil {
			return nil, err
		}
		c.API = srv
	}
	var procs []ingest.Processor
	if err := c.buildSinks(workers, opts.Sinks, &procs); err != nil {
		return nil, err
	}
	if inlet {
		if err := c.buildInlet(workers, &procs); err != nil {
			return nil, err
		}
	}
	// The kernel's state: each processor opens its own at Start and closes it at Stop; the
	// receiver, which starts after them and stops before, hands it to the XDP programs.
	var err error
	if c.kdta, err = c.kernelDTA(); err != nil {
		return nil, err
	}
	if c.kdet, err = c.kernelDetect(); err != nil {
		return nil, err
	}
	if c.kfc, err = c.kernelFlowCache(); err != nil {
		return nil, err
	}
	if err := c.buildDetect(workers, &procs); err != nil {
		return nil, err
	}
	if cfg.Group.Role == group.RoleProcessor && cfg.DTA.Enabled {
		c.comps = append(c.comps, dtaReset{dir: cfg.DTA.DataDir, log: log})
	}
	c.buildDTA(workers, &procs)
	c.buildFlowCache(workers, &procs)
	c.buildLabel(&procs)
	c.buildHistory()
	recv, err := ingest.New(in, ingest.Deps{Metrics: c.Metrics, Processors: procs, Logger: log,
		Kernel:         ingest.KernelState{DTA: c.kdta.stores, Detect: c.kdet.state, FlowCache: c.kfc.state},
		FeedProcessors: c.groupFeedProcessors(procs)})
	if err != nil {
		return nil, err
	}
	c.Receiver = recv
	if cfg.Group.Role == group.RoleProcessor {
		if err := c.buildGroupProcessor(); err != nil {
			return nil, err
		}
	}
	if c.API != nil {
		c.API.HandleFunc("GET /api/v1/status", c.statusHandler())
		for _, x := range procs {
			if r, ok := x.(api.Registrar); ok {
				r.RegisterAPI(c.API)
			}
		}
		if c.Detector != nil {
			c.API.HandleFunc("GET /api/v1/detect/status", c.handleDetectStatus)
		}
		if c.History != nil {
			c.History.RegisterAPI(c.API)
		}
		console.Register(c.API)
		build := c.buildCluster
		if cfg.Group.Enabled() {
			build = c.buildGroupRouter
		}
		if err := build(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// buildCluster routes the API's queries across the cluster's members (cluster.Router) when
// the collector is one; otherwise the cluster's status says it is not.
func (c *Collector) buildCluster() error {
	cfg := c.Config.Cluster
	if !cfg.Enabled() {
		c.API.HandleFunc("GET "+cluster.StatusPath, func(w http.ResponseWriter, r *http.Request) {
			api.Error(w, http.StatusNotFound, "this collector is not in a cluster (cluster.members is empty)")
		})
		return nil
	}
	keyLen := c.Config.Decoder.DTA.KeyLen
	rt, err := cluster.NewRouter(cfg, cluster.Deps{
		DTAKey:      func(s string) ([]byte, error) { return dta.ParseKey(s, keyLen) },
		EventsLimit: detect.EventsLimit,
		Logger:      c.log.With("component", "cluster"),
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.API.Route(rt.Wrap)
	return nil
}

func (c *Collector) buildDetect(workers int, procs *[]ingest.Processor) error {
	cfg := c.Config.Detect
	if !cfg.Enabled {
		return nil
	}
	dd := detect.Deps{Bus: c.Bus, Workers: workers, Metrics: c.Metrics}
	if c.kdet != nil {
		dd.Kernel = c.kdet
	}
	d := detect.New(cfg, dd)
	expireTick := time.Duration(0)
	if cfg.Expire > 0 {
		expireTick = max(cfg.Expire/2, 10*time.Millisecond)
	}
	pipe, err := export.New(c.Config.Export.Config, export.Deps{Bus: c.Bus, Ring: cfg.Ring, Source: d, Metrics: c.Metrics,
		Values: func() uint64 { return d.Stats().Values }, ExpireTick: expireTick, Sinks: c.sinkIn.events})
	if err != nil {
		return err
	}
	c.Detector, c.Export = d, pipe
	c.comps = append(c.comps, pipe, d)
	*procs = append(*procs, d)
	return nil
}

// sinkInputs are the sinks sorted by the inputs they take (export's interfaces).
type sinkInputs struct {
	events     []export.EventSink
	records    []func(*record.Record)
	latest     export.LatestSink
	histograms export.HistogramSink
}

// buildSinks builds the sinks the configuration turns on, then extra: with the detector
// (whose export pipeline offers events and periodic values) the Prometheus gauges (with
// HTTP: they are for /metrics), InfluxDB and remote write; Kafka; with the flow cache
// Redis and the InfluxDB flow records. In one loop it sorts them by what they take, as
// ingest sorts its processors:
// a reports processor goes to procs, the rest to c.sinkIn, which buildDetect (events) and
// buildFlowCache (records, latest values, histograms) hand on. They are the first
// components: each starts before, and stops after, everything that offers to it (the
// export pipeline, the flow cache, the workers).
func (c *Collector) buildSinks(workers int, extra []Component, procs *[]ingest.Processor) error {
	ex := &c.Config.Export
	sd := export.SinkDeps{Metrics: c.Metrics, Logger: c.log.With("component", "export")}
	var sinks []Component
	if c.Config.Detect.Enabled { // the pipeline's own sinks, in the order of its status
		if ex.Prometheus.Gauges && c.API != nil {
			sinks = append(sinks, prom.NewGauges(c.Metrics, ex.Prometheus.SeriesLimit, c.Metrics))
		}
		if ex.InfluxDB.URL != "" {
			sinks = append(sinks, influx.New(ex.InfluxDB, ex.Batching(), sd))
		}
		if ex.Prometheus.RemoteWrite != "" {
			sinks = append(sinks, prom.NewRemoteWrite(ex.Prometheus, ex.Batching(), sd))
		}
	}
	if ex.Kafka.Enabled() {
		k, err := kafka.New(ex.Kafka, kafka.Deps{Workers: workers, Metrics: sd.Metrics, Logger: sd.Logger,
			Member: c.Config.Cluster.Self})
		if err != nil {
			return err
		}
		c.Kafka = k
		sinks = append(sinks, k)
	}
	if c.Config.FlowCache.Enabled && ex.Redis.Enabled() {
		c.Redis = redis.New(ex.Redis, ex.Retry(), sd)
		sinks = append(sinks, c.Redis)
	}
	if c.Config.FlowCache.Enabled && ex.InfluxDB.URL != "" {
		c.records = influx.NewRecords(ex.InfluxDB, ex.Batching(), sd)
		sinks = append(sinks, c.records)
	}
	in := &c.sinkIn
	for _, s := range append(sinks, extra...) {
		c.comps = append(c.comps, s)
		if x, ok := s.(export.EventSink); ok {
			in.events = append(in.events, x)
		}
		if x, ok := s.(export.RecordSink); ok {
			in.records = append(in.records, x.OfferRecord)
		}
		if x, ok := s.(export.LatestSink); ok && x.LatestPeriod() > 0 {
			if in.latest != nil { // flowcache.Deps has room for one
				return fmt.Errorf("sinks %s and %s both take the flow cache's latest values", in.latest.(Component).Name(), s.Name())
			}
			in.latest = x
		}
		if x, ok := s.(export.HistogramSink); ok && x.HistogramPeriod() > 0 {
			if in.histograms != nil {
				return fmt.Errorf("sinks %s and %s both take the flow cache's histograms", in.histograms.(Component).Name(), s.Name())
			}
			in.histograms = x
		}
		if x, ok := s.(export.ReportSink); ok {
			if p := x.Reports(); p != nil {
				*procs = append(*procs, p)
			}
		}
	}
	return nil
}

func (c *Collector) buildDTA(workers int, procs *[]ingest.Processor) {
	if !c.Config.DTA.Enabled {
		return
	}
	td := dta.Deps{Workers: workers, Bus: c.Bus, Metrics: c.Metrics, Logger: c.log, KeyLen: c.Config.Decoder.DTA.KeyLen}
	if c.kdta != nil {
		td.Kernel = c.kdta
	}
	t := dta.NewTranslator(c.Config.DTA, td)
	c.Translator = t
	c.comps = append(c.comps, t)
	*procs = append(*procs, t)
}

// buildFlowCache builds the flow cache, which pushes its evicted records, latest values and
// histograms to the sinks that take them (buildSinks).
func (c *Collector) buildFlowCache(workers int, procs *[]ingest.Processor) {
	cfg := c.Config.FlowCache
	if !cfg.Enabled {
		return
	}
	in := c.sinkIn
	fd := flowcache.Deps{Workers: workers, Metrics: c.Metrics, Bus: c.Bus, Records: in.records}
	if c.kfc != nil {
		fd.Kernel = c.kfc
	}
	if in.latest != nil {
		fd.Latest, fd.LatestPeriod = in.latest.OfferLatest, in.latest.LatestPeriod()
	}
	if in.histograms != nil {
		fd.Histograms, fd.HistogramPeriod = in.histograms.OfferHistogram, in.histograms.HistogramPeriod()
	}
	if r := c.Redis; r != nil { // the stats endpoint's "redis"
		fd.SinkStatus = func() any { cs := r.Counts(); return &cs }
	}
	fc := flowcache.New(cfg, fd)
	c.FlowCache = fc
	c.comps = append(c.comps, fc)
	*procs = append(*procs, fc)
}

func (c *Collector) buildLabel(procs *[]ingest.Processor) {
	cfg := c.Config.Label
	if !cfg.Enabled {
		return
	}
	var setter label.ShiftSetter
	if cfg.Control != "" {
		// A component of its own, started before the controller that feeds it.
		hc := label.NewHTTPControl(cfg.Control, label.ControlDeps{Metrics: c.Metrics, Logger: c.log.With("component", "label")})
		c.comps = append(c.comps, hc)
		setter = hc
	}
	l := label.New(cfg, label.Deps{Setter: setter, Metrics: c.Metrics})
	c.Label = l
	c.comps = append(c.comps, l)
	*procs = append(*procs, l)
}

// buildHistory builds the history over the flow cache and the detector (started after
// them: it samples what they hold). With both off it has nothing to sample and is left out.
func (c *Collector) buildHistory() {
	cfg := c.Config.History
	if !cfg.Enabled || (c.FlowCache == nil && c.Detector == nil) {
		return
	}
	hd := history.Deps{Metrics: c.Metrics, Logger: c.log.With("component", "history")}
	if fc := c.FlowCache; fc != nil {
		hd.Flows, hd.SwitchReports = fc.WalkUpdated, fc.Histograms().SwitchSamples
	}
	if d := c.Detector; d != nil {
		hd.Switches = func(since int64, fn func(*history.SwitchState)) {
			d.Switches(since, func(s *detect.SwitchSample) { fn((*history.SwitchState)(s)) })
		}
	}
	c.History = history.New(cfg, hd)
	c.comps = append(c.comps, c.History)
}

// Start starts the components, the receive path and the HTTP API, in that order. On error
// what was started is stopped again.
func (c *Collector) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return errors.New("collector: already running")
	}
	all := c.all()
	for i, x := range all {
		if err := x.Start(ctx); err != nil {
			err = fmt.Errorf("%s: %w", x.Name(), err)
			stopAll(context.Background(), all[:i])
			return err
		}
		c.log.Debug("started", "component", x.Name())
	}
	c.running = true
	return nil
}

// Stop stops everything in reverse start order, each within ctx's deadline, and returns
// every error joined.
func (c *Collector) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	c.running = false
	return stopAll(ctx, c.all())
}

// all is every component in start order.
func (c *Collector) all() []Component {
	all := append(append(append([]Component(nil), c.comps...), c.Receiver), c.sources...)
	if c.API != nil {
		all = append(all, c.API)
	}
	return all
}

func stopAll(ctx context.Context, cs []Component) error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cs[i].Name(), err))
		}
	}
	return errors.Join(errs...)
}

// RunCapture runs a capture through the pipeline at full speed (ingest.Receiver.RunCapture):
// the components are started before and stopped after; the receive path's sockets and the
// API are not opened.
func (c *Collector) RunCapture(ctx context.Context, rd *pcap.Reader) (ingest.CaptureSummary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return ingest.CaptureSummary{}, errors.New("collector: RunCapture while running")
	}
	for i, x := range c.comps {
		if err := x.Start(ctx); err != nil {
			stopAll(context.Background(), c.comps[:i])
			return ingest.CaptureSummary{}, fmt.Errorf("%s: %w", x.Name(), err)
		}
	}
	sum, err := c.Receiver.RunCapture(rd)
	return sum, errors.Join(err, stopAll(ctx, c.comps))
}

// Status is the receive path's status (GET /api/v1/status without the drops).
func (c *Collector) Status() ingest.Status { return c.Receiver.Status() }

// Rejections counts reports that decoded but a processor refused, by "processor reason":
// DTA reports the stores cannot take (a redundancy above max_redundancy, a list id out of
// range, ...; dta.BadReasons). Every reason is listed, zeros included.
func (c *Collector) Rejections() map[string]uint64 {
	m := map[string]uint64{}
	if t := c.Translator; t != nil {
		for i, name := range dta.BadReasons {
			m["dta "+name] = t.Bad(i)
		}
	}
	return m
}

// DetectStatus is GET /api/v1/detect/status: the detector's counters (values seen: M_all)
// and the export pipeline's (values exported by source, the reduction factor, every sink's
// sent, retried and dropped points).
type DetectStatus struct {
	Detect detect.Stats  `json:"detect"`
	Export export.Status `json:"export"`
}

// DetectStatus returns the counters now (zero when detection is off).
func (c *Collector) DetectStatus() DetectStatus {
	if c.Detector == nil {
		return DetectStatus{}
	}
	return DetectStatus{Detect: c.Detector.Stats(), Export: c.Export.Status()}
}

func (c *Collector) handleDetectStatus(w http.ResponseWriter, r *http.Request) {
	if api.CheckParams(w, r) {
		api.JSON(w, http.StatusOK, c.DetectStatus())
	}
}

// ScratchDTA points the DTA stores of a run on the defaults (demo, bench) at a new temporary
// directory, so that they neither need nor overwrite a serving collector's; cleanup removes
// it.
func ScratchDTA(cfg *config.Config) (cleanup func(), err error) {
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

// kernelDTA is the kernel-written DTA stores (dta.kernel; docs/xdp.md, "DTA in the
// kernel"): the translator opens them at its Start and closes them at its Stop (its
// dta.KernelStores); the receiver, which starts after the translator and stops before,
// hands them to its dta listeners' XDP programs.
type kernelDTA struct {
	spec xdp.DTA
	st   *xdp.DTAStores
}

// kernelDTA returns the stores of dta.kernel, nil when it is off. It needs an xdp listener
// of format dta: the program of that listener writes the stores.
func (c *Collector) kernelDTA() (*kernelDTA, error) {
	d := &c.Config.DTA
	if !d.Enabled || !d.Kernel {
		return nil, nil
	}
	in := c.Config.Ingest()
	for i, l := range in.Listeners {
		if l.Format != "dta" || l.Mode != ingest.ModeXDP {
			continue
		}
		w := in.DecoderFor(i).DTA
		spec := xdp.DTA{HeaderLen: w.HeaderLen, KeyLen: w.KeyLen, DataLen: w.DataLen, Seed: d.Seed,
			KWSlots: d.KeyWrite.Slots, KWMaxN: d.KeyWrite.MaxRedundancy, KWCheckBits: d.KeyWrite.ChecksumBits, KWValueBytes: d.KeyWrite.ValueBytes,
			KISlots: d.KeyIncrement.Slots, KIMaxN: d.KeyIncrement.MaxRedundancy}
		if d.Append.ValueBytes <= 4 { // 4-byte entries; wider ones stay user space's
			spec.APLists, spec.APEntries = d.Append.Lists, d.Append.Entries
		}
		if err := spec.Check(); err != nil {
			return nil, fmt.Errorf("dta.kernel: listeners[%d]: %w", i, err)
		}
		return &kernelDTA{spec: spec}, nil
	}
	return nil, errors.New("dta.kernel: true: needs a listener with format dta and mode xdp (its XDP program writes the stores)")
}

// Open creates the stores (dta.KernelStores).
func (k *kernelDTA) Open() (*dta.KernelMem, error) {
	st, err := xdp.NewDTAStores(k.spec)
	if err != nil {
		return nil, err
	}
	k.st = st
	km := &dta.KernelMem{KW: st.KW, KI: st.KI, KWID: st.KWID(), KIID: st.KIID()}
	if k.spec.APLists > 0 {
		km.AP, km.APID = st.AP, st.APID()
	}
	return km, nil
}

// Close frees the stores (dta.KernelStores).
func (k *kernelDTA) Close() error {
	if k.st == nil {
		return nil
	}
	err := k.st.Close()
	k.st = nil
	return err
}

// stores is what the receiver's dta listeners' programs write: nil unless open.
func (k *kernelDTA) stores() *xdp.DTAStores {
	if k == nil {
		return nil
	}
	return k.st
}
