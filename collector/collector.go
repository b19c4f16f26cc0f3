// Package collector is intake's composition root: it builds the pipeline that `intake
// serve`, `intake demo`, `intake bench ingest` and the end-to-end tests run from the
// aggregate configuration (package config), and owns its lifecycle (docs/design.md, "The
// data flow"):
//
//	sinks (Kafka, Redis, InfluxDB flow records, histogram writer, export pipeline)
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
	"github.com/intake-int/intake/cluster"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/console"
	"github.com/intake-int/intake/detect"
	"github.com/intake-int/intake/dta"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/label"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/xdp"
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
	Redis      *export.RedisSink
	Kafka      *export.KafkaSink

	records      *export.InfluxRecords
	labelControl *label.HTTPControl
	busConsumers []string // the bus consumers the components will subscribe, for Drops

	log     *slog.Logger
	comps   []Component // in start order, without the receiver and the API
	mu      sync.Mutex
	running bool
}

// New builds the pipeline of cfg (defaults filled in, validated). It opens nothing.
func New(cfg config.Config, opts Options) (*Collector, error) {
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
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
		srv, err := api.NewFromConfig(cfg.HTTP, c.Metrics)
		if err != nil {
			return nil, err
		}
		c.API = srv
		c.API.SetLogger(log.With("component", "http"))
	}
	var procs []ingest.Processor
	if err := c.buildKafka(workers, &procs); err != nil {
		return nil, err
	}
	if err := c.buildDetect(workers, &procs); err != nil {
		return nil, err
	}
	c.buildDTA(workers, &procs)
	kd, err := c.kernelDTA()
	if err != nil {
		return nil, err
	}
	c.buildFlowCache(workers, &procs)
	c.buildLabel(&procs)
	kdet, err := c.kernelDetect()
	if err != nil {
		return nil, err
	}
	kfc, err := c.kernelFlowCache()
	if err != nil {
		return nil, err
	}
	recv, err := ingest.New(in, ingest.Deps{Metrics: c.Metrics, Processors: procs, Logger: log})
	if err != nil {
		return nil, err
	}
	c.Receiver = recv
	if kd != nil {
		// First in start order: the stores exist before the translator opens its regions
		// over them, and are freed after the receiver and the translator have stopped.
		c.comps = append([]Component{kd}, c.comps...)
	}
	if kdet != nil {
		// After the detector and its export pipeline (which consume its events), before the
		// receiver (whose programs detect with its state).
		c.comps = append(c.comps, kdet)
	}
	if kfc != nil {
		// After the flow cache and its sinks, before the receiver (whose programs update its
		// state): it stops after the receiver, and hands the kernel's last evicted records
		// to the sinks, which stop after it.
		c.comps = append(c.comps, kfc)
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
		console.Register(c.API)
		if err := c.buildCluster(); err != nil {
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
	d := detect.New(cfg, detect.Deps{Bus: c.Bus, Workers: workers, Metrics: c.Metrics})
	var gauges *metrics.Registry
	if c.API != nil { // the gauges are for /metrics: without HTTP nobody scrapes them
		gauges = c.Metrics
	}
	expireTick := time.Duration(0)
	if cfg.Expire > 0 {
		expireTick = max(cfg.Expire/2, 10*time.Millisecond)
	}
	var extra []export.Sink
	if c.Kafka != nil {
		extra = append(extra, c.Kafka.Events())
	}
	pipe, err := export.New(c.Config.Export, export.Deps{Bus: c.Bus, Ring: cfg.Ring, Source: d, Metrics: c.Metrics,
		Gauges: gauges, Values: func() uint64 { return d.Stats().Values }, ExpireTick: expireTick,
		Extra: extra, Logger: c.log.With("component", "export")})
	if err != nil {
		return err
	}
	c.Detector, c.Export = d, pipe
	c.busConsumers = append(c.busConsumers, "export")
	if c.API != nil {
		c.busConsumers = append(c.busConsumers, "log")
	}
	c.comps = append(c.comps, pipe, d)
	*procs = append(*procs, d)
	return nil
}

// buildKafka builds the Kafka sink (export.kafka) and its reports processor. It is the
// first component: it starts before, and stops after, everything that offers to it (the
// export pipeline's events and snapshots, the flow cache's records, the workers' reports).
func (c *Collector) buildKafka(workers int, procs *[]ingest.Processor) error {
	if !c.Config.Export.Kafka.Enabled() {
		return nil
	}
	k, err := export.NewKafka(c.Config.Export, export.KafkaDeps{Workers: workers, Metrics: c.Metrics,
		Logger: c.log.With("component", "export"), Member: c.Config.Cluster.Self})
	if err != nil {
		return err
	}
	c.Kafka = k
	c.comps = append(c.comps, k)
	if p := k.Reports(); p != nil {
		*procs = append(*procs, p)
	}
	return nil
}

func (c *Collector) buildDTA(workers int, procs *[]ingest.Processor) {
	if !c.Config.DTA.Enabled {
		return
	}
	t := dta.NewTranslator(c.Config.DTA, dta.Deps{Workers: workers, Bus: c.Bus, Metrics: c.Metrics, Logger: c.log})
	t.SetKeyLen(c.Config.Decoder.DTA.KeyLen)
	c.Translator = t
	if c.Config.DTA.INT.EventList >= 0 {
		c.busConsumers = append(c.busConsumers, "dta")
	}
	c.comps = append(c.comps, t)
	*procs = append(*procs, t)
}

// buildFlowCache builds the flow cache and the sinks of its evicted records: Redis (with the
// detector's threshold and change events, the latest per-flow hashes and the histograms),
// InfluxDB and Kafka.
func (c *Collector) buildFlowCache(workers int, procs *[]ingest.Processor) {
	cfg := c.Config.FlowCache
	if !cfg.Enabled {
		return
	}
	fc := flowcache.New(cfg, flowcache.Deps{Workers: workers, Metrics: c.Metrics, Bus: c.Bus})
	ex := c.Config.Export
	// Sinks start before the cache that feeds them.
	if ex.InfluxDB.URL != "" {
		rec := export.NewInfluxRecords(ex, c.Metrics)
		rec.SetLogger(c.log.With("component", "export"))
		c.records = rec
		fc.AddSink(rec.OfferRecord)
		c.comps = append(c.comps, rec)
	}
	if c.Kafka != nil {
		fc.AddSink(c.Kafka.OfferRecord)
	}
	if ex.Redis.Enabled() {
		r := export.NewRedis(ex, c.Metrics)
		r.SetLogger(c.log.With("component", "export"))
		c.Redis = r
		fc.AddSink(r.OfferRecord)
		fc.SetSinkStatus(func() any { cs := r.Counts(); return &cs })
		r.Events(c.Bus, c.Config.Detect.Ring)
		c.busConsumers = append(c.busConsumers, "redis")
		c.comps = append(c.comps, r)
		if p := ex.Redis.HashPeriod; p > 0 {
			fc.SetLatestSink(p, r.OfferLatest)
			c.comps = append(c.comps, export.NewHistogramWriter(p, fc.Histograms(), r.OfferHistogram))
		}
	}
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
		c.labelControl = label.NewHTTPControl(cfg.Control)
		setter = c.labelControl
	}
	l := label.New(cfg, label.Deps{Setter: setter, Metrics: c.Metrics})
	c.Label = l
	c.comps = append(c.comps, l)
	*procs = append(*procs, l)
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
	all := append(append([]Component(nil), c.comps...), c.Receiver)
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

// kernelDTAComp creates the kernel-written DTA stores (dta.kernel) at Start and hands them to
// the translator and the receiver; it frees them at Stop (docs/xdp.md, "DTA in the kernel").
type kernelDTAComp struct {
	spec xdp.DTA
	c    *Collector
	st   *xdp.DTAStores
}

// kernelDTA returns the component of dta.kernel, nil when it is off. It needs an xdp
// listener of format dta: the program of that listener writes the stores.
func (c *Collector) kernelDTA() (*kernelDTAComp, error) {
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
		return &kernelDTAComp{spec: spec, c: c}, nil
	}
	return nil, errors.New("dta.kernel: true: needs a listener with format dta and mode xdp (its XDP program writes the stores)")
}

func (k *kernelDTAComp) Name() string { return "dta-kernel" }

func (k *kernelDTAComp) Start(context.Context) error {
	st, err := xdp.NewDTAStores(k.spec)
	if err != nil {
		return err
	}
	k.st = st
	km := &dta.KernelMem{KW: st.KW, KI: st.KI, KWID: st.KWID(), KIID: st.KIID()}
	if k.spec.APLists > 0 {
		km.AP, km.APID = st.AP, st.APID()
	}
	k.c.Translator.SetKernel(km)
	k.c.Receiver.SetDTAStores(st)
	return nil
}

func (k *kernelDTAComp) Stop(context.Context) error {
	if k.st == nil {
		return nil
	}
	k.c.Translator.SetKernel(nil)
	k.c.Receiver.SetDTAStores(nil)
	err := k.st.Close()
	k.st = nil
	return err
}
