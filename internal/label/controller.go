package label

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/telemetry"
)

// ShiftSetter receives Algorithm 3's decisions: set switch sw's egress port's shift S (its
// labeling interval becomes T/2^S). The fabric implements it directly in virtual time;
// HTTPControl implements it over the control channel. SetShift must not block.
type ShiftSetter interface {
	SetShift(sw, port, shift uint8)
}

// slotBits is the width of the per-window count in a coverage slot; the window index takes
// the remaining 44 bits (Unix ns / 1 ms fits in 41).
const (
	slotBits  = 20
	slotMask  = 1<<slotBits - 1
	nSlots    = 1024 // windows of history kept; a query asks for at most this many
	maskWidth = 64   // windows a port remembers having been counted in (out-of-order items)
)

// port is one (switch, egress port) entry: the newest item by label time (Algorithm 4) and
// the bookkeeping for coverage and feedback. It is pointer-free and lives in a per-switch
// array allocated once, when the switch is first seen.
type port struct {
	known    bool
	shift    uint8
	item     telemetry.LabelItem // the newest item; item.EgressTS is RT
	lastRecv int64               // collector clock of the last item for this port, ns
	// stateRecv is the collector clock when the newest state (item) was received: the
	// port's age counts from it, so that a stale item (Algorithm 4 line 16: not installed)
	// does not make the port look fresh to Algorithm 3.
	stateRecv int64
	updates   uint64 // items accepted (newer label time)
	stale     uint64 // items discarded (not newer: Algorithm 4 line 16)
	firstWin  int64
	lastWin   int64
	maskBase  int64  // window of bit 0 of mask
	mask      uint64 // windows in [maskBase, maskBase+64) already counted for this port
	lrt       int64  // Algorithm 3's LRT, per port
}

type stripe struct {
	mu    sync.Mutex
	ports *[256]port
	_     [40]byte // keep stripes on separate cache lines
}

// Controller is the INT-label database and feedback loop. New is inert; Start runs the
// feedback loop when a setter is configured; Process is safe from any number of workers.
type Controller struct {
	cfg        Config
	ti, kT     int64
	labelClock bool
	active     int64

	stripes [256]stripe
	slots   [nSlots]atomic.Uint64 // window<<slotBits | ports counted in it
	maxWin  atomic.Int64          // newest window any item fell in

	knownMu sync.Mutex
	known   []uint16 // switch<<8 | port, in order of first sight

	reports, items, updates, stale atomic.Uint64
	shiftsUp, shiftsDown           atomic.Uint64

	setter ShiftSetter
	now    func() int64
	stop   chan struct{}
	done   chan struct{}
}

// Deps are what a Controller uses from outside.
type Deps struct {
	// Setter receives Algorithm 3's shift updates (an HTTPControl, or the emulated
	// fabric); nil: no feedback.
	Setter ShiftSetter
	// Now is the controller's clock, the one Tick, ages and receive windows use (nil: the
	// wall clock in Unix ns).
	Now func() int64
	// Metrics, if set, gets the controller's series (intake_label_*).
	Metrics *metrics.Registry
}

