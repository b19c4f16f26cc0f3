// Package export is the sink side's contract and its shared parts: the input interfaces a
// sink implements (EventSink, RecordSink, LatestSink, HistogramSink, ReportSink), the
// Pipeline that carries events and periodic values to the event sinks, the bounded batching
// queue of the HTTP sinks (Queued) and a sink's last error (LastError). The sinks are its
// subpackages, each owning its configuration section: influx (InfluxDB line protocol over
// HTTP, 1.x and 2.x, events and flow records), prom (Prometheus gauges on /metrics, remote
// write), redis (the flow cache's Redis export) and kafka (every kind of message to Kafka,
// and the `intake consume` reader). It is INTCollector's exporter (§III-E1: push on every event and
// periodically, so that the database knows a silent key is alive) and its database choice
// (§III-E2: a push-capable database with custom timestamps).
//
// The Pipeline is one goroutine on the normal path: it consumes the event bus (an
// event.Consumer ring, overflow counted), takes the detector's Snapshot every export.period,
// and offers each value to every event sink: events reach every sink this one way. A network sink buffers in a bounded queue, batches,
// retries a failed batch with exponential backoff and counts points sent, retried and
// dropped (by reason: queue_full, rejected, shutdown). Nothing here ever blocks ingest: the
// detector only publishes into the ring, and the pipeline only offers to queues.
//
// Reduction accounting (INTCollector §V-B2): the pipeline counts the values it offers to the
// sinks, by source (event or periodic), and each sink the values it stored (its server
// accepted them) and those it dropped, by reason. A value is exported when a sink stored
// it: with the detector's values seen (M_all) the reduction factor is M_all over the values
// exported, per sink and for the pipeline (the most any sink stored), on /metrics
// (intake_export_reduction_factor) and in GET /api/v1/detect/status.
package export

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
)

// Source is what the pipeline pulls periodic values from (detect.Detector).
type Source interface {
	Snapshot(now int64, fn func(*event.Event)) int
}

// StatusSink is an EventSink with counters: the pipeline lists it in its Status and reports
// its drops (Drops) as "export.<name>.<reason>". SinkStatus is the sink's line: what it
// did with what the pipeline offered.
type StatusSink interface {
	EventSink
	SinkStatus() SinkStatus
}

// ValueSink is an EventSink that counts the values it stored and dropped (the reduction
// accounting); the pipeline's exported values are those of its ValueSinks.
type ValueSink interface {
	EventSink
	SinkStatus() SinkStatus
	ValueCounts() ValueCounts
}

// ValueCounts are a sink's reduction accounting. Events and Periodic are the values it
// stored, by source: its server accepted the batch that held them (a gauge: set). Dropped
// are the values it dropped, by reason. A value the sink has no form for (a path in
// Prometheus; a measurement the intcollector schema lacks) is neither: it was never the
// sink's to store.
type ValueCounts struct {
	Events, Periodic uint64
	Dropped          map[string]uint64
}

// The sources of exported values: events (M_event) and the periodic push.
const (
	srcEvent = iota
	srcPeriodic
	numSources
)

// ValueSource is the source e counts in as a value, or -1 for what is not a value (a key's
// expiry, a DTA report's immediate notification).
func ValueSource(e *event.Event) int {
	switch e.Kind {
	case event.KindPeriodic:
		return srcPeriodic
	case event.KindExpire, event.KindNone, event.KindImmediate:
		return -1
	}
	return srcEvent
}

// SourceCounts are values by source.
type SourceCounts [numSources]uint64

func (c SourceCounts) total() uint64 { return c[srcEvent] + c[srcPeriodic] }

// refuse splits c, a batch's values, when the server refused n of its points and stored the
// rest: a refused point may be any value's, so as many values as points (at most all) are
// counted refused, events first. What is counted stored is then never more than what was.
func (c SourceCounts) refuse(n uint64) (stored, refused SourceCounts) {
	for src := range c {
		refused[src] = min(c[src], n)
		stored[src] = c[src] - refused[src]
		n -= refused[src]
	}
	return stored, refused
}

