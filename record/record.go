// Package record holds the flow cache's output types on the floor, where the flow cache that
// makes them and the sinks that store them (package export and its transports) both import
// them without importing each other: a flow's aggregates (Record, HopRecord, by Metric) and a
// histogram's snapshot (Histogram). They are the SmartNIC sink's flow records (§III-C) and
// distribution arrays (§III-D). How the API renders a Record stays with the flow cache
// (flowcache.FlowJSON).
package record

import (
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// Metric is one of the per-hop metrics the cache keeps (§III-B: hop latency, queue
// occupancy, link utilization).
type Metric int

const (
	HopLatency Metric = iota
	QueueOccupancy
	TxUtil
	NumMetrics
)

var metricNames = [...]string{"hop_latency", "queue_occupancy", "tx_util"}

// String returns the metric's JSON and API name.
func (m Metric) String() string {
	if m >= 0 && int(m) < len(metricNames) {
		return metricNames[m]
	}
	return "unknown"
}

// ParseMetric is the inverse of Metric.String.
func ParseMetric(s string) (Metric, bool) {
	for i, n := range metricNames {
		if n == s {
			return Metric(i), true
		}
	}
	return 0, false
}

// Reason is why a record left the cache (ReasonNone: it did not; a live flow copied out).
type Reason uint8

const (
	ReasonNone      Reason = iota // a live flow (a query or a periodic hash write)
	ReasonCollision               // least recently updated in a full row, for a new flow
	ReasonIdle                    // not updated for idle_timeout (the ager)
)

var reasonNames = [...]string{"live", "collision", "idle"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// Record is one flow's aggregates: a live bucket copied out (Lookup, Top, the periodic Redis
// hashes) or an evicted one (the eviction rings' records, Reason set).
type Record struct {
	Flow      telemetry.FlowKey
	Reason    Reason
	Packets   uint64
	First     int64 // receive time of the first report since the flow entered the cache
	Last      int64 // receive time of the last report
	LatLatest uint64
	LatSum    uint64
	LatCount  uint64
	Truncated bool
	Hops      []HopRecord // source first
}

// HopRecord is one hop's aggregates, indexed by Metric.
type HopRecord struct {
	NodeID uint32
	Latest [NumMetrics]uint64
	Count  [NumMetrics]uint64 // reports that carried the metric at this hop
	Sum    [NumMetrics]uint64
}

// LatMean is the mean end-to-end latency (0 without samples).
func (r *Record) LatMean() float64 {
	if r.LatCount == 0 {
		return 0
	}
	return float64(r.LatSum) / float64(r.LatCount)
}

// Mean is metric m's mean at this hop (0 without samples).
func (h *HopRecord) Mean(m Metric) float64 {
	if h.Count[m] == 0 {
		return 0
	}
	return float64(h.Sum[m]) / float64(h.Count[m])
}

// Path returns the node ids, source first.
func (r *Record) Path() []uint32 {
	p := make([]uint32, len(r.Hops))
	for i := range r.Hops {
		p[i] = r.Hops[i].NodeID
	}
	return p
}

// PathString is the path as node ids joined by ':' (INTCollector's form).
func (r *Record) PathString() string { return string(event.AppendPath(nil, r.Path())) }

// Histogram is one histogram's snapshot, as GET /api/v1/histograms/{switch}/{metric} shows
// it and the Redis sink writes it: the non-empty bins, lowest first; the last bin has no
// "hi" (it holds everything above "lo").
type Histogram struct {
	Switch string `json:"switch"`
	Metric string `json:"metric"`
	Scale  string `json:"scale"`
	Bins   int    `json:"bins"`
	Total  uint64 `json:"total"`
	Counts []Bin  `json:"counts"`
}

// Bin is one bin: values in [lo, hi).
type Bin struct {
	Lo    uint64  `json:"lo"`
	Hi    *uint64 `json:"hi,omitempty"`
	Count uint64  `json:"count"`
}
