package labelsim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/telemetry"
)

// Series is one curve.
type Series struct {
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
	// Analysis marks a curve computed rather than measured (drawn dashed).
	Analysis bool `json:"-"`
	// Paper marks the paper's own points (from its text or its authors' plotted data),
	// drawn as markers without a line.
	Paper bool `json:"paper,omitempty"`
}

// Figure is one reproduced figure.
type Figure struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	XLabel     string   `json:"x_label"`
	YLabel     string   `json:"y_label"`
	Series     []Series `json:"series"`
	Conditions string   `json:"conditions"`
	Paper      string   `json:"paper"` // what the paper reports
	Intake     string   `json:"intake"`
}

// Setup is one run of the testbed (§6.1 defaults: server1 and server8 send 1 kB packets to
// random other servers at 5 Mb/s each, fixed routes, T = 50 ms, telemetry interval 100 ms).
type Setup struct {
	Algo fabric.Algo
	// Pro runs Algorithm 3 in the collector (label.Controller.Tick) feeding shifts back.
	Pro bool
	// ProFlag runs the prototype's flag controller instead (flagPro: label every packet for
	// 10 T_i after a port misses one T_i).
	ProFlag  bool
	T, T1    time.Duration
	Ti       time.Duration
	F        label.F
	MaxHop   int     // MAX_hop of F2 and F3 (0: 5)
	Rate     float64 // per sender, b/s
	Loss     float64 // per switch-to-switch link
	Packets  int     // stop after this many packets (0: Duration)
	Duration time.Duration
	Seed     uint64
	K        float64 // Pro's k
	// Routing is "fixed" (the default: pre-installed routes, 18 ports carry traffic) or
	// "ecmp" (flows hashed over the equal-cost ports: 36 ports with the default 8 flows).
	Routing string
	Flows   int // source ports per sender under ECMP (0: 8)
	// Prototype runs the traffic of the authors' prototype (the paper setup, prototype.go):
	// its source routes (25 ports carry traffic), each sender cycling over the other
	// seven servers, 1 Gb/s links; Routing and Flows then do not matter.
	Prototype bool
	// gaps, when set, sees every export (§4.2's update gaps, scale.go).
	gaps *gapSink
}

// Result is what one run measured.
type Result struct {
	Coverage    float64   // mean over windows, ground truth with the receive clock
	Windows     []float64 // per window
	Labeled     uint64    // labeled (exported) packets
	Labels      uint64    // labeling operations in the data plane
	Hist        []uint64  // exported packets by item count
	BWOccupancy float64   // INT bytes / traffic bytes, per hop
	E2ELoss     float64
	Ports       int // switch ports that carried traffic in the busiest window
	// CoverageFixed is the prototype's coverage (its controller/coverage.py): per window,
	// ports updated over the fixed list of the PrototypePorts ports its routes use, whether
	// or not they forwarded a packet in the window.
	CoverageFixed float64
	WindowsFixed  []float64
	Stats         fabric.Stats
}

