package export

import (
	"math"
	"net/netip"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/record"
)

// The sinks' budgets (docs/config.md, "Budget"): each sink's package computes what its
// queues hold when full, each queue at its configured size, of items of the largest size the
// sink makes them, computed by the sink's own encoder from the largest record of the flow
// cache (WorstRecord) and the largest event (WorstEvent). Each package's TestBudgetReal
// fills the queues and measures them.

// Records is what the sinks' budgets need of the flow cache: whether it is on (its records
// reach the sinks), and the shape of its largest record and histogram.
type Records struct {
	Enabled       bool
	MaxHops       int // flowcache.max_hops
	HistogramBins int // flowcache.histograms.bins
}

// SinkBase is what a sink takes beside its queue's items: the sink, its counters and
// encoder state, its goroutine (measured: at most 18 KiB, TestBudgetReal).
const SinkBase = 32 << 10

// AllocBytes is what an allocation of n bytes takes: n rounded up to 16 (the small size
// classes' step, and the tiny allocator's block).
func AllocBytes(n int) int64 { return int64(n+15) &^ 15 }

// WorstRecord is the largest record the flow cache fc evicts: IPv6, every hop of max_hops
// with every metric, the largest values.
func WorstRecord(fc Records) *record.Record {
	r := &record.Record{Reason: record.ReasonIdle, Packets: math.MaxUint64, First: math.MinInt64, Last: math.MaxInt64,
		LatLatest: math.MaxUint64, LatSum: math.MaxUint64 / 3, LatCount: 3, Hops: make([]record.HopRecord, max(fc.MaxHops, 0))}
	r.Flow.SetAddrs(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = math.MaxUint16, math.MaxUint16, math.MaxUint8
	for i := range r.Hops {
		h := &r.Hops[i]
		h.NodeID = math.MaxUint32
		for m := range record.NumMetrics {
			h.Latest[m], h.Count[m], h.Sum[m] = math.MaxUint64, 3, math.MaxUint64/3
		}
	}
	return r
}

// WorstEvent is the event with the most and longest Redis fields: a flow's at a switch.
func WorstEvent() event.Event {
	e := event.Event{Time: math.MinInt64, Kind: event.KindChange, Scope: event.ScopeFlow, Measurement: event.FlowHopLatency,
		Prev: math.MaxUint64, Value: math.MaxUint64, Threshold: math.MaxUint64}
	e.Key.Flow.SetAddrs(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	e.Key.Flow.SrcPort, e.Key.Flow.DstPort, e.Key.Flow.Proto = math.MaxUint16, math.MaxUint16, math.MaxUint8
	e.Key.Switch = math.MaxUint32
	return e
}
