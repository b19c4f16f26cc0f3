// Package metrics owns intake's own metric registry: counters, gauges and histograms with
// fixed label sets, exposed at /metrics ("everything that moves gets a counter", docs/design.md).
// It is built on the Prometheus client library (github.com/prometheus/client_golang): a
// Registry wraps a prometheus.Registry, every family is a prometheus.Collector of its own
// that turns its series into constant metrics at scrape time, and exposition (Handler,
// WriteText) goes through the client library's gatherer and encoders. NewRegistry also
// registers the client library's Go and process collectors (go_* and process_*).
//
// Ways to feed a series, chosen for the hot path:
//   - With: a Value, a cache-line padded atomic updated in place (for rare events and the
//     normal path). Updating it takes no lock and allocates nothing; the family reads it at
//     scrape.
//   - Func: a function read at scrape time. The receive path counts in plain fields private
//     to its worker, publishes them to the worker's own cache-line padded atomics once per
//     recvmmsg batch, and registers functions that sum the workers at scrape. An atomic
//     add or store costs several plain increments (docs/performance.md, "Figures behind
//     choices in the code"), so the per-packet cost is a plain increment and the atomic
//     cost is paid once per batch (INTCollector §III: keep the fast path free of shared
//     state).
//   - Collect: a function called at scrape time that emits any number of series, for
//     families whose label sets appear at run time (switches, say).
//
// Histogram families are only fed at scrape time (HistFamily.Func, HistFamily.Collect),
// from counts their owner keeps.
//
// All metric names start with "intake_"; Counter, Gauge and Histogram panic otherwise, as
// they do on a family registered twice with different help, type or labels (programming
// errors). Registering the same family again with the same help, type and labels returns
// the existing family.
package metrics

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Type is a metric family's type.
type Type uint8

const (
	TypeCounter Type = iota
	TypeGauge
	TypeHistogram
)

func (t Type) String() string {
	switch t {
	case TypeGauge:
		return "gauge"
	case TypeHistogram:
		return "histogram"
	}
	return "counter"
}

// Registry holds metric families. Its methods are safe for concurrent use.
type Registry struct {
	prom *prometheus.Registry

	mu      sync.Mutex
	fams    map[string]collector // *Family's or *HistFamily's adapter, by name
	retired map[string]*family   // unregistered families, by name
}

// collector is what the registry keeps per family: the prometheus.Collector registered with
// the client library, and the family's identity for the re-registration check.
type collector interface {
	prometheus.Collector
	meta() *family
}

// NewRegistry returns a registry holding no intake_ families, with the client library's Go
// collector (go_*: goroutines, GC, memory) and process collector (process_*: CPU, memory,
// file descriptors of this process) registered.
func NewRegistry() *Registry {
	p := prometheus.NewRegistry()
	p.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Registry{prom: p, fams: map[string]collector{}, retired: map[string]*family{}}
}

// Gatherer returns the registry as the client library sees it, for promhttp.HandlerFor,
// testutil, or merging with other gatherers (prometheus.Gatherers).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.prom }

// Handler serves the registry at /metrics (promhttp.HandlerFor): the Prometheus text format
// 0.0.4 by default, OpenMetrics 1.0.0 to a scraper whose Accept header asks for
// application/openmetrics-text, gzip-compressed when the Accept-Encoding header allows.
// A collection error (a Collect callback emitting the wrong number of label values, or a
// series twice) is logged to log at level error, with component=metrics (nil:
// slog.Default()), and the other series are still served.
func (r *Registry) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return promhttp.HandlerFor(r.prom, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          slog.NewLogLogger(log.With("component", "metrics").Handler(), slog.LevelError),
	})
}

// ContentType is the media type of WriteText's output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText gathers every family (intake_ ones, go_* and process_*) and writes them in the
// Prometheus text exposition format 0.0.4 with the client library's encoder: families
// sorted by name, series by label values (label pairs are written sorted by label name).
// If gathering reports an error, the families gathered are still written and the error is
// returned.
func (r *Registry) WriteText(w io.Writer) error {
	mfs, gerr := r.prom.Gather()
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return gerr
}

