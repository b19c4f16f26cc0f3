package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/detect"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/metrics"
)

// The SmartNIC sink's flow cache (issue 6) in the pipeline: the FlowCache processor, its
// Redis export (evicted records, latest per-flow hashes, and the detector's T/C events
// through the sink's own bus ring), its counters and its HTTP endpoints:
// /api/v1/flowcache/flow, /api/v1/flowcache/top, /api/v1/flowcache/stats,
// /api/v1/histograms and /api/v1/histograms/{switch}/{metric}.

func init() {
	serveProcessors = append(serveProcessors, newFlowCacheProcessor)
}

// flowCacheProc is the cache as ingest sees it, starting and stopping the Redis sink beside.
type flowCacheProc struct {
	*flowcache.FlowCache
	redis      *export.RedisSink
	influx     *export.InfluxRecords // evicted records to export.influxdb
	bus        *event.Bus
	ring       int
	histPeriod time.Duration
	histStop   chan struct{}
	histDone   chan struct{}
}

func newFlowCacheProcessor(env *procEnv) (ingest.Processor, error) {
	cfg := env.Cfg.FlowCache
	if !cfg.Enabled {
		return nil, nil
	}
	fc := flowcache.New(cfg)
	p := &flowCacheProc{FlowCache: fc, bus: env.Bus, ring: env.Cfg.Detect.Ring}
	reg := env.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if rc := env.Cfg.Export.Redis; rc.Address != "" {
		p.redis = export.NewRedis(env.Cfg.Export, reg)
		fc.AddSink(p.redis.OfferRecord)
		if rc.HashPeriod > 0 {
			fc.SetLatestSink(rc.HashPeriod, p.redis.OfferLatest)
			p.histPeriod = rc.HashPeriod
		}
	}
	if env.Cfg.Export.InfluxDB.URL != "" {
		p.influx = export.NewInfluxRecords(env.Cfg.Export, reg)
		fc.AddSink(p.influx.OfferRecord)
	}
	registerFlowCacheMetrics(reg, p)
	if env.API != nil {
		registerFlowCacheAPI(env.API, fc, p.stats)
	}
	return p, nil
}

func (p *flowCacheProc) Start(workers int) error {
	if err := p.FlowCache.Start(workers); err != nil {
		return err
	}
	if p.influx != nil {
		if err := p.influx.Start(); err != nil {
			return err
		}
	}
	if p.redis == nil {
		return nil
	}
	if err := p.redis.Start(p.bus, p.ring); err != nil {
		return err
	}
	if p.histPeriod > 0 {
		p.histStop, p.histDone = make(chan struct{}), make(chan struct{})
		go p.exportHistograms()
	}
	return nil
}

// exportHistograms writes every histogram to Redis once per hash_period (the paper's host
// reading the distribution arrays, §III-D).
func (p *flowCacheProc) exportHistograms() {
	defer close(p.histDone)
	t := time.NewTicker(p.histPeriod)
	defer t.Stop()
	for {
		select {
		case <-p.histStop:
			return
		case <-t.C:
		}
		h := p.Histograms()
		for _, sw := range h.Switches() {
			for m := range flowcache.NumMetrics {
				if j, ok := h.Histogram(sw, m); ok && j.Total > 0 {
					p.redis.OfferHistogram(&j)
				}
			}
		}
		if j := h.E2E(); j.Total > 0 {
			p.redis.OfferHistogram(&j)
		}
	}
}

func (p *flowCacheProc) Stop() error {
	err := p.FlowCache.Stop() // drains the rings into the sinks' queues first
	if p.influx != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if e := p.influx.Stop(ctx); err == nil {
			err = e
		}
		cancel()
	}
	if p.histStop != nil {
		close(p.histStop)
		<-p.histDone
		p.histStop = nil
	}
	if p.redis != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if e := p.redis.Stop(ctx); err == nil {
			err = e
		}
	}
	return err
}

