// Package export owns the sinks intake pushes events and periodic snapshots to: InfluxDB line
// protocol over HTTP (1.x and 2.x), Prometheus gauges on /metrics, Prometheus remote write
// (and Redis). It is INTCollector's exporter (§III-E1: push on every event and
// periodically, so that the database knows a silent key is alive) and its database choice
// (§III-E2: a push-capable database with custom timestamps).
//
// The Pipeline is one goroutine on the normal path: it consumes the event bus (an
// event.Consumer ring, overflow counted), takes the detector's Snapshot every export.period,
// and offers each value to every sink. A network sink buffers in a bounded queue, batches,
// retries a failed batch with exponential backoff and counts points sent, retried and
// dropped (by reason: queue_full, rejected, shutdown). Nothing here ever blocks ingest: the
// detector only publishes into the ring, and the pipeline only offers to queues.
//
// Reduction accounting (INTCollector §V-B2): the pipeline counts values exported, by source
// (event or periodic); with the detector's values seen (M_all) the reduction factor
// M_all / exported can be read off /metrics (intake_export_reduction_factor).
package export

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/metrics"
)

// Source is what the pipeline pulls periodic values from (detect.Detector).
type Source interface {
	Snapshot(now int64, fn func(*event.Event)) int
}

// Sink receives every exported value. Offer is called from the pipeline goroutine only and
// must not block.
type Sink interface {
	Name() string
	Offer(e *event.Event)
	Start(ctx context.Context) error
	// Stop flushes what it can until ctx ends, then drops (and counts) the rest.
	Stop(ctx context.Context) error
}

// Pipeline carries events and periodic values from the bus and a Source to the sinks.
type Pipeline struct {
	cfg   Config
	bus   *event.Bus
	src   Source
	sinks []Sink
	cons  *event.Consumer

	values     func() uint64 // M_all, from the detector; nil: unknown
	fromEvents atomic.Uint64
	fromPeriod atomic.Uint64
	expireTick time.Duration
	ring       int

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Deps are what a Pipeline works with besides its configuration.
type Deps struct {
	// Bus is where events come from (through a ring of Ring events); Source is what the
	// periodic push snapshots (the detector).
	Bus    *event.Bus
	Ring   int
	Source Source
	// Metrics gets the pipeline's and the sinks' counters; Gauges, when set, gets the
	// latest-value gauges of export.prometheus.gauges (the registry /metrics serves).
	Metrics, Gauges *metrics.Registry
	// Values returns the detector's M_all for the reduction factor (nil leaves it out).
	Values func() uint64
	// ExpireTick is how often a snapshot runs for expiry alone when the periodic push is
	// off (0: never).
	ExpireTick time.Duration
	// Extra sinks beside those the configuration turns on.
	Extra []Sink
	// Logger is where the sinks log their errors (slog.Default() when nil).
	Logger *slog.Logger
}

// New builds a pipeline with the sinks the configuration turns on. It starts nothing.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	bus, src, reg, gaugeReg, values := deps.Bus, deps.Source, deps.Metrics, deps.Gauges, deps.Values
	p := &Pipeline{cfg: cfg, bus: bus, src: src, values: values, expireTick: deps.ExpireTick, ring: max(deps.Ring, 2)}
	if cfg.Prometheus.Gauges && gaugeReg != nil {
		p.sinks = append(p.sinks, NewGauges(gaugeReg, cfg.Prometheus.SeriesLimit, reg))
	}
	if cfg.InfluxDB.URL != "" {
		p.sinks = append(p.sinks, NewInfluxDB(cfg, reg))
	}
	if cfg.Prometheus.RemoteWrite != "" {
		p.sinks = append(p.sinks, NewRemoteWrite(cfg, reg))
	}
	p.sinks = append(p.sinks, deps.Extra...)
	if deps.Logger != nil {
		for _, s := range p.sinks {
			if l, ok := s.(interface{ SetLogger(*slog.Logger) }); ok {
				l.SetLogger(deps.Logger)
			}
		}
	}
	if reg != nil {
		ex := reg.Counter("intake_export_values_total", "Metric values exported, by source: event (M_event) or periodic push.", "source")
		ex.Func(func() float64 { return float64(p.fromEvents.Load()) }, "event")
		ex.Func(func() float64 { return float64(p.fromPeriod.Load()) }, "periodic")
		if values != nil {
			reg.Gauge("intake_export_reduction_factor", "Metric values seen (M_all) over values exported (events and periodic pushes): INTCollector's reduction factor.").
				Func(func() float64 { return p.ReductionFactor() })
		}
	}
	return p, nil
}

// Sinks returns the pipeline's sinks.
func (p *Pipeline) Sinks() []Sink { return p.sinks }

// Exported returns the values exported from events and from periodic pushes.
func (p *Pipeline) Exported() (events, periodic uint64) {
	return p.fromEvents.Load(), p.fromPeriod.Load()
}

// ReductionFactor is M_all over values exported (NaN before anything was exported).
func (p *Pipeline) ReductionFactor() float64 {
	if p.values == nil {
		return math.NaN()
	}
	ex := p.fromEvents.Load() + p.fromPeriod.Load()
	if ex == 0 {
		return math.NaN()
	}
	return float64(p.values()) / float64(ex)
}

