package flowcache

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/record"
)

// RegisterAPI adds the cache's endpoints:
//
//	GET /api/v1/flowcache/flow?src=&dst=&sport=&dport=&proto=   one flow's aggregates (or flow=)
//	GET /api/v1/flowcache/top?by=latency|packets&n=             the top flows
//	    &switch=ID&prefix=CIDR&port=N                            of those that cross a switch, etc.
//	GET /api/v1/flowcache/stats                                 counters, event rings, sinks
//	GET /api/v1/histograms, /api/v1/histograms/{switch}/{metric}
//	GET /api/v1/topology                                        switches and links of the cached paths
func (f *FlowCache) RegisterAPI(s *api.Server) {
	s.HandleFunc("GET /api/v1/flowcache/flow", f.handleFlow)
	s.HandleFunc("GET /api/v1/flowcache/top", f.handleTop)
	s.HandleFunc("GET /api/v1/flowcache/stats", f.handleStats)
	s.HandleFunc("GET /api/v1/histograms", f.handleHistograms)
	s.HandleFunc("GET /api/v1/histograms/{switch}/{metric}", f.handleHistogram)
	s.HandleFunc("GET /api/v1/topology", f.handleTopology)
}

// StatsJSON is GET /api/v1/flowcache/stats: the cache's counters, the event rings (every
// consumer of the event bus: the paper's R_I rings) and the Redis sink's counters.
type StatsJSON struct {
	Stats
	EventRings []event.RingStatus `json:"event_rings"`
	Redis      any                `json:"redis,omitempty"`
}

// StatsJSON returns the stats endpoint's body now.
func (f *FlowCache) StatsJSON() StatsJSON {
	st := StatsJSON{Stats: f.Stats(), EventRings: []event.RingStatus{}}
	if f.bus != nil {
		st.EventRings = f.bus.Rings()
	}
	if f.deps.SinkStatus != nil {
		st.Redis = f.deps.SinkStatus()
	}
	return st
}

func (f *FlowCache) handleFlow(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, api.FlowParamNames...) {
		return
	}
	k, ok := api.FlowParams(w, r)
	if !ok {
		return
	}
	rec, found := f.Lookup(&k)
	if !found {
		api.Error(w, http.StatusNotFound, "flow not in the flow cache")
		return
	}
	api.JSON(w, http.StatusOK, RecordJSON(&rec))
}

// TopJSON is GET /api/v1/flowcache/top.
type TopJSON struct {
	By    string     `json:"by"`
	N     int        `json:"n"`
	Flows []FlowJSON `json:"flows"`
}

// ParseTopFilter reads GET /api/v1/flowcache/top's filters, switch=ID, prefix=CIDR (or an
// address: that host) and port=N, without answering.
func ParseTopFilter(q url.Values) (TopFilter, *api.ParamError) {
	var tf TopFilter
	var e *api.ParamError
	if tf.Switch, tf.HasSwitch, e = api.SwitchParam(q); e != nil {
		return tf, e
	}
	if s := q.Get("prefix"); q.Has("prefix") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, err2 := netip.ParseAddr(s)
			if err2 != nil || a.Zone() != "" {
				return tf, &api.ParamError{Param: "prefix", Value: s, Allowed: "an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2001:db8::/32, or an address"}
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() { // ::ffff:10.0.0.0/104 is 10.0.0.0/8, as the flows' addresses are unmapped
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		tf.Prefix = p.Masked()
	}
	if s := q.Get("port"); q.Has("port") {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return tf, &api.ParamError{Param: "port", Value: s, Allowed: "an integer 0-65535"}
		}
		tf.Port, tf.HasPort = uint16(n), true
	}
	return tf, nil
}

func (f *FlowCache) handleTop(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "by", "n", "switch", "prefix", "port") {
		return
	}
	where, perr := ParseTopFilter(r.URL.Query())
	if perr != nil {
		api.JSON(w, http.StatusBadRequest, perr.Body())
		return
	}
	by := r.URL.Query().Get("by")
	if by == "" {
		by = "packets"
	}
	if by != "packets" && by != "latency" {
		api.BadParam(w, "by", by, "latency or packets")
		return
	}
	n, ok := api.IntParam(w, r, "n", 10, 1, 1000, "an integer 1-1000")
	if !ok {
		return
	}
	recs := f.TopWhere(by, n, where)
	out := TopJSON{By: by, N: n, Flows: make([]FlowJSON, len(recs))}
	for i := range recs {
		out.Flows[i] = RecordJSON(&recs[i])
	}
	api.JSON(w, http.StatusOK, out)
}

func (f *FlowCache) handleStats(w http.ResponseWriter, r *http.Request) {
	if api.CheckParams(w, r) {
		api.JSON(w, http.StatusOK, f.StatsJSON())
	}
}