// flowCacheStats is GET /api/v1/flowcache/stats: the cache's counters, the event rings
// (every consumer of the event bus, the R_I rings) and the Redis sink's counters.
type flowCacheStats struct {
	flowcache.Stats
	EventRings []eventRing         `json:"event_rings"`
	Redis      *export.RedisCounts `json:"redis,omitempty"`
}

type eventRing struct {
	Consumer string `json:"consumer"`
	Size     int    `json:"size"`
	Pending  int    `json:"pending"`
	Drops    uint64 `json:"drops"`
}

func (p *flowCacheProc) stats() flowCacheStats {
	st := flowCacheStats{Stats: p.FlowCache.Stats(), EventRings: []eventRing{}}
	if p.bus != nil {
		for _, c := range p.bus.Consumers() {
			st.EventRings = append(st.EventRings, eventRing{Consumer: c.Name(), Size: c.Cap(), Pending: c.Len(), Drops: c.Overflow()})
		}
	}
	if p.redis != nil {
		c := p.redis.Counts()
		st.Redis = &c
	}
	return st
}

func registerFlowCacheMetrics(reg *metrics.Registry, p *flowCacheProc) {
	fc := p.FlowCache
	g := func(name, help string, fn func(flowcache.Stats) float64) {
		reg.Gauge(name, help).Func(func() float64 { return fn(fc.Stats()) })
	}
	c := func(name, help string, fn func(flowcache.Stats) uint64) {
		reg.Counter(name, help).Func(func() float64 { return float64(fn(fc.Stats())) })
	}
	g("intake_flowcache_flows", "Flows in the flow cache.", func(s flowcache.Stats) float64 { return float64(s.Flows) })
	g("intake_flowcache_capacity", "Buckets of the flow cache (rows × buckets).", func(s flowcache.Stats) float64 { return float64(s.Capacity) })
	g("intake_flowcache_bytes", "Bytes of the flow cache's table.", func(s flowcache.Stats) float64 { return float64(s.Bytes) })
	c("intake_flowcache_reports_total", "Reports the flow cache processed.", func(s flowcache.Stats) uint64 { return s.Reports })
	c("intake_flowcache_updates_total", "Flow bucket updates.", func(s flowcache.Stats) uint64 { return s.Updates })
	c("intake_flowcache_truncated_paths_total", "Reports whose path was longer than flowcache.max_hops.", func(s flowcache.Stats) uint64 { return s.TruncatedPaths })
	ev := reg.Counter("intake_flowcache_evictions_total", "Flows evicted from the flow cache, by reason (collision: least recently updated in a full row; idle: the ager).", "reason")
	ev.Func(func() float64 { return float64(fc.Stats().Evictions.Collision) }, "collision")
	ev.Func(func() float64 { return float64(fc.Stats().Evictions.Idle) }, "idle")
	c("intake_flowcache_ring_drops_total", "Evicted flow records dropped because their eviction ring was full.", func(s flowcache.Stats) uint64 { return s.Rings.Drops })
	c("intake_flowcache_records_exported_total", "Evicted flow records taken from the eviction rings and handed to the sinks.", func(s flowcache.Stats) uint64 { return s.Rings.Exported })
	c("intake_flowcache_histogram_switch_overflow_total", "Hop samples not binned because histograms.max_switches switches already had histograms.", func(s flowcache.Stats) uint64 { return s.SwitchOverflow })
	if p.redis != nil {
		// The same family as the detector's consumers (proc_detect.go): the sink's R_I ring.
		reg.Counter("intake_event_ring_overflow_total", "Events dropped because a bus consumer's ring was full, by consumer.", "consumer").
			Func(func() float64 {
				if c := p.redis.Consumer(); c != nil {
					return float64(c.Overflow())
				}
				return 0
			}, "redis")
	}
}