// New builds a controller; it is inert until Start (which starts the feedback loop, and the
// setter if it has a Start).
func New(cfg Config, deps Deps) *Controller {
	now := deps.Now
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	c := &Controller{
		cfg: cfg, ti: int64(cfg.TelemetryInterval), kT: int64(cfg.K * float64(cfg.LabelingInterval)),
		labelClock: cfg.Clock == ClockLabel, active: int64(cfg.ActiveWindows),
		setter: deps.Setter, now: now, known: make([]uint16, 0, 1024),
	}
	c.maxWin.Store(-1)
	if deps.Metrics != nil {
		c.registerMetrics(deps.Metrics)
	}
	return c
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// Name implements ingest.Processor.
func (c *Controller) Name() string { return "label" }

// Process installs every item of an INT-label export (Algorithm 4). Other formats are
// ignored: INT-label items come only from INT-label exports.
func (c *Controller) Process(_ int, r *telemetry.Report) {
	if r.Format != telemetry.FormatLabel {
		return
	}
	c.reports.Add(1)
	for i := range r.LabelList() {
		c.install(&r.Labels[i], r.RecvTime)
	}
}

// Install installs one item received at recv (collector clock, ns), for callers that feed
// the controller without a Report (the fabric's in-process delivery does use Process).
func (c *Controller) install(it *telemetry.LabelItem, recv int64) {
	c.items.Add(1)
	clock := recv
	if c.labelClock || recv == 0 {
		clock = int64(it.EgressTS)
	}
	w := clock / c.ti
	st := &c.stripes[it.SwitchID]
	st.mu.Lock()
	if st.ports == nil {
		// Once per switch ever (at most 256 times), not per report.
		st.ports = new([256]port)
	}
	p := &st.ports[it.EgressPort]
	if !p.known {
		p.known, p.firstWin, p.lastWin, p.maskBase, p.lrt = true, w, w, w, recv
		c.knownMu.Lock()
		c.known = append(c.known, uint16(it.SwitchID)<<8|uint16(it.EgressPort))
		c.knownMu.Unlock()
		p.item = *it
		p.updates++
		p.stateRecv = recv
		c.updates.Add(1)
	} else if it.EgressTS > p.item.EgressTS {
		p.item = *it
		p.updates++
		p.stateRecv = max(p.stateRecv, recv)
		c.updates.Add(1)
	} else {
		p.stale++
		c.stale.Add(1)
	}
	if recv > p.lastRecv {
		p.lastRecv = recv
	}
	if w < p.firstWin {
		p.firstWin = w
	}
	if w > p.lastWin {
		p.lastWin = w
	}
	// Count the port once per window, whatever order its items arrive in.
	count := false
	switch {
	case w < p.maskBase:
	case w >= p.maskBase+maskWidth:
		shift := w - (p.maskBase + maskWidth - 1)
		if shift >= maskWidth {
			p.mask = 0
		} else {
			p.mask >>= uint(shift)
		}
		p.maskBase += shift
		fallthrough
	default:
		bit := uint64(1) << uint(w-p.maskBase)
		count = p.mask&bit == 0
		p.mask |= bit
	}
	st.mu.Unlock()
	if count {
		c.countWindow(w)
	}
	for {
		m := c.maxWin.Load()
		if w <= m || c.maxWin.CompareAndSwap(m, w) {
			break
		}
	}
}

// countWindow adds one port to window w's slot, recycling the slot when it held an older
// window.
func (c *Controller) countWindow(w int64) {
	s := &c.slots[uint64(w)%nSlots]
	for {
		old := s.Load()
		ow := int64(old >> slotBits)
		var nv uint64
		switch {
		case ow == w:
			if old&slotMask == slotMask {
				return
			}
			nv = old + 1
		case ow < w:
			nv = uint64(w)<<slotBits | 1
		default:
			return // the slot already holds a newer window: w is out of the history kept
		}
		if s.CompareAndSwap(old, nv) {
			return
		}
	}
}

// PortState is one port's entry as the API shows it.
type PortState struct {
	SwitchID     uint8   `json:"switch_id"`
	Port         uint8   `json:"port"`
	IngressPort  uint8   `json:"ingress_port"`
	LabelTime    uint64  `json:"label_time"`
	IngressTS    uint64  `json:"ingress_ts"`
	LatencyNs    uint32  `json:"latency_ns"`
	EnqQDepth    uint32  `json:"enq_qdepth"`
	DeqQDepth    uint32  `json:"deq_qdepth"`
	AgeMs        float64 `json:"age_ms"`
	Updates      uint64  `json:"updates"`
	Stale        uint64  `json:"stale"`
	Shift        uint8   `json:"shift"`
	Active       bool    `json:"active"`
	LastReceived int64   `json:"last_received_unix_ns"`
}

// Ports returns every known port's state, sorted by switch and port; sw >= 0 narrows to one
// switch. now is the controller clock.
func (c *Controller) Ports(now int64, sw int) []PortState {
	c.knownMu.Lock()
	keys := append([]uint16(nil), c.known...)
	c.knownMu.Unlock()
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	cur := c.currentWindow(now)
	out := make([]PortState, 0, len(keys))
	for _, k := range keys {
		s, pt := uint8(k>>8), uint8(k)
		if sw >= 0 && int(s) != sw {
			continue
		}
		st := &c.stripes[s]
		st.mu.Lock()
		p := &st.ports[pt]
		out = append(out, PortState{
			SwitchID: s, Port: pt, IngressPort: p.item.IngressPort, LabelTime: p.item.EgressTS,
			IngressTS: p.item.IngressTS, LatencyNs: p.item.DeqTimedelta, EnqQDepth: p.item.EnqQDepth,
			DeqQDepth: p.item.DeqQDepth, AgeMs: float64(now-p.stateRecv) / 1e6, Updates: p.updates,
			Stale: p.stale, Shift: p.shift, Active: cur <= p.lastWin+c.active, LastReceived: p.lastRecv,
		})
		st.mu.Unlock()
	}
	return out
}

// currentWindow is the window in progress: by the controller clock, or with the label clock
// the newest window any item fell in.
func (c *Controller) currentWindow(now int64) int64 {
	if c.labelClock {
		return c.maxWin.Load()
	}
	return now / c.ti
}

// Window is one telemetry interval's coverage.
type Window struct {
	Index    int64   `json:"index"`
	StartNs  int64   `json:"start_ns"`
	Updated  int     `json:"updated"`
	Active   int     `json:"active"`
	Coverage float64 `json:"coverage"`
}

// CoverageReport is the coverage over the last complete windows, oldest first.
type CoverageReport struct {
	Clock               string   `json:"clock"`
	TelemetryIntervalMs float64  `json:"telemetry_interval_ms"`
	PortsKnown          int      `json:"ports_known"`
	Windows             []Window `json:"windows"`
	Mean                float64  `json:"mean"`
}

// Coverage returns the last n complete windows before the current one (INT-label §6.2:
// ports updated in the window over ports carrying traffic, the latter being ports known by
// then and updated within active_windows). Windows with no active port are left out.
func (c *Controller) Coverage(now int64, n int) CoverageReport {
	n = min(max(n, 1), nSlots-1)
	cur := c.currentWindow(now)
	rep := CoverageReport{Clock: c.cfg.Clock, TelemetryIntervalMs: float64(c.ti) / 1e6, Windows: []Window{}}
	c.knownMu.Lock()
	keys := append([]uint16(nil), c.known...)
	c.knownMu.Unlock()
	rep.PortsKnown = len(keys)
	first, last := make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		st := &c.stripes[k>>8]
		st.mu.Lock()
		p := &st.ports[uint8(k)]
		first[i], last[i] = p.firstWin, p.lastWin
		st.mu.Unlock()
	}
	sum := 0.0
	for w := cur - int64(n); w < cur; w++ {
		if w < 0 {
			continue
		}
		act := 0
		for i := range keys {
			if first[i] <= w && w <= last[i]+c.active {
				act++
			}
		}
		if act == 0 {
			continue
		}
		upd := 0
		if s := c.slots[uint64(w)%nSlots].Load(); int64(s>>slotBits) == w {
			upd = int(s & slotMask)
		}
		cov := float64(upd) / float64(act)
		rep.Windows = append(rep.Windows, Window{Index: w, StartNs: w * c.ti, Updated: upd, Active: act, Coverage: cov})
		sum += cov
	}
	if len(rep.Windows) > 0 {
		rep.Mean = sum / float64(len(rep.Windows))
	}
	return rep
}

