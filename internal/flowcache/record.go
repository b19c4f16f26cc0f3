package flowcache

import (
	"time"

	"github.com/intake-int/intake/record"
)

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

// RecordJSON renders r; reason is included for evicted records.
func RecordJSON(r *record.Record) FlowJSON {
	j := FlowJSON{
		Src: r.Flow.SrcAddr().String(), Dst: r.Flow.DstAddr().String(),
		Sport: r.Flow.SrcPort, Dport: r.Flow.DstPort, Proto: r.Flow.Proto,
		Packets: r.Packets, FirstSeen: rfc(r.First), LastSeen: rfc(r.Last),
		Path: r.Path(), Truncated: r.Truncated, Hops: make([]HopJSON, len(r.Hops)),
	}
	if r.Reason != record.ReasonNone {
		j.Reason = r.Reason.String()
	}
	if r.LatCount > 0 {
		j.Latency = LatencyJSON{Latest: ptr(r.LatLatest), Mean: ptr(r.LatMean())}
	}
	for i := range r.Hops {
		h := &r.Hops[i]
		hj := HopJSON{Hop: i + 1, NodeID: h.NodeID}
		lat := [record.NumMetrics]**uint64{&hj.Latest.HopLatency, &hj.Latest.QueueOccupancy, &hj.Latest.TxUtil}
		mean := [record.NumMetrics]**float64{&hj.Mean.HopLatency, &hj.Mean.QueueOccupancy, &hj.Mean.TxUtil}
		for m := range record.NumMetrics {
			if h.Count[m] > 0 {
				*lat[m] = ptr(h.Latest[m])
				*mean[m] = ptr(h.Mean(m))
			}
		}
		j.Hops[i] = hj
	}
	return j
}