// family is what every family type has: its identity and its descriptor.
type family struct {
	name   string
	help   string
	typ    Type
	labels []string
	desc   *prometheus.Desc
}

func (f *family) key(values []string) string {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d label values (%v), got %d", f.name, len(f.labels), f.labels, len(values)))
	}
	return strings.Join(values, "\xff")
}

// Counter registers (or finds) a counter family. By the Prometheus convention its name ends
// in _total.
func (r *Registry) Counter(name, help string, labels ...string) *Family {
	return r.register(name, help, TypeCounter, labels).(famCollector).f
}

// Gauge registers (or finds) a gauge family.
func (r *Registry) Gauge(name, help string, labels ...string) *Family {
	return r.register(name, help, TypeGauge, labels).(famCollector).f
}

// Histogram registers (or finds) a histogram family: name_bucket{le=...}, name_sum and
// name_count series, filled at scrape time by HistFamily.Func and HistFamily.Collect. The
// label "le" is reserved for the buckets.
func (r *Registry) Histogram(name, help string, labels ...string) *HistFamily {
	if slices.Contains(labels, "le") {
		panic("metrics: histogram " + name + " has the reserved label le")
	}
	return r.register(name, help, TypeHistogram, labels).(histCollector).h
}

// histSuffixes are the series names a histogram family adds to its own.
var histSuffixes = [...]string{"_bucket", "_sum", "_count"}