// Counters are the controller's totals.
type Counters struct {
	Reports    uint64 `json:"reports"`
	Items      uint64 `json:"items"`
	Updates    uint64 `json:"updates"`
	Stale      uint64 `json:"stale"`
	ShiftsUp   uint64 `json:"shifts_up"`
	ShiftsDown uint64 `json:"shifts_down"`
	Ports      int    `json:"ports"`
}

// Counters returns the totals since New.
func (c *Controller) Counters() Counters {
	c.knownMu.Lock()
	n := len(c.known)
	c.knownMu.Unlock()
	return Counters{Reports: c.reports.Load(), Items: c.items.Load(), Updates: c.updates.Load(),
		Stale: c.stale.Load(), ShiftsUp: c.shiftsUp.Load(), ShiftsDown: c.shiftsDown.Load(), Ports: n}
}

// Tick runs one round of Algorithm 3 at controller time now, for every known port: when
// more than k·T has passed since the port's shift last changed (LRT), raise S if the port
// has not been updated for k·T, else lower it if above 0. A port idle for active_windows
// telemetry intervals is out of the loop and its shift returns to 0.
//
// The paper compares the controller's time with RT, the label time of the port's newest
// item, assuming synchronized clocks; intake compares with the time that newest item was
// received, which is RT plus the path and export delay and needs no clock agreement with
// the switches. An item not newer than the state (stale) does not refresh the age, as it
// does not move RT in the paper. (On the emulated testbed, using RT itself changes Fig. 12's
// Pro coverage by less than 0.003: docs/label-results.md.)
func (c *Controller) Tick(now int64) {
	if c.setter == nil {
		return
	}
	c.knownMu.Lock()
	keys := c.known[:len(c.known):len(c.known)]
	c.knownMu.Unlock()
	idle := c.active * c.ti
	for _, k := range keys {
		st := &c.stripes[k>>8]
		st.mu.Lock()
		p := &st.ports[uint8(k)]
		old := p.shift
		age := now - p.stateRecv
		switch {
		case age > idle:
			p.shift = 0
		case now-p.lrt > c.kT:
			if age > c.kT {
				if int(p.shift) < c.cfg.MaxShift {
					p.shift++
				}
				p.lrt = now
			} else if p.shift > 0 {
				p.shift--
				p.lrt = now
			}
		}
		s := p.shift
		st.mu.Unlock()
		if s != old {
			if s > old {
				c.shiftsUp.Add(1)
			} else {
				c.shiftsDown.Add(1)
			}
			c.setter.SetShift(uint8(k>>8), uint8(k), s)
		}
	}
}

// Start runs Tick every feedback_period on the controller clock when a setter is set.
func (c *Controller) Start(ctx context.Context) error {
	if c.setter == nil || c.stop != nil {
		return nil
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.cfg.FeedbackPeriod)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.Tick(c.now())
			}
		}
	}()
	return nil
}

// Stop ends the feedback loop.
func (c *Controller) Stop(context.Context) error {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	return nil
}

// Now returns the controller clock.
func (c *Controller) Now() int64 { return c.now() }

// PortsResponse is the body of GET /api/v1/label/ports.
type PortsResponse struct {
	Count int         `json:"count"`
	Ports []PortState `json:"ports"`
}