// ValueCount keeps a sink's ValueCounts: added to by the sink's goroutines, read by the
// status and /metrics.
type ValueCount struct {
	stored  [numSources]atomic.Uint64
	reasons []string
	dropped []atomic.Uint64 // by reasons' index
}

func NewValueCount(reasons ...string) *ValueCount {
	return &ValueCount{reasons: reasons, dropped: make([]atomic.Uint64, len(reasons))}
}

func (v *ValueCount) Store(c SourceCounts) {
	for src, n := range c {
		if n > 0 {
			v.stored[src].Add(n)
		}
	}
}

// drop counts n values dropped for reason, one of v's reasons.
func (v *ValueCount) Drop(reason string, n uint64) {
	for i, r := range v.reasons {
		if r == reason {
			v.dropped[i].Add(n)
			return
		}
	}
	panic("export: unknown drop reason " + reason)
}

func (v *ValueCount) Counts() ValueCounts {
	c := ValueCounts{Events: v.stored[srcEvent].Load(), Periodic: v.stored[srcPeriodic].Load(), Dropped: map[string]uint64{}}
	for i, r := range v.reasons {
		c.Dropped[r] = v.dropped[i].Load()
	}
	return c
}

// Pipeline carries events and periodic values from the bus and a Source to the sinks.
type Pipeline struct {
	cfg   Config
	bus   *event.Bus
	src   Source
	sinks []EventSink // offered every value
	cons  *event.Consumer

	values     func() uint64 // M_all, from the detector; nil: unknown
	offered    [numSources]atomic.Uint64
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
	// Metrics gets the pipeline's counters.
	Metrics *metrics.Registry
	// Values returns the detector's M_all for the reduction factor (nil leaves it out).
	Values func() uint64
	// ExpireTick is how often a snapshot runs for expiry alone when the periodic push is
	// off (0: never).
	ExpireTick time.Duration
	// Sinks are offered every value, in this order. They are components of their own
	// (export/influx, export/prom, export/redis, export/kafka): the pipeline does not start
	// or stop them; they run from before Start until after Stop.
	Sinks []EventSink
}

// New builds a pipeline over deps.Sinks. It starts nothing.
func New(cfg Config, deps Deps) (*Pipeline, error) {
	bus, reg := deps.Bus, deps.Metrics
	p := &Pipeline{cfg: cfg, bus: bus, src: deps.Source, values: deps.Values, expireTick: deps.ExpireTick,
		ring: max(deps.Ring, 2), sinks: deps.Sinks}
	if bus != nil {
		bus.Declare("export") // subscribed at Start
	}
	if reg != nil {
		p.registerMetrics(reg)
	}
	return p, nil
}

// registerMetrics puts the reduction accounting on reg: the pipeline's values offered and
// exported, each value sink's values stored and dropped, and the reduction factors.
func (p *Pipeline) registerMetrics(reg *metrics.Registry) {
	sources := [numSources]string{"event", "periodic"}
	ex := reg.Counter("intake_export_values_total", "Metric values exported, by source: event (M_event) or periodic push; a value is exported when a sink stored it (with several sinks, the most any sink stored).", "source")
	of := reg.Counter("intake_export_offered_values_total", "Metric values the export pipeline offered to its sinks, by source.", "source")
	for src, name := range sources {
		ex.Func(func() float64 { return float64(p.exported()[src]) }, name)
		of.Func(func() float64 { return float64(p.offered[src].Load()) }, name)
	}
	if p.values != nil {
		reg.Gauge("intake_export_reduction_factor", "Metric values seen (M_all) over values exported (stored by a sink; with several sinks, the most any stored): INTCollector's reduction factor.").
			Func(func() float64 { return p.ReductionFactor() })
	}
	st := reg.Counter("intake_export_sink_values_total", "Metric values a sink stored (its server accepted them), by sink and source.", "sink", "source")
	dr := reg.Counter("intake_export_sink_dropped_values_total", "Metric values a sink dropped, by sink and reason.", "sink", "reason")
	rf := reg.Gauge("intake_export_sink_reduction_factor", "Metric values seen (M_all) over the values a sink stored.", "sink")
	for _, s := range p.sinks {
		vs, ok := s.(ValueSink)
		if !ok {
			continue
		}
		name := vs.SinkStatus().Name
		st.Func(func() float64 { return float64(vs.ValueCounts().Events) }, name, sources[srcEvent])
		st.Func(func() float64 { return float64(vs.ValueCounts().Periodic) }, name, sources[srcPeriodic])
		for reason := range vs.ValueCounts().Dropped {
			dr.Func(func() float64 { return float64(vs.ValueCounts().Dropped[reason]) }, name, reason)
		}
		if p.values != nil {
			rf.Func(func() float64 { c := vs.ValueCounts(); return p.factor(c.Events + c.Periodic) }, name)
		}
	}
}

