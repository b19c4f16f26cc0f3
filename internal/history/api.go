package history

import (
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/telemetry"
)

// JSON is GET /api/v1/history: the points with from_ns ≤ t_ns ≤ to_ns, each the figures
// of the period that ends at t_ns.
type JSON struct {
	PeriodNS int64        `json:"period_ns"`
	FromNS   int64        `json:"from_ns"`
	ToNS     int64        `json:"to_ns"`
	Switches []SwitchJSON `json:"switches"`
	Flows    []FlowJSON   `json:"flows"`
}

// SwitchJSON is one switch's points, oldest first.
type SwitchJSON struct {
	SwitchID uint32            `json:"switch_id"`
	Points   []SwitchPointJSON `json:"points"`
}

// SwitchPointJSON is a switch's figures over one period. Hop latency, queue occupancy and
// tx utilization are over the flows through the switch updated in the period, their latest
// values (as GET /api/v1/topology's), with the detector's queue and port keys updated in
// the period; Flows counts those flows. Reports are the reports that carried a hop metric
// at the switch (the flow cache's histograms), Drops the dropped-packet reports it sent.
type SwitchPointJSON struct {
	TNS               int64   `json:"t_ns"`
	HopLatencyMeanNS  float64 `json:"hop_latency_mean_ns"`
	HopLatencyMaxNS   uint64  `json:"hop_latency_max_ns"`
	QueueOccupancyMax uint64  `json:"queue_occupancy_max"`
	TxUtilizationMax  uint64  `json:"tx_utilization_max"`
	Reports           uint64  `json:"reports"`
	Drops             uint64  `json:"drops"`
	Flows             uint32  `json:"flows"`
}

// FlowJSON is one flow's points, oldest first: Flow as GET /api/v1/flowcache/top writes a
// flow's 5-tuple, Text in the flow notation (telemetry.FlowString).
type FlowJSON struct {
	Flow   FlowKeyJSON     `json:"flow"`
	Text   string          `json:"text"`
	Points []FlowPointJSON `json:"points"`
}

// FlowKeyJSON is a 5-tuple, addresses as text.
type FlowKeyJSON struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Sport uint16 `json:"sport"`
	Dport uint16 `json:"dport"`
	Proto uint8  `json:"proto"`
}

// FlowPointJSON is a flow's figures over one period: its reports in the period, the mean
// end-to-end latency over them and the latest end-to-end latency at the sample (the flow
// cache keeps a flow's latest and its running sum, not its largest: so the name says
// latest); both 0 when the period's reports carried no hop latency.
type FlowPointJSON struct {
	TNS             int64   `json:"t_ns"`
	LatencyMeanNS   float64 `json:"latency_mean_ns"`
	LatencyLatestNS uint64  `json:"latency_latest_ns"`
	Packets         uint64  `json:"packets"`
}

// Filter selects what Query answers: with neither set, every switch and flow; with one or
// both, only those (a switch filter alone answers no flows, a flow filter alone no
// switches).
type Filter struct {
	Switch    uint32
	HasSwitch bool
	Flow      *telemetry.FlowKey
	// Flows, when above 0, keeps only that many flows (those with the most reports over
	// the range): the console's charts draw a few, and an hour of 1000 flows is large.
	Flows int
}

