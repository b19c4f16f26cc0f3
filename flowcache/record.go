package flowcache

import (
	"time"

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

// FlowJSON is a flow as GET /api/v1/flowcache/flow and /top show it.
type FlowJSON struct {
	Src       string      `json:"src"`
	Dst       string      `json:"dst"`
	Sport     uint16      `json:"sport"`
	Dport     uint16      `json:"dport"`
	Proto     uint8       `json:"proto"`
	Packets   uint64      `json:"packets"`
	FirstSeen string      `json:"first_seen"`
	LastSeen  string      `json:"last_seen"`
	Latency   LatencyJSON `json:"latency"`
	Path      []uint32    `json:"path"`
	Truncated bool        `json:"truncated"`
	Hops      []HopJSON   `json:"hops"`
	Reason    string      `json:"reason,omitempty"`
}

// LatencyJSON is the end-to-end latency (sum of hop latencies): null members without
// samples.
type LatencyJSON struct {
	Latest *uint64  `json:"latest"`
	Mean   *float64 `json:"mean"`
}

// HopJSON is one hop, source first: Hop is its number from the source (1: the first
// switch of the path, as every hop list intake shows, docs/hops.md).
type HopJSON struct {
	Hop    int        `json:"hop"`
	NodeID uint32     `json:"node_id"`
	Latest ValuesJSON `json:"latest"`
	Mean   MeansJSON  `json:"mean"`
}

// ValuesJSON are a hop's latest values: each the newest the flow's reports carried at the
// hop; a metric the reports did not carry is omitted.
type ValuesJSON struct {
	HopLatency     *uint64 `json:"hop_latency,omitempty"`
	QueueOccupancy *uint64 `json:"queue_occupancy,omitempty"`
	TxUtil         *uint64 `json:"tx_util,omitempty"`
}

// MeansJSON are a hop's means over the flow's reports since it entered the cache.
type MeansJSON struct {
	HopLatency     *float64 `json:"hop_latency,omitempty"`
	QueueOccupancy *float64 `json:"queue_occupancy,omitempty"`
	TxUtil         *float64 `json:"tx_util,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func rfc(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// JSON renders r; reason is included for evicted records.
func (r *Record) JSON() FlowJSON {
	j := FlowJSON{
		Src: r.Flow.SrcAddr().String(), Dst: r.Flow.DstAddr().String(),
		Sport: r.Flow.SrcPort, Dport: r.Flow.DstPort, Proto: r.Flow.Proto,
		Packets: r.Packets, FirstSeen: rfc(r.First), LastSeen: rfc(r.Last),
		Path: r.Path(), Truncated: r.Truncated, Hops: make([]HopJSON, len(r.Hops)),
	}
	if r.Reason != ReasonNone {
		j.Reason = r.Reason.String()
	}
	if r.LatCount > 0 {
		j.Latency = LatencyJSON{Latest: ptr(r.LatLatest), Mean: ptr(r.LatMean())}
	}
	for i := range r.Hops {
		h := &r.Hops[i]
		hj := HopJSON{Hop: i + 1, NodeID: h.NodeID}
		lat := [NumMetrics]**uint64{&hj.Latest.HopLatency, &hj.Latest.QueueOccupancy, &hj.Latest.TxUtil}
		mean := [NumMetrics]**float64{&hj.Mean.HopLatency, &hj.Mean.QueueOccupancy, &hj.Mean.TxUtil}
		for m := range NumMetrics {
			if h.Count[m] > 0 {
				*lat[m] = ptr(h.Latest[m])
				*mean[m] = ptr(h.Mean(m))
			}
		}
		j.Hops[i] = hj
	}
	return j
}

// PathString is the path as node ids joined by ':' (INTCollector's form).
func (r *Record) PathString() string { return string(event.AppendPath(nil, r.Path())) }