// Status is the export side of the reduction accounting and every sink's counters, as
// GET /api/v1/detect/status shows them.
type Status struct {
	// Values is M_all, the metric values the detector saw (absent when unknown).
	Values *uint64 `json:"values,omitempty"`
	// ExportedEvents (M_event) and ExportedPeriodic are the values exported by source.
	ExportedEvents   uint64 `json:"exported_events"`
	ExportedPeriodic uint64 `json:"exported_periodic"`
	// ReductionFactor is Values / (ExportedEvents + ExportedPeriodic), absent before
	// anything was exported.
	ReductionFactor *float64 `json:"reduction_factor,omitempty"`
	// RingOverflow counts events the pipeline's bus ring dropped (never exported).
	RingOverflow uint64       `json:"ring_overflow"`
	Sinks        []SinkStatus `json:"sinks"`
}

// SinkStatus is one sink's counters: points sent, sent again after a failure, dropped by
// reason, and events waiting in its queue; and its last error (a failed or refused batch,
// e.g. the server's answer) with its time, RFC 3339 (both absent before any error).
type SinkStatus struct {
	Name          string            `json:"name"`
	Sent          uint64            `json:"sent"`
	Retried       uint64            `json:"retried"`
	Dropped       map[string]uint64 `json:"dropped"`
	Queued        int               `json:"queued"`
	LastError     string            `json:"last_error,omitempty"`
	LastErrorTime string            `json:"last_error_time,omitempty"`
}

// Status returns the pipeline's counters now. A sink that does not count (an extra sink
// without a SinkStatus method) is listed by name.
func (p *Pipeline) Status() Status {
	st := Status{ExportedEvents: p.fromEvents.Load(), ExportedPeriodic: p.fromPeriod.Load(), Sinks: []SinkStatus{}}
	if p.values != nil {
		v := p.values()
		st.Values = &v
		if f := p.ReductionFactor(); !math.IsNaN(f) {
			st.ReductionFactor = &f
		}
	}
	if p.cons != nil {
		st.RingOverflow = p.cons.Overflow()
	}
	for _, s := range p.sinks {
		if c, ok := s.(interface{ SinkStatus() SinkStatus }); ok {
			st.Sinks = append(st.Sinks, c.SinkStatus())
		} else {
			st.Sinks = append(st.Sinks, SinkStatus{Name: s.Name(), Dropped: map[string]uint64{}})
		}
	}
	return st
}

// Consumer returns the pipeline's bus consumer (nil before Start).
func (p *Pipeline) Consumer() *event.Consumer { return p.cons }

// Name is the pipeline's component name.
func (p *Pipeline) Name() string { return "export" }

// Start subscribes to the bus and runs the pipeline and its sinks.
func (p *Pipeline) Start(ctx context.Context) error {
	if p.cancel != nil {
		return nil
	}
	ring := p.ring
	for i, s := range p.sinks {
		if err := s.Start(ctx); err != nil {
			for _, t := range p.sinks[:i] {
				t.Stop(context.Background())
			}
			return err
		}
	}
	if p.bus != nil {
		p.cons = p.bus.Subscribe("export", ring)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go p.run(ctx)
	return nil
}

// Stop ends the pipeline after draining the ring, then stops the sinks, each flushing until
// ctx ends.
func (p *Pipeline) Stop(ctx context.Context) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	p.cancel = nil
	if p.cons != nil {
		p.bus.Unsubscribe(p.cons)
	}
	var first error
	for _, s := range p.sinks {
		if err := s.Stop(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PushNow runs one periodic push at time now, for tests and for a final push.
func (p *Pipeline) PushNow(now int64) { p.push(now, true) }

func (p *Pipeline) push(now int64, periodic bool) {
	if p.src == nil {
		return
	}
	p.src.Snapshot(now, func(e *event.Event) {
		if e.Kind == event.KindPeriodic && !periodic {
			return
		}
		p.offer(e)
	})
}

func (p *Pipeline) offer(e *event.Event) {
	switch e.Kind {
	case event.KindPeriodic:
		p.fromPeriod.Add(1)
	case event.KindExpire:
	default:
		p.fromEvents.Add(1)
	}
	for _, s := range p.sinks {
		s.Offer(e)
	}
}

func (p *Pipeline) run(ctx context.Context) {
	defer p.wg.Done()
	var tick <-chan time.Time
	periodic := p.cfg.Period > 0
	switch {
	case periodic:
		t := time.NewTicker(p.cfg.Period)
		defer t.Stop()
		tick = t.C
	case p.expireTick > 0:
		t := time.NewTicker(p.expireTick)
		defer t.Stop()
		tick = t.C
	}
	var notify <-chan struct{}
	if p.cons != nil {
		notify = p.cons.Notify()
	}
	buf := make([]event.Event, 256)
	drain := func() {
		if p.cons == nil {
			return
		}
		for {
			n := p.cons.Poll(buf)
			for i := range buf[:n] {
				p.offer(&buf[i])
			}
			if n < len(buf) {
				return
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			drain()
			return
		case <-notify:
			drain()
		case now := <-tick:
			drain()
			p.push(now.UnixNano(), periodic)
		}
	}
}
