package flowcache

import (
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// SwitchLatency is one switch's hop latency over an interval: the sum and count of its
// samples, and the largest latest value among the flows through it.
type SwitchLatency struct {
	Node           uint32
	Sum, N, Latest uint64
}

// A Recent reads what changed in the cache between calls, for a live view (the demo's
// screen): the flows updated lately, and per switch the hop-latency samples since the last
// call, from the per-hop running sums of every updated flow, differenced.
type Recent struct {
	fc   *FlowCache
	prev map[recentHop]recentSum
}

type recentHop struct {
	flow telemetry.FlowKey
	node uint32
}

type recentSum struct {
	sum, n uint64
	last   int64 // the flow's last update when read
}

// NewRecent returns a Recent whose first Read counts every sample so far.
func (f *FlowCache) NewRecent() *Recent {
	return &Recent{fc: f, prev: map[recentHop]recentSum{}}
}

// Read returns the flows updated at or after since (Unix ns), and the switches whose hop
// latency had samples since the last Read (in no particular order).
func (r *Recent) Read(since int64) ([]record.Record, []SwitchLatency) {
	var flows []record.Record
	sws := map[uint32]*SwitchLatency{}
	newest := int64(0)
	r.fc.WalkUpdated(since, func(rec *record.Record) {
		flows = append(flows, *rec)
		newest = max(newest, rec.Last)
		for _, h := range rec.Hops {
			k := recentHop{rec.Flow, h.NodeID}
			cur := recentSum{h.Sum[record.HopLatency], h.Count[record.HopLatency], rec.Last}
			prev, ok := r.prev[k]
			r.prev[k] = cur
			if !ok || cur.n < prev.n { // new, or evicted and back
				prev = recentSum{}
			}
			if cur.n == prev.n {
				continue
			}
			s := sws[h.NodeID]
			if s == nil {
				s = &SwitchLatency{Node: h.NodeID}
				sws[h.NodeID] = s
			}
			s.Sum += cur.sum - prev.sum
			s.N += cur.n - prev.n
			s.Latest = max(s.Latest, h.Latest[record.HopLatency])
		}
	})
	// A flow not updated lately keeps its sums until the ager must have evicted it, so
	// that its next update counts only the new samples. Without an ager, entries stay
	// (at most one per flow and hop the cache has held).
	if idle := int64(r.fc.cfg.IdleTimeout + r.fc.cfg.AgeInterval); r.fc.cfg.IdleTimeout > 0 && newest > 0 {
		for k, s := range r.prev {
			if s.last < newest-idle {
				delete(r.prev, k)
			}
		}
	}
	out := make([]SwitchLatency, 0, len(sws))
	for _, s := range sws {
		out = append(out, *s)
	}
	return flows, out
}