// registerFlowCacheAPI adds the flow cache's endpoints.
func registerFlowCacheAPI(srv *api.Server, fc *flowcache.FlowCache, stats func() flowCacheStats) {
	srv.Handle("GET /api/v1/flowcache/flow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "src", "dst", "sport", "dport", "proto") {
			return
		}
		q := r.URL.Query()
		num := func(name string, bits int) (uint64, bool) {
			s := q.Get(name)
			v, err := strconv.ParseUint(s, 10, bits)
			if err != nil {
				api.BadParam(w, name, s, "an integer 0-"+strconv.FormatUint(1<<bits-1, 10))
				return 0, false
			}
			return v, true
		}
		sp, ok1 := num("sport", 16)
		if !ok1 {
			return
		}
		dp, ok2 := num("dport", 16)
		if !ok2 {
			return
		}
		pr, ok3 := num("proto", 8)
		if !ok3 {
			return
		}
		k, ok := detect.ParseFlow(q.Get("src"), q.Get("dst"), uint16(sp), uint16(dp), uint8(pr))
		if !ok {
			api.BadParam(w, "src", q.Get("src")+","+q.Get("dst"), "IPv4 or IPv6 addresses of one family for src and dst")
			return
		}
		rec, found := fc.Lookup(&k)
		if !found {
			api.Error(w, http.StatusNotFound, "flow not in the flow cache")
			return
		}
		api.JSON(w, http.StatusOK, rec.JSON())
	}))
	srv.Handle("GET /api/v1/flowcache/top", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "by", "n") {
			return
		}
		q := r.URL.Query()
		by := q.Get("by")
		if by == "" {
			by = "packets"
		}
		if by != "packets" && by != "latency" {
			api.BadParam(w, "by", by, "latency or packets")
			return
		}
		n := 10
		if s := q.Get("n"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 || v > 1000 {
				api.BadParam(w, "n", s, "an integer 1-1000")
				return
			}
			n = v
		}
		recs := fc.Top(by, n)
		out := topJSON{By: by, N: n, Flows: make([]flowcache.FlowJSON, len(recs))}
		for i := range recs {
			out.Flows[i] = recs[i].JSON()
		}
		api.JSON(w, http.StatusOK, out)
	}))
	srv.Handle("GET /api/v1/flowcache/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r) {
			return
		}
		api.JSON(w, http.StatusOK, stats())
	}))
	srv.Handle("GET /api/v1/histograms", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r) {
			return
		}
		h := fc.Histograms()
		api.JSON(w, http.StatusOK, histListJSON{Switches: append([]uint32{}, h.Switches()...),
			Metrics: []string{"hop_latency", "queue_occupancy", "tx_util"}, E2E: []string{"latency"}})
	}))
	srv.Handle("GET /api/v1/histograms/{switch}/{metric}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r) {
			return
		}
		sw, ms := r.PathValue("switch"), r.PathValue("metric")
		if sw == "e2e" {
			if ms != "latency" {
				api.BadParam(w, "metric", ms, "latency (the end-to-end histogram)")
				return
			}
			api.JSON(w, http.StatusOK, fc.Histograms().E2E())
			return
		}
		id, err := strconv.ParseUint(sw, 10, 32)
		if err != nil {
			api.BadParam(w, "switch", sw, "a switch id 0-4294967295 or e2e")
			return
		}
		m, ok := flowcache.ParseMetric(ms)
		if !ok {
			api.BadParam(w, "metric", ms, "hop_latency, queue_occupancy or tx_util")
			return
		}
		h, ok := fc.Histograms().Histogram(uint32(id), m)
		if !ok {
			api.Error(w, http.StatusNotFound, "no histogram for switch "+sw)
			return
		}
		api.JSON(w, http.StatusOK, h)
	}))
}

type topJSON struct {
	By    string               `json:"by"`
	N     int                  `json:"n"`
	Flows []flowcache.FlowJSON `json:"flows"`
}

type histListJSON struct {
	Switches []uint32 `json:"switches"`
	Metrics  []string `json:"metrics"`
	E2E      []string `json:"e2e"`
}
