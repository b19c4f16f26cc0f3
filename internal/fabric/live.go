package fabric

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/intake-int/intake/telemetry"
)

// The testbed in real time, as `intake demo --fabric` shows it: every packet carrying INT-MD
// (its sink sends a TR v2.0 report) and the switches running INT-label Base A, with ground
// truth kept for a summary.

// liveTi is the telemetry interval of the live fabric's ground-truth coverage (the
// collector's default label.telemetry_interval).
const liveTi = 100 * time.Millisecond

// Live is the testbed running in real time (StartLive). It sits between the fabric's event
// loop and its UDP sink and counts what the switches do, under a lock because Describe runs
// on another goroutine.
type Live struct {
	mu       sync.Mutex
	topo     *Topology
	truth    *Truth
	next     Sink
	now      int64
	paths    map[uint64]uint64 // switch ids of an INT-MD path, 8 bits each, first hop lowest
	reports  uint64
	exports  uint64
	portsAll map[uint16]struct{} // switch ports that ever carried traffic
	done     chan struct{}
	err      error // Run's, once done is closed
}

// Egress implements Tracer.
func (d *Live) Egress(sw, port uint8, ct, lt int64, n int, spec, labeled bool, it *telemetry.LabelItem) {
	d.mu.Lock()
	d.now = ct
	d.portsAll[uint16(sw)<<8|uint16(port)] = struct{}{}
	d.truth.Egress(sw, port, ct, lt, n, spec, labeled, it)
	d.mu.Unlock()
}

// Label implements Sink.
func (d *Live) Label(now int64, r *telemetry.Report) {
	d.mu.Lock()
	d.exports++
	d.truth.Label(now, r)
	d.mu.Unlock()
	if d.next != nil {
		d.next.Label(now, r)
	}
}

// Report implements Sink.
func (d *Live) Report(now int64, r *telemetry.Report) {
	var path uint64
	hops := r.HopList() // newest first
	for i := len(hops) - 1; i >= 0 && len(hops)-1-i < 8; i-- {
		path = path<<8 | uint64(hops[i].NodeID&0xff)
	}
	d.mu.Lock()
	d.reports++
	d.paths[path]++
	d.mu.Unlock()
	if d.next != nil {
		d.next.Report(now, r)
	}
}

// SetNext takes the UDP sink Listen puts behind this one.
func (d *Live) SetNext(s Sink) { d.next = s }

// Describe returns three lines on what the fabric does: switches and servers, active
// ports and distinct paths, and INT-label coverage by ground truth.
func (d *Live) Describe() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.now / int64(liveTi)
	// The window in progress and the one before (exports still in flight) are not complete.
	ws := d.truth.Windows(max(cur-11, 0), max(cur-1, 0))
	d.truth.Prune(cur - 20)
	active, sum, n := 0, 0.0, 0
	for _, w := range ws {
		if w.Traffic > 0 {
			sum += w.Coverage
			n++
		}
	}
	last := "-"
	if len(ws) > 0 {
		active = ws[len(ws)-1].Traffic
		last = fmt.Sprintf("%.3f", ws[len(ws)-1].Coverage)
	}
	mean := "-"
	if n > 0 {
		mean = fmt.Sprintf("%.3f", sum/float64(n))
	}
	var b strings.Builder
	tp := d.topo
	ports := 0
	for _, nd := range tp.Nodes {
		if nd.Kind == Switch {
			ports += len(nd.Links)
		}
	}
	fmt.Fprintf(&b, "fabric: %s, %d switches, %d servers, INT-MD on every packet, INT-label Base A (T 50ms), ECMP\n", tp.Name, tp.Switches(), len(tp.Hosts))
	fmt.Fprintf(&b, "ports: %d of %d switch ports active in the last window (%d ever); %d distinct paths in %d INT-MD reports\n",
		active, ports, len(d.portsAll), len(d.paths), d.reports)
	fmt.Fprintf(&b, "coverage by ground truth (per %s): last window %s, mean of the last 10 %s; %d INT-label exports\n", liveTi, last, mean, d.exports)
	return b.String()
}

// StartLive runs the emulated testbed (Testbed) in real time, sending INT-MD telemetry
// reports to reportAddr and INT-label exports to labelAddr (UDP, host:port), at about rate
// packets per second in total, until ctx is done; Wait returns Run's error after that. It is
// the traffic of `intake demo --fabric`.
//
// rate is the traffic of the 8 servers together (1 kB packets to random other servers,
// Poisson, ECMP); every packet carries INT-MD, so about rate reports per second arrive, and
// INT-label adds an export per labeled packet (Base A, T = 50 ms: about 20 per second per
// active port, fewer packets as items aggregate).
func StartLive(ctx context.Context, reportAddr, labelAddr string, rate float64) (*Live, error) {
	if !(rate > 0 && rate <= 1e6) {
		return nil, fmt.Errorf("fabric demo: rate %g: must be in (0, 1e6] packets per second", rate)
	}
	const size = 1000
	lp := DefaultLink
	// Keep the links below saturation whatever the rate: a link carries at most about a
	// quarter of the traffic (two servers' worth).
	lp.Bandwidth = max(lp.Bandwidth, rate*size*8)
	topo := Testbed(lp)
	f, err := New(Config{
		Topology:   topo,
		Routing:    "ecmp",
		Traffic:    Traffic{Rate: rate / float64(len(topo.Hosts)) * size * 8, PacketSize: size, Pattern: "random", Poisson: true, Flows: 16},
		Label:      LabelConfig{Algo: AlgoA, T: 50 * time.Millisecond},
		INTMDEvery: 1,
		Seed:       uint64(time.Now().UnixNano()),
	})
	if err != nil {
		return nil, fmt.Errorf("fabric demo: %w", err)
	}
	d := &Live{topo: topo, truth: NewTruth(int64(liveTi), false), paths: map[uint64]uint64{},
		portsAll: map[uint16]struct{}{}, done: make(chan struct{})}
	f.SetTracer(d)
	f.SetSink(d)
	ep := Endpoints{Label: labelAddr, Report: reportAddr}
	if err := f.Listen(ep); err != nil {
		return nil, fmt.Errorf("fabric demo: %w", err)
	}
	go func() {
		defer close(d.done)
		d.err = f.Run(ctx, ep)
	}()
	return d, nil
}

// Wait waits until the fabric has stopped and returns its error.
func (d *Live) Wait() error {
	<-d.done
	return d.err
}