type histListJSON struct {
	Switches []uint32 `json:"switches"`
	Metrics  []string `json:"metrics"`
	E2E      []string `json:"e2e"`
}

func (f *FlowCache) handleHistograms(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r) {
		return
	}
	api.JSON(w, http.StatusOK, histListJSON{Switches: append([]uint32{}, f.hist.Switches()...),
		Metrics: []string{"hop_latency", "queue_occupancy", "tx_utilization"}, E2E: []string{"latency"}})
}

// histMetric reads a histogram's metric as the API names it: tx_utilization, as every other
// part of intake does, where record.Metric says tx_util; tx_util itself, the name before,
// is still accepted (deprecated, docs/flowcache.md).
func histMetric(s string) (record.Metric, bool) {
	if s == "tx_utilization" {
		return record.TxUtil, true
	}
	return record.ParseMetric(s)
}

// histMetricName is histMetric's inverse: the name the API's JSON gives m.
func histMetricName(m record.Metric) string {
	if m == record.TxUtil {
		return "tx_utilization"
	}
	return m.String()
}

func (f *FlowCache) handleHistogram(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r) {
		return
	}
	sw, ms := r.PathValue("switch"), r.PathValue("metric")
	if sw == "e2e" {
		if ms != "latency" {
			api.BadParam(w, "metric", ms, "latency (the end-to-end histogram)")
			return
		}
		api.JSON(w, http.StatusOK, f.hist.E2E())
		return
	}
	id, err := strconv.ParseUint(sw, 10, 32)
	if err != nil {
		api.BadParam(w, "switch", sw, "a switch id 0-4294967295 or e2e")
		return
	}
	m, ok := histMetric(ms)
	if !ok {
		api.BadParam(w, "metric", ms, "hop_latency, queue_occupancy or tx_utilization")
		return
	}
	h, ok := f.hist.Histogram(uint32(id), m)
	if !ok {
		api.Error(w, http.StatusNotFound, "no histogram for switch "+sw)
		return
	}
	h.Metric = histMetricName(m) // the pushed histograms (Redis keys) keep record's name
	api.JSON(w, http.StatusOK, h)
}

// registerMetrics puts the cache's series on reg, read at scrape time.
func (f *FlowCache) registerMetrics(reg *metrics.Registry) {
	g := func(name, help string, fn func(Stats) float64) {
		reg.Gauge(name, help).Func(func() float64 { return fn(f.Stats()) })
	}
	c := func(name, help string, fn func(Stats) uint64) {
		reg.Counter(name, help).Func(func() float64 { return float64(fn(f.Stats())) })
	}
	g("intake_flowcache_flows", "Flows in the flow cache.", func(s Stats) float64 { return float64(s.Flows) })
	g("intake_flowcache_capacity", "Buckets of the flow cache (rows × buckets).", func(s Stats) float64 { return float64(s.Capacity) })
	g("intake_flowcache_bytes", "Bytes of the flow cache's table.", func(s Stats) float64 { return float64(s.Bytes) })
	c("intake_flowcache_reports_total", "Reports the flow cache processed.", func(s Stats) uint64 { return s.Reports })
	c("intake_flowcache_updates_total", "Flow bucket updates.", func(s Stats) uint64 { return s.Updates })
	c("intake_flowcache_truncated_paths_total", "Reports whose path was longer than flowcache.max_hops.", func(s Stats) uint64 { return s.TruncatedPaths })
	ev := reg.Counter("intake_flowcache_evictions_total", "Flows evicted from the flow cache, by reason (collision: least recently updated in a full row; idle: the ager).", "reason")
	ev.Func(func() float64 { return float64(f.Stats().Evictions.Collision) }, "collision")
	ev.Func(func() float64 { return float64(f.Stats().Evictions.Idle) }, "idle")
	c("intake_flowcache_ring_drops_total", "Evicted flow records dropped because their eviction ring was full.", func(s Stats) uint64 { return s.Rings.Drops })
	c("intake_flowcache_records_exported_total", "Evicted flow records taken from the eviction rings and handed to the sinks.", func(s Stats) uint64 { return s.Rings.Exported })
	c("intake_flowcache_histogram_switch_overflow_total", "Hop samples not binned because histograms.max_switches switches already had histograms.", func(s Stats) uint64 { return s.SwitchOverflow })
	f.hist.registerMetrics(reg)
}

// Drops is the flow cache's drops for the collector's status: evicted records a full ring
// dropped, samples of switches past histograms.max_switches and, in the kernel, updates the
// program could not apply.
func (f *FlowCache) Drops() map[string]uint64 {
	fs := f.Stats()
	m := map[string]uint64{"flowcache.rings": fs.Rings.Drops, "flowcache.histogram_switch_overflow": fs.SwitchOverflow}
	if k := fs.Kernel; k != nil {
		m["flowcache.kernel_lock_busy"] = k.LockBusy
	}
	return m
}