func (s *Setup) defaults() {
	if s.Algo == "" {
		s.Algo = fabric.AlgoA
	}
	if s.T == 0 {
		s.T = 50 * time.Millisecond
	}
	if s.Ti == 0 {
		s.Ti = 100 * time.Millisecond
	}
	if s.F == "" {
		s.F = label.F1
	}
	if s.Rate == 0 {
		s.Rate = 5e6
	}
	if s.Packets == 0 && s.Duration == 0 {
		s.Packets = 10000
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.K == 0 {
		s.K = 1
	}
	if s.Routing == "" {
		s.Routing = "fixed"
	}
}

type procSink struct{ c *label.Controller }

func (p procSink) Label(now int64, r *telemetry.Report) { r.RecvTime = now; p.c.Process(0, r) }
func (p procSink) Report(int64, *telemetry.Report)      {}

// Run runs one setup.
func Run(s Setup) (Result, error) {
	s.defaults()
	lp := fabric.DefaultLink
	lp.Bandwidth = 20e6
	if s.Prototype {
		lp.Bandwidth = 1e9
	}
	lp.Queue = 100
	topo := fabric.Testbed(lp)
	tr := fabric.Traffic{Senders: []int{0, 7}, Rate: s.Rate, PacketSize: 1000, Poisson: true, Packets: s.Packets, Flows: s.Flows}
	var routes map[[2]int][]int
	if s.Prototype {
		tr.Pattern = "all"
		routes = prototypeRoutes(topo)
	}
	for i := range topo.Links {
		l := &topo.Links[i]
		if topo.Nodes[l.A].Kind == fabric.Switch && topo.Nodes[l.B].Kind == fabric.Switch {
			l.Loss = s.Loss
		}
	}
	f, err := fabric.New(fabric.Config{
		Topology:     topo,
		Routing:      s.Routing,
		Traffic:      tr,
		SourceRoutes: routes,
		Label:        fabric.LabelConfig{Algo: s.Algo, T: s.T, T1: s.T1, F: s.F, MaxHop: s.MaxHop},
		ExportDelay:  200 * time.Microsecond,
		Seed:         s.Seed,
	})
	if err != nil {
		return Result{}, err
	}
	truth := fabric.NewTruth(int64(s.Ti), false)
	f.SetTracer(truth)
	f.SetSink(truth)
	if s.Pro || s.ProFlag {
		lc := label.DefaultConfig()
		lc.TelemetryInterval, lc.LabelingInterval, lc.K = s.Ti, s.T, s.K
		lc.ActiveWindows = 60
		ctl := label.New(lc, label.Deps{Setter: f, Now: f.Now})
		truth.Next = procSink{ctl}
		if s.ProFlag {
			f.SetTick(5*time.Millisecond, newFlagPro(ctl, f, int64(s.Ti)).tick)
		} else {
			f.SetTick(5*time.Millisecond, ctl.Tick)
		}
	}
	if s.gaps != nil {
		s.gaps.next, truth.Next = truth.Next, s.gaps
	}
	end := int64(s.Duration)
	if s.Packets > 0 {
		end = int64(float64(s.Packets)/2*8000/s.Rate*1e9) + int64(time.Second)
	}
	f.RunVirtual(end)
	st := f.Stats()
	res := Result{Labeled: st.Exports, Labels: st.Labels, Stats: st}
	for n := 0; n <= 6; n++ {
		res.Hist = append(res.Hist, st.ItemsHist[n])
	}
	if st.TrafficBytes > 0 {
		res.BWOccupancy = float64(st.INTBytes) / float64(st.TrafficBytes)
	}
	if st.Sent > 0 {
		res.E2ELoss = 1 - float64(st.Delivered)/float64(st.Sent)
	}
	from, to := truth.Span()
	// Skip the first window (labels start) and the last two (traffic ends, exports pending).
	ws := truth.Windows(from+1, to-2)
	sum, fixed := 0.0, 0.0
	for _, w := range ws {
		fc := float64(min(w.Updated, PrototypePorts)) / PrototypePorts
		res.Windows, res.WindowsFixed = append(res.Windows, w.Coverage), append(res.WindowsFixed, fc)
		res.Ports = max(res.Ports, w.Traffic)
		sum += w.Coverage
		fixed += fc
	}
	if len(ws) > 0 {
		res.Coverage = sum / float64(len(ws))
		res.CoverageFixed = fixed / float64(len(ws))
	}
	return res, nil
}

// Options scale the suite.
//
// Every testbed figure runs one configuration, the paper's (INT-label §5-§6.1 with the
// authors' prototype where the text leaves it open): 5 Mb/s in total (2.5 Mb/s per sender,
// the authors' plotted data derive the rate as twice one sender's), the prototype's source
// routes over 25 ports, 1 Gb/s links, and "Pro" the §5 flag controller (flagpro.go).
// Algorithm 3 is a sensitivity study of its own (alg3-k); the emulator's own testbed
// (fixed routes, 20 Mb/s links, 5 Mb/s per sender) is Testbed.
type Options struct {
	Long bool // more points and longer runs
	// Paper is the paper's configuration, now the default: kept so that callers that set it
	// keep working; it overrides Testbed.
	Paper bool
	// Testbed runs the testbed figures on the emulator's own setup instead: fixed routes
	// (18 ports), 20 Mb/s links, 5 Mb/s per sender, and Fig. 19's F3 as the paper writes it.
	Testbed bool
	// Rate is the senders' total rate in b/s (0: 5 Mb/s, or 10 Mb/s with Testbed); Fig. 6
	// sweeps its own.
	Rate float64
	// Coverage is the coverage definition of the coverage figures: CoverageActive (the
	// default, §6.2's) or CoverageFixed (the prototype's 25-port list).
	Coverage string
	Seed     uint64
	Progress func(id string)
}

// The coverage definitions.
const (
	// CoverageActive: ports updated in a 100 ms window over the ports that forwarded a
	// packet in it (INT-label §6.2: "the total number of ports with traffic passing by").
	CoverageActive = "active"
	// CoverageFixed: ports updated over the fixed list of PrototypePorts ports (the
	// prototype's controller/coverage.py), idle or not.
	CoverageFixed = "fixed"
)

// PrototypePorts is the length of the prototype's port list (§6.1 says 24).
const PrototypePorts = 25

// ParseCoverage checks a coverage definition's name ("" is CoverageActive).
func ParseCoverage(s string) (string, error) {
	switch s {
	case "", CoverageActive:
		return CoverageActive, nil
	case CoverageFixed:
		return s, nil
	}
	return "", fmt.Errorf("%q: must be %s or %s", s, CoverageActive, CoverageFixed)
}

// paper reports whether the testbed figures run the paper's configuration.
func (o Options) paper() bool { return o.Paper || !o.Testbed }

// setup describes the configuration for a figure's conditions.
func (o Options) setup() string {
	cov := "coverage over ports with traffic per 100 ms window (§6.2)"
	if o.Coverage == CoverageFixed {
		cov = "coverage over the prototype's fixed list of 25 ports"
	}
	if o.paper() {
		return fmt.Sprintf("paper configuration: %g Mb/s total (2 senders), the prototype's source routes (25 ports), 1 Gb/s links; %s", o.rate()/1e6, cov)
	}
	return fmt.Sprintf("emulator testbed (--testbed): %g Mb/s total (2 senders), fixed routes (18 ports), 20 Mb/s links; %s", o.rate()/1e6, cov)
}

// rate is the senders' total rate.
func (o Options) rate() float64 {
	switch {
	case o.Rate > 0:
		return o.Rate
	case o.paper():
		return 5e6
	}
	return 10e6
}

// coverage is a run's coverage under the chosen definition, and its windows.
func (o Options) coverage(r Result) (float64, []float64) {
	if o.Coverage == CoverageFixed {
		return r.CoverageFixed, r.WindowsFixed
	}
	return r.Coverage, r.Windows
}

type exp struct {
	id string
	fn func(o Options) (Figure, error)
}

var suite = []exp{
	{"fig6", fig6}, {"fig7", fig7}, {"fig8", fig8}, {"fig9", fig9}, {"fig10", fig10}, {"fig11", fig11}, {"fig12", fig12},
	{"fig13", fig13}, {"fig15", fig15}, {"fig16", fig16}, {"fig17", fig17}, {"fig18", fig18}, {"fig19", fig19},
	{"fig20", fig20}, {"fig21", fig21}, {"fig22", fig22}, {"delay", figDelay}, {"alg3-k", alg3K},
}

// aliases are figure ids that name others: fig7-8, the one panel Figs. 7 and 8 once shared.
var aliases = map[string][]string{"fig7-8": {"fig7", "fig8"}}

// IDs lists the figures.
func IDs() []string {
	var ids []string
	for _, e := range suite {
		ids = append(ids, e.id)
	}
	return ids
}

// ErrUnknownFigure is Reproduce's error for an id not among IDs.
var ErrUnknownFigure = errors.New("unknown figure")

// Reproduce runs the figures named in only (all when empty), in IDs' order.
func Reproduce(o Options, only ...string) ([]Figure, error) {
	var ids []string
	for _, id := range only {
		if a, ok := aliases[id]; ok {
			ids = append(ids, a...)
		} else {
			ids = append(ids, id)
		}
	}
	only = ids
	for _, id := range only {
		if !contains(IDs(), id) {
			return nil, fmt.Errorf("%q: %w (allowed: %s)", id, ErrUnknownFigure, strings.Join(IDs(), ", "))
		}
	}
	var out []Figure
	for _, e := range suite {
		if len(only) > 0 && !contains(only, e.id) {
			continue
		}
		if o.Progress != nil {
			o.Progress(e.id)
		}
		f, err := e.fn(o)
		if err != nil {
			return out, fmt.Errorf("%s: %w", e.id, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func seed(o Options) uint64 { return max(o.Seed, 1) }

// run runs a testbed setup in the suite's configuration (a setup's own Rate, per sender,
// wins).
func (o Options) run(s Setup) (Result, error) {
	s.Prototype = o.paper()
	if s.Rate == 0 {
		s.Rate = o.rate() / 2
	}
	return Run(s)
}

// dur is a run's length: d, or five times d in the long variant.
func (o Options) dur(d time.Duration) time.Duration {
	if o.Long {
		return 5 * d
	}
	return d
}