// Query returns the points with from ≤ t ≤ to: switches by id, flows by their reports over
// the range (most first, then by text).
func (h *History) Query(from, to int64, f Filter) JSON {
	out := JSON{PeriodNS: int64(h.cfg.Period), FromNS: from, ToNS: to, Switches: []SwitchJSON{}, Flows: []FlowJSON{}}
	all := !f.HasSwitch && f.Flow == nil
	sws := map[uint32]int{}
	fls := map[telemetry.FlowKey]int{}
	total := []uint64{}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.head < 0 {
		return out
	}
	n := len(h.slots)
	for k := 1; k <= n; k++ { // oldest first
		i := (h.head + k) % n
		s := &h.slots[i]
		if s.t == 0 || s.t < from || s.t > to {
			continue
		}
		if all || f.HasSwitch {
			for _, p := range h.sw[i*h.cfg.MaxSwitches:][:s.nsw] {
				if f.HasSwitch && p.id != f.Switch {
					continue
				}
				j, ok := sws[p.id]
				if !ok {
					j = len(out.Switches)
					sws[p.id] = j
					out.Switches = append(out.Switches, SwitchJSON{SwitchID: p.id})
				}
				out.Switches[j].Points = append(out.Switches[j].Points, SwitchPointJSON{TNS: s.t,
					HopLatencyMeanNS: p.latMean, HopLatencyMaxNS: p.latMax, QueueOccupancyMax: p.queueMax,
					TxUtilizationMax: p.txMax, Reports: p.repts, Drops: p.drops, Flows: p.flows})
			}
		}
		if all || f.Flow != nil {
			for _, p := range h.fl[i*h.cfg.MaxFlows:][:s.nfl] {
				if f.Flow != nil && p.key != *f.Flow {
					continue
				}
				j, ok := fls[p.key]
				if !ok {
					j = len(out.Flows)
					fls[p.key] = j
					k := p.key
					out.Flows = append(out.Flows, FlowJSON{Flow: FlowKeyJSON{Src: k.SrcAddr().String(), Dst: k.DstAddr().String(),
						Sport: k.SrcPort, Dport: k.DstPort, Proto: k.Proto}, Text: k.String()})
					total = append(total, 0)
				}
				total[j] += uint64(p.packets)
				out.Flows[j].Points = append(out.Flows[j].Points, FlowPointJSON{TNS: s.t, LatencyMeanNS: p.latMean,
					LatencyLatestNS: p.latLatest, Packets: uint64(p.packets)})
			}
		}
	}
	sort.Slice(out.Switches, func(i, j int) bool { return out.Switches[i].SwitchID < out.Switches[j].SwitchID })
	idx := make([]int, len(out.Flows))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := idx[a], idx[b]
		if total[x] != total[y] {
			return total[x] > total[y]
		}
		return out.Flows[x].Text < out.Flows[y].Text
	})
	if f.Flows > 0 && len(idx) > f.Flows {
		idx = idx[:f.Flows]
	}
	flows := make([]FlowJSON, len(idx))
	for i, j := range idx {
		flows[i] = out.Flows[j]
	}
	out.Flows = flows
	return out
}

// RegisterAPI adds GET /api/v1/history?range=&from=&to=&switch=&flow=&flows= (docs/api.md).
func (h *History) RegisterAPI(s *api.Server) {
	s.HandleFunc("GET /api/v1/history", h.handle)
}

// rangeOf reads the range parameters of r: to (Unix ns, default now), from (Unix ns, default
// to − range), range (a duration, default and at most the retention).
func (h *History) rangeOf(r *http.Request) (from, to int64, e *api.ParamError) {
	q := r.URL.Query()
	ret := h.cfg.Retention
	rng := ret
	if s := q.Get("range"); q.Has("range") {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, 0, &api.ParamError{Param: "range", Value: s, Allowed: "a positive duration such as 15m (at most history.retention, " + ret.String() + ")"}
		}
		rng = min(d, ret)
	}
	ns := func(name string, def int64) (int64, *api.ParamError) {
		s := q.Get(name)
		if !q.Has(name) {
			return def, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, &api.ParamError{Param: name, Value: s, Allowed: "a time in Unix nanoseconds"}
		}
		return v, nil
	}
	if to, e = ns("to", h.deps.Now().UnixNano()); e != nil {
		return
	}
	if from, e = ns("from", to-int64(rng)); e != nil {
		return
	}
	if from > to {
		return 0, 0, &api.ParamError{Param: "from", Value: q.Get("from"), Allowed: "at most to (" + strconv.FormatInt(to, 10) + ")"}
	}
	return from, to, nil
}

func (h *History) handle(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, append([]string{"range", "from", "to", "switch", "flows"}, api.FlowParamNames...)...) {
		return
	}
	from, to, e := h.rangeOf(r)
	if e != nil {
		api.JSON(w, http.StatusBadRequest, e.Body())
		return
	}
	var f Filter
	q := r.URL.Query()
	var ok bool
	if f.Flows, ok = api.IntParam(w, r, "flows", 0, 0, 1<<20, "the number of flows to keep, 0 (all) or more"); !ok {
		return
	}
	if f.Switch, f.HasSwitch, e = api.SwitchParam(q); e != nil {
		api.JSON(w, http.StatusBadRequest, e.Body())
		return
	}
	if api.HasFlow(q) {
		k, ok := api.FlowParams(w, r)
		if !ok {
			return
		}
		f.Flow = &k
	}
	api.JSON(w, http.StatusOK, h.Query(from, to, f))
}