// Sinks returns the pipeline's sinks (Deps.Sinks).
func (p *Pipeline) Sinks() []EventSink { return p.sinks }

// Exported returns the values exported from events and from periodic pushes: stored by a
// sink. With several sinks, each is the most that any one sink stored: the values the
// best-served database holds (each sink's own are in Status). Without a sink that counts
// values, nothing is exported.
func (p *Pipeline) Exported() (events, periodic uint64) {
	ex := p.exported()
	return ex[srcEvent], ex[srcPeriodic]
}

func (p *Pipeline) exported() SourceCounts {
	var ex SourceCounts
	for _, s := range p.sinks {
		if vs, ok := s.(ValueSink); ok {
			c := vs.ValueCounts()
			ex[srcEvent], ex[srcPeriodic] = max(ex[srcEvent], c.Events), max(ex[srcPeriodic], c.Periodic)
		}
	}
	return ex
}

// Offered returns the values the pipeline offered to its sinks, from events and from
// periodic pushes: what the sinks would have stored had none dropped or skipped any.
func (p *Pipeline) Offered() (events, periodic uint64) {
	return p.offered[srcEvent].Load(), p.offered[srcPeriodic].Load()
}

// ReductionFactor is M_all over the values exported (Exported; NaN before anything was).
// Being over the most that any sink stored, it is never above a sink's own factor.
func (p *Pipeline) ReductionFactor() float64 { return p.factor(p.exported().total()) }

// factor is M_all over exported values (NaN when either is unknown or none were exported).
func (p *Pipeline) factor(exported uint64) float64 {
	if p.values == nil || exported == 0 {
		return math.NaN()
	}
	return float64(p.values()) / float64(exported)
}

// Status is the export side of the reduction accounting and every sink's counters, as
// GET /api/v1/detect/status shows them.
type Status struct {
	// Values is M_all, the metric values the detector saw (absent when unknown).
	Values *uint64 `json:"values,omitempty"`
	// ExportedEvents (M_event) and ExportedPeriodic are the values exported by source:
	// stored by a sink; with several sinks, the most any one sink stored (Exported).
	ExportedEvents   uint64 `json:"exported_events"`
	ExportedPeriodic uint64 `json:"exported_periodic"`
	// ReductionFactor is Values / (ExportedEvents + ExportedPeriodic), absent before
	// anything was exported.
	ReductionFactor *float64 `json:"reduction_factor,omitempty"`
	// OfferedEvents and OfferedPeriodic are the values the pipeline offered to its sinks.
	OfferedEvents   uint64 `json:"offered_events"`
	OfferedPeriodic uint64 `json:"offered_periodic"`
	// RingOverflow counts events the pipeline's bus ring dropped (never exported).
	RingOverflow uint64       `json:"ring_overflow"`
	Sinks        []SinkStatus `json:"sinks"`
}

