package fabric

import (
	"sort"

	"github.com/intake-int/intake/telemetry"
)

// Truth is the fabric's ground truth for coverage (INT-label §6.2): per telemetry interval,
// the ports that carried traffic (from the switches' own egress decisions) and the ports an
// export brought to the collector (from the exports as sent). Install it as both tracer and
// sink; it forwards to Next (another sink, e.g. the controller or the UDP sink) and Tracer.
type Truth struct {
	Ti int64 // telemetry interval, ns
	// LabelClock places an export's items by their label time (the controller's `label`
	// clock); otherwise by the export's delivery time (the `receive` clock).
	LabelClock bool
	Next       Sink
	Tracer     Tracer

	traffic map[int64]map[uint16]struct{}
	covered map[int64]map[uint16]struct{}
}

// NewTruth returns a recorder for telemetry interval ti.
func NewTruth(ti int64, labelClock bool) *Truth {
	return &Truth{Ti: ti, LabelClock: labelClock, traffic: map[int64]map[uint16]struct{}{}, covered: map[int64]map[uint16]struct{}{}}
}

func mark(m map[int64]map[uint16]struct{}, w int64, k uint16) {
	s := m[w]
	if s == nil {
		s = map[uint16]struct{}{}
		m[w] = s
	}
	s[k] = struct{}{}
}

// Egress implements Tracer.
func (t *Truth) Egress(sw, port uint8, ct, lt int64, n int, spec, labeled bool, it *telemetry.LabelItem) {
	mark(t.traffic, ct/t.Ti, uint16(sw)<<8|uint16(port))
	if t.Tracer != nil {
		t.Tracer.Egress(sw, port, ct, lt, n, spec, labeled, it)
	}
}

// Label implements Sink.
func (t *Truth) Label(now int64, r *telemetry.Report) {
	for _, it := range r.LabelList() {
		w := now / t.Ti
		if t.LabelClock {
			w = int64(it.EgressTS) / t.Ti
		}
		mark(t.covered, w, uint16(it.SwitchID)<<8|uint16(it.EgressPort))
	}
	if t.Next != nil {
		t.Next.Label(now, r)
	}
}

// Report implements Sink.
func (t *Truth) Report(now int64, r *telemetry.Report) {
	if t.Next != nil {
		t.Next.Report(now, r)
	}
}

// SetNext implements the chaining Listen uses to put the UDP sink behind this one.
func (t *Truth) SetNext(s Sink) { t.Next = s }

// TruthWindow is one window's ground truth.
type TruthWindow struct {
	Index    int64   `json:"index"`
	Traffic  int     `json:"traffic"` // ports that forwarded a packet
	Updated  int     `json:"updated"` // ports an export covered
	Coverage float64 `json:"coverage"`
}

// Windows returns windows from..to-1 (coverage = updated ports among those with traffic
// over ports with traffic; windows without traffic have coverage 0 and Traffic 0).
func (t *Truth) Windows(from, to int64) []TruthWindow {
	var out []TruthWindow
	for w := from; w < to; w++ {
		tw := TruthWindow{Index: w, Traffic: len(t.traffic[w]), Updated: len(t.covered[w])}
		n := 0
		for k := range t.covered[w] {
			if _, ok := t.traffic[w][k]; ok {
				n++
			}
		}
		if tw.Traffic > 0 {
			tw.Coverage = float64(n) / float64(tw.Traffic)
		}
		out = append(out, tw)
	}
	return out
}

// Prune forgets the windows before window w, so that a long run keeps bounded state.
func (t *Truth) Prune(w int64) {
	for _, m := range []map[int64]map[uint16]struct{}{t.traffic, t.covered} {
		for k := range m {
			if k < w {
				delete(m, k)
			}
		}
	}
}

// Span returns the first and one past the last window with traffic.
func (t *Truth) Span() (from, to int64) {
	ws := make([]int64, 0, len(t.traffic))
	for w := range t.traffic {
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		return 0, 0
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	return ws[0], ws[len(ws)-1] + 1
}
