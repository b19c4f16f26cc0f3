package flowcache

import (
	"net/http"
	"sort"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/record"
)

// The topology is what the flows in the cache have shown of the network: every switch a
// path went through and every pair of switches one hop apart on a path, with the hop
// values the flows last reported there. It is the web console's fabric map; nothing here
// knows the real wiring, so a link no flow crossed is not drawn.

// TopologyJSON is GET /api/v1/topology.
type TopologyJSON struct {
	Flows    int          `json:"flows"`
	Switches []SwitchJSON `json:"switches"`
	Links    []LinkJSON   `json:"links"`
	// Truncated says that the paths went through more than the limit of switches or of
	// links: those first met in the walk are in the answer, the others are left out.
	Truncated bool `json:"truncated,omitempty"`
}

// TopologyLimit is GET /api/v1/topology's default limit of switches and of links, and
// TopologyMax its largest: the answer's size (about 300 bytes a switch or link) is bounded
// however many distinct switch ids the cached flows carry (docs/config.md, "Budget").
const (
	TopologyLimit = 4096
	TopologyMax   = 65536
)

// SwitchJSON is one switch of the observed topology. Depth is the fewest hops from it to
// either end of a path it is on (0: a first or last hop, an edge switch; in a fat tree the
// spines have the largest), for drawing it in layers.
type SwitchJSON struct {
	ID     uint32     `json:"id"`
	Flows  int        `json:"flows"`
	Depth  int        `json:"depth"`
	Latest LatestJSON `json:"latest"`
	First  int        `json:"first"` // flows whose path starts here
	Last   int        `json:"last"`  // flows whose path ends here
}

// LinkJSON is a directed link: some flow's path went from switch From to switch To next.
// Latest holds From's hop values on those flows: its egress towards To.
type LinkJSON struct {
	From   uint32     `json:"from"`
	To     uint32     `json:"to"`
	Flows  int        `json:"flows"`
	Latest LatestJSON `json:"latest"`
}

// LatestJSON summarises the latest value of each metric over the flows through a switch or
// link; a metric no flow carried is omitted.
type LatestJSON struct {
	HopLatency     *StatJSON `json:"hop_latency,omitempty"`
	QueueOccupancy *StatJSON `json:"queue_occupancy,omitempty"`
	TxUtil         *StatJSON `json:"tx_util,omitempty"`
}

// StatJSON is the mean and largest of the flows' latest values, and N the flows that
// carried the metric (what the mean is over: a cluster's merge weighs each member's by it).
type StatJSON struct {
	Mean float64 `json:"mean"`
	Max  uint64  `json:"max"`
	N    uint64  `json:"n"`
}

// topoAcc accumulates one switch's or link's latest values.
type topoAcc struct {
	flows int
	n     [record.NumMetrics]uint64
	sum   [record.NumMetrics]uint64
	max   [record.NumMetrics]uint64
}

func (a *topoAcc) add(h *record.HopRecord) {
	a.flows++
	for m := range record.NumMetrics {
		if h.Count[m] > 0 {
			v := h.Latest[m]
			a.n[m]++
			a.sum[m] += v
			a.max[m] = max(a.max[m], v)
		}
	}
}

func (a *topoAcc) stats() LatestJSON {
	var s LatestJSON
	dst := [record.NumMetrics]**StatJSON{&s.HopLatency, &s.QueueOccupancy, &s.TxUtil}
	for m := range record.NumMetrics {
		if a.n[m] > 0 {
			*dst[m] = &StatJSON{Mean: float64(a.sum[m]) / float64(a.n[m]), Max: a.max[m], N: a.n[m]}
		}
	}
	return s
}

// Topology returns the switches and links the cached flows' paths went through, switches
// by id and links by (from, to), at most limit of each (Truncated when there were more).
func (f *FlowCache) Topology(limit int) TopologyJSON {
	type sw struct {
		topoAcc
		depth       int
		first, last int
	}
	type link struct{ from, to uint32 }
	sws := map[uint32]*sw{}
	links := map[link]*topoAcc{}
	flows, truncated := 0, false
	var rec record.Record
	f.walkAll(-1<<63, func(w []uint64, _ *bucketHdr) {
		f.t.decode(w, &rec)
		flows++
		n := len(rec.Hops)
		for i := range rec.Hops {
			h := &rec.Hops[i]
			s := sws[h.NodeID]
			if s == nil && len(sws) < limit {
				s = &sw{depth: n}
				sws[h.NodeID] = s
			}
			if s == nil {
				truncated = true
			} else {
				s.add(h)
				s.depth = min(s.depth, i, n-1-i)
				if i == 0 {
					s.first++
				}
				if i == n-1 {
					s.last++
				}
			}
			if i+1 < n {
				k := link{h.NodeID, rec.Hops[i+1].NodeID}
				l := links[k]
				if l == nil && len(links) < limit {
					l = &topoAcc{}
					links[k] = l
				}
				if l == nil {
					truncated = true
				} else {
					l.add(h)
				}
			}
		}
	})
	out := TopologyJSON{Flows: flows, Truncated: truncated, Switches: make([]SwitchJSON, 0, len(sws)), Links: make([]LinkJSON, 0, len(links))}
	for id, s := range sws {
		out.Switches = append(out.Switches, SwitchJSON{ID: id, Flows: s.flows, Depth: s.depth,
			Latest: s.stats(), First: s.first, Last: s.last})
	}
	sort.Slice(out.Switches, func(i, j int) bool { return out.Switches[i].ID < out.Switches[j].ID })
	for k, l := range links {
		out.Links = append(out.Links, LinkJSON{From: k.from, To: k.to, Flows: l.flows, Latest: l.stats()})
	}
	sort.Slice(out.Links, func(i, j int) bool {
		a, b := &out.Links[i], &out.Links[j]
		return a.From < b.From || (a.From == b.From && a.To < b.To)
	})
	return out
}

func (f *FlowCache) handleTopology(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "limit") {
		return
	}
	if n, ok := api.IntParam(w, r, "limit", TopologyLimit, 1, TopologyMax, "an integer 1-65536"); ok {
		api.JSON(w, http.StatusOK, f.Topology(n))
	}
}