func (r *Registry) register(name, help string, typ Type, labels []string) collector {
	if !strings.HasPrefix(name, "intake_") || !validName(name) {
		panic("metrics: invalid metric name " + strconv.Quote(name))
	}
	for _, l := range labels {
		if !validName(l) || strings.HasPrefix(l, "__") {
			panic("metrics: invalid label name " + strconv.Quote(l))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.fams[name]; ok {
		if f := c.meta(); f.help != help || f.typ != typ || !slices.Equal(f.labels, labels) {
			panic("metrics: " + name + " registered twice with different help, type or labels")
		}
		return c
	}
	if f, ok := r.retired[name]; ok && (f.help != help || f.typ != typ || !slices.Equal(f.labels, labels)) {
		panic("metrics: " + name + " registered again after Unregister with different help, type or labels")
	}
	// A histogram's series names must not be another family's.
	for _, s := range histSuffixes {
		if typ == TypeHistogram {
			if _, ok := r.fams[name+s]; ok {
				panic("metrics: histogram " + name + " collides with " + name + s)
			}
		} else if base, ok := strings.CutSuffix(name, s); ok {
			if c, ok := r.fams[base]; ok && c.meta().typ == TypeHistogram {
				panic("metrics: " + name + " collides with histogram " + base)
			}
		}
	}
	m := family{name: name, help: help, typ: typ, labels: slices.Clone(labels),
		desc: prometheus.NewDesc(name, help, labels, nil)}
	var c collector
	if typ == TypeHistogram {
		c = histCollector{&HistFamily{family: m, series: map[string]*histSeries{}}}
	} else {
		c = famCollector{&Family{family: m, series: map[string]*series{}}}
	}
	if err := r.prom.Register(c); err != nil {
		panic("metrics: registering " + name + ": " + err.Error())
	}
	r.fams[name] = c
	return c
}

// Unregister removes a family, e.g. when the component that fed it is discarded. The name
// may be registered again, as a new family without series, but only with the same help,
// type and labels: the client library holds a name to one help text and label set for the
// program's lifetime (prometheus.Registry.Unregister), and a different one panics.
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.fams[name]; ok {
		r.prom.Unregister(c)
		delete(r.fams, name)
		r.retired[name] = c.meta()
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// constMetric is prometheus.MustNewConstMetric without the panic: a collector runs in the
// scrape's goroutine, where a panic would end the process, so a bad series (wrong number of
// label values, invalid UTF-8) becomes an invalid metric, which the gatherer reports as an
// error while still serving the rest.
func constMetric(desc *prometheus.Desc, vt prometheus.ValueType, v float64, values []string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, vt, v, values...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// Family is a counter or gauge: a metric name with its help text, type and label names.
// Its series are created at set-up time (With, Func) or emitted at scrape time (Collect);
// nothing on it but the Values that With returns is meant for the hot path.
type Family struct {
	family

	mu       sync.Mutex
	series   map[string]*series // by joined label values
	collects []func(emit func(v float64, labelValues ...string))
}

type series struct {
	values []string
	val    *Value
	fn     func() float64
}

// Value is one series' value: a uint64 counter or a float64 gauge, behind an atomic, padded to
// a cache line so that two hot series never share one. Updating it takes no lock and does not
// allocate; the family reads it at scrape.
type Value struct {
	bits atomic.Uint64
	typ  Type
	_    [64 - 8 - 1]byte
}

// Add adds n to a counter.
func (v *Value) Add(n uint64) { v.bits.Add(n) }

// Inc adds one to a counter.
func (v *Value) Inc() { v.bits.Add(1) }

// Set sets a gauge.
func (v *Value) Set(f float64) { v.bits.Store(math.Float64bits(f)) }

// SetInt sets a gauge to an integer.
func (v *Value) SetInt(n int64) { v.Set(float64(n)) }

// Load returns the counter's count (for a gauge, use Float).
func (v *Value) Load() uint64 { return v.bits.Load() }

// Float returns the value as a float64, for either type.
func (v *Value) Float() float64 {
	if v.typ == TypeGauge {
		return math.Float64frombits(v.bits.Load())
	}
	return float64(v.bits.Load())
}

// With returns the series with these label values, creating it at zero.
func (f *Family) With(values ...string) *Value {
	k := f.key(values)
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.series[k]; ok && s.val != nil {
		return s.val
	}
	v := &Value{typ: f.typ}
	f.series[k] = &series{values: slices.Clone(values), val: v}
	return v
}

// Func makes the series with these label values read fn at every scrape (replacing any
// earlier series with the same values). fn must be safe to call from any goroutine; the
// usual fn sums per-worker atomics, so that the workers never share a cache line.
func (f *Family) Func(fn func() float64, values ...string) {
	k := f.key(values)
	f.mu.Lock()
	f.series[k] = &series{values: slices.Clone(values), fn: fn}
	f.mu.Unlock()
}

// Collect adds a callback that emits series at every scrape, for families whose label sets
// are only known at run time: fn calls emit once per series, with the value and as many
// label values as the family has labels (emit copies them; the slice may be reused). Each
// call of Collect adds a callback; they run after the With and Func series are read. A
// series must be emitted once per scrape and must not also be a With or Func series: the
// gatherer reports a duplicate, or a wrong number of label values, as an error (Handler logs
// it and serves the other series; WriteText returns it). fn must be safe to call from any
// goroutine and must not call emit after it returns.
func (f *Family) Collect(fn func(emit func(v float64, labelValues ...string))) {
	f.mu.Lock()
	f.collects = append(f.collects, fn)
	f.mu.Unlock()
}

// Delete removes the series with these label values (With or Func; a Collect callback
// decides its series itself).
func (f *Family) Delete(values ...string) {
	k := f.key(values)
	f.mu.Lock()
	delete(f.series, k)
	f.mu.Unlock()
}

// Name returns the family's name.
func (f *Family) Name() string { return f.name }

// snapshot returns the family's series and callbacks, so that scrapes read them unlocked.
func (f *Family) snapshot() ([]*series, []func(emit func(v float64, labelValues ...string))) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ss := make([]*series, 0, len(f.series))
	for _, s := range f.series {
		ss = append(ss, s)
	}
	return ss, f.collects[:len(f.collects):len(f.collects)]
}

func (s *series) value() float64 {
	if s.fn != nil {
		return s.fn()
	}
	return s.val.Float()
}

// Sample is one series' value at a scrape.
type Sample struct {
	Labels []string // values, in the family's label order
	Value  float64
}

// Samples returns the family's series (With, Func and Collect), sorted by label values.
func (f *Family) Samples() []Sample {
	ss, fns := f.snapshot()
	out := make([]Sample, 0, len(ss))
	for _, s := range ss {
		out = append(out, Sample{Labels: s.values, Value: s.value()})
	}
	for _, fn := range fns {
		fn(func(v float64, lv ...string) { out = append(out, Sample{Labels: slices.Clone(lv), Value: v}) })
	}
	slices.SortFunc(out, func(a, b Sample) int { return slices.Compare(a.Labels, b.Labels) })
	return out
}

// famCollector is a Family as a prometheus.Collector (Family's own Collect method is the
// callback registration above).
type famCollector struct{ f *Family }

func (c famCollector) meta() *family                       { return &c.f.family }
func (c famCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.f.desc }

func (c famCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.f
	vt := prometheus.CounterValue
	if f.typ == TypeGauge {
		vt = prometheus.GaugeValue
	}
	ss, fns := f.snapshot()
	for _, s := range ss {
		ch <- constMetric(f.desc, vt, s.value(), s.values)
	}
	for _, fn := range fns {
		fn(func(v float64, lv ...string) { ch <- constMetric(f.desc, vt, v, lv) })
	}
}

// HistFamily is a histogram family: a metric name with its help text and label names, whose
// series are read at scrape time from counts their owner keeps (Func, Collect). The counts
// are Prometheus's: count is the number of observations, sum their sum, and buckets maps
// each bucket's upper bound (inclusive) to the number of observations less than or equal to
// it, i.e. cumulative counts. The +Inf bucket may be left out: the exposition writes it from
// count. The map is read during the call only, so a callback may reuse one map.
type HistFamily struct {
	family

	mu       sync.Mutex
	series   map[string]*histSeries // by joined label values
	collects []func(emit func(count uint64, sum float64, buckets map[float64]uint64, labelValues ...string))
}

type histSeries struct {
	values []string
	fn     func() (count uint64, sum float64, buckets map[float64]uint64)
}

// Func makes the histogram with these label values read fn at every scrape (replacing any
// earlier one with the same values). fn must be safe to call from any goroutine.
func (h *HistFamily) Func(fn func() (count uint64, sum float64, buckets map[float64]uint64), values ...string) {
	k := h.key(values)
	h.mu.Lock()
	h.series[k] = &histSeries{values: slices.Clone(values), fn: fn}
	h.mu.Unlock()
}

// Collect adds a callback that emits histograms at every scrape, for label sets only known
// at run time (one histogram per switch, say): fn calls emit once per histogram, with its
// count, sum, cumulative buckets and label values (emit copies what it keeps). Each call of
// Collect adds a callback; the rules of Family.Collect apply (one emission per label set
// and scrape, none that is also a Func series; errors are the gatherer's).
func (h *HistFamily) Collect(fn func(emit func(count uint64, sum float64, buckets map[float64]uint64, labelValues ...string))) {
	h.mu.Lock()
	h.collects = append(h.collects, fn)
	h.mu.Unlock()
}

// Delete removes the Func histogram with these label values.
func (h *HistFamily) Delete(values ...string) {
	k := h.key(values)
	h.mu.Lock()
	delete(h.series, k)
	h.mu.Unlock()
}

// Name returns the family's name.
func (h *HistFamily) Name() string { return h.name }

// histCollector is a HistFamily as a prometheus.Collector.
type histCollector struct{ h *HistFamily }

func (c histCollector) meta() *family                       { return &c.h.family }
func (c histCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.h.desc }

func (c histCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.h
	h.mu.Lock()
	ss := make([]*histSeries, 0, len(h.series))
	for _, s := range h.series {
		ss = append(ss, s)
	}
	fns := h.collects[:len(h.collects):len(h.collects)]
	h.mu.Unlock()
	emit := func(count uint64, sum float64, buckets map[float64]uint64, lv ...string) {
		// The constant histogram keeps its map until the gatherer reads it, after emit
		// returns: a copy lets the callback reuse its map.
		m, err := prometheus.NewConstHistogram(h.desc, count, sum, maps.Clone(buckets), lv...)
		if err != nil {
			m = prometheus.NewInvalidMetric(h.desc, err)
		}
		ch <- m
	}
	for _, s := range ss {
		count, sum, buckets := s.fn()
		emit(count, sum, buckets, s.values...)
	}
	for _, fn := range fns {
		fn(emit)
	}
}