// SinkStatus is one sink's counters: points sent, sent again after a failure, dropped by
// reason, and events waiting in its queue; and its last error (a failed or refused batch,
// e.g. the server's answer) with its time, RFC 3339 (both absent before any error).
//
// A sink that counts values (ValueSink) also has, in the pipeline's status, the values it
// stored by source, those it dropped by reason, and M_all over those it stored.
type SinkStatus struct {
	Name             string            `json:"name"`
	Sent             uint64            `json:"sent"`
	Retried          uint64            `json:"retried"`
	Dropped          map[string]uint64 `json:"dropped"`
	Queued           int               `json:"queued"`
	LastError        string            `json:"last_error,omitempty"`
	LastErrorTime    string            `json:"last_error_time,omitempty"`
	ExportedEvents   *uint64           `json:"exported_events,omitempty"`
	ExportedPeriodic *uint64           `json:"exported_periodic,omitempty"`
	DroppedValues    map[string]uint64 `json:"dropped_values,omitempty"`
	ReductionFactor  *float64          `json:"reduction_factor,omitempty"`
}

// Status returns the pipeline's counters now, with a line for each sink with counters
// (StatusSink).
func (p *Pipeline) Status() Status {
	ex := p.exported()
	st := Status{ExportedEvents: ex[srcEvent], ExportedPeriodic: ex[srcPeriodic], Sinks: []SinkStatus{}}
	st.OfferedEvents, st.OfferedPeriodic = p.Offered()
	if p.values != nil {
		v := p.values()
		st.Values = &v
		st.ReductionFactor = p.factorPtr(ex.total())
	}
	if p.cons != nil {
		st.RingOverflow = p.cons.Overflow()
	}
	for _, s := range p.sinks {
		c, ok := s.(StatusSink)
		if !ok {
			continue
		}
		ss := c.SinkStatus()
		if vs, ok := s.(ValueSink); ok {
			c := vs.ValueCounts()
			ss.ExportedEvents, ss.ExportedPeriodic, ss.DroppedValues = &c.Events, &c.Periodic, c.Dropped
			ss.ReductionFactor = p.factorPtr(c.Events + c.Periodic)
		}
		st.Sinks = append(st.Sinks, ss)
	}
	return st
}

// Drops returns what each sink with counters (StatusSink) dropped of what the pipeline
// offered, by "export.<sink>.<reason>": the export section of GET /api/v1/status's drops.
func (p *Pipeline) Drops() map[string]uint64 {
	d := map[string]uint64{}
	for _, s := range p.sinks {
		if c, ok := s.(StatusSink); ok {
			c.SinkStatus().AddDrops(d)
		}
	}
	return d
}

// AddDrops adds st's drops to d as "export.<name>.<reason>".
func (st SinkStatus) AddDrops(d map[string]uint64) {
	for r, n := range st.Dropped {
		d["export."+st.Name+"."+r] = n
	}
}

// factorPtr is factor for JSON: nil when it is not a number.
func (p *Pipeline) factorPtr(exported uint64) *float64 {
	if f := p.factor(exported); !math.IsNaN(f) {
		return &f
	}
	return nil
}

// Consumer returns the pipeline's bus consumer (nil before Start).
func (p *Pipeline) Consumer() *event.Consumer { return p.cons }

// Name is the pipeline's component name.
func (p *Pipeline) Name() string { return "export" }

// Start subscribes to the bus and runs the pipeline.
func (p *Pipeline) Start(context.Context) error {
	if p.cancel != nil {
		return nil
	}
	if p.bus != nil {
		p.cons = p.bus.Subscribe("export", p.ring)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go p.run(ctx)
	return nil
}

// Stop ends the pipeline after draining the ring into the sinks (which stop after it).
func (p *Pipeline) Stop(context.Context) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.wg.Wait()
	p.cancel = nil
	if p.cons != nil {
		p.bus.Unsubscribe(p.cons)
	}
	return nil
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
	if src := ValueSource(e); src >= 0 {
		p.offered[src].Add(1)
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
