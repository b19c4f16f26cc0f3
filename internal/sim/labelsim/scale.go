package labelsim

import (
	"fmt"
	"math"
	"time"

	"math/rand/v2"
	"sort"
	"strings"

	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/telemetry"
)

// Figs. 20-22 and §4.2: the paper's comparisons with other telemetry systems, which it
// draws without stating their parameters, as models whose every assumption is named in
// the figure's conditions (docs/label-results.md), and §4.2's delay formula against the
// emulator.

// fatTreeKs are the fat-tree sizes of Figs. 20 and 21.
var fatTreeKs = []float64{4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}

// Generators is how many probe generators each system needs on a k-ary fat tree (Fig. 20):
// INT-label none (it labels user packets); INT-path one per odd-degree vertex, at least one
// (its Euler trails start and end at odd vertices: in a fat tree with its hosts every switch
// has degree k and every host degree 1, so the k³/4 hosts); Pingmesh one agent per host and
// one per ToR (the paper: "positively correlated with the sum of the number of hosts and ToR
// switches"); HULA one per ToR. The authors' data (k = 10, 20, 30) are these counts exactly.
func Generators(k int) (intLabel, intPath, pingmesh, hula int) {
	tors, hosts := k*k/2, k*k*k/4
	return 0, max(hosts, 1), hosts + tors, tors
}

// The authors' data for Figs. 20 and 21 (their Fig.13.14/data.xlsx) at k = 10, 20, 30:
// probe generators, and bandwidth in Mb/s.
var (
	paperKs       = []float64{10, 20, 30}
	paperGenPath  = []float64{250, 2000, 6750}
	paperGenPing  = []float64{300, 2200, 7200}
	paperGenHULA  = []float64{50, 200, 450}
	paperBWLabel  = []float64{32.1, 256.8, 866.7}
	paperBWPath   = []float64{43.3, 346.4, 1169}
	paperBWPing   = []float64{22.08, 369.9, 1898}
	paperBWHULA   = []float64{6016, 3.983e5, 4.583e6}
	updatesPerSec = 10.0 // Fig. 21's models: one network-wide update per 100 ms
)

// Fig. 20: probe generators against fat-tree size.
func fig20(o Options) (Figure, error) {
	fig := Figure{ID: "fig20", Title: "Probe generators vs fat tree k", XLabel: "k", YLabel: "probe generators",
		Conditions: "model (Generators): INT-label 0; INT-path the odd-degree vertices (the k³/4 hosts); Pingmesh hosts + ToRs; HULA ToRs",
		Paper:      "INT-label 0 at every size; Pingmesh the most; INT-path and HULA lower"}
	names := []string{"INT-label", "INT-path", "Pingmesh", "HULA"}
	ss := make([]Series, len(names))
	for i := range ss {
		ss[i].Name = names[i]
	}
	for _, k := range fatTreeKs {
		a, b, c, d := Generators(int(k))
		for i, v := range []int{a, b, c, d} {
			ss[i].X, ss[i].Y = append(ss[i].X, k), append(ss[i].Y, float64(v))
		}
	}
	fig.Series = append(ss, paperSeries("INT-path", paperKs, paperGenPath), paperSeries("Pingmesh", paperKs, paperGenPing), paperSeries("HULA", paperKs, paperGenHULA))
	a, b, c, d := Generators(30)
	fig.Intake = fmt.Sprintf("k = 30: INT-label %d, INT-path %d, Pingmesh %d, HULA %d (the authors' 0, 6750, 7200, 450)", a, b, c, d)
	return fig, nil
}

// The byte sizes the bandwidth models share (Figs. 21 and 22).
const (
	itemBytes  = 32 // one INT-label item (§6.1: "160B (32B*5)")
	intHdr     = 12 // INT shim and header carried by a labeled packet or a probe
	probeHdr   = 42 // Ethernet, IPv4 and UDP headers of a probe packet
	pingBytes  = 64 // one Pingmesh probe (request or reply)
	hulaBytes  = 64 // one HULA probe
	switchIDb  = 32 // bits of a switch id (Fig. 22)
	pintDigest = 16 // PINT's per-packet bits (Fig. 22: "set to 16")
)

// Bandwidth is each system's telemetry bytes per telemetry interval on a k-ary fat tree,
// summed over the links they cross (Fig. 21), for one update of every switch port:
//
//   - INT-label: each of the 5k³/4 switch egress ports labels one packet; its 32-byte item
//     rides every link to the packet's last hop (edge→host 1 link, aggregation→edge 2, core→
//     aggregation 3, aggregation→core 4, edge→aggregation 3 or 5 by §4.3's P(H)), and each
//     labeled packet carries a 12-byte INT header once per link (a labeled packet holds
//     E[Z | Z > 0] items, §4.3 Base B with F1 at T_s/T = 1/2, k's own P(H));
//   - INT-path: probes along Euler trails over every switch-switch link once, re-sent when a
//     probe reaches the MTU (1,500 bytes: 44 items), each hop adding an item;
//   - HULA: every ToR's probe is multicast without suppression: up to its k/2 aggregation
//     switches, from each to the other k/2 − 1 ToRs of the pod and to its k/2 cores, from each
//     core to the aggregation switch of every other pod, and from each of those copies to the
//     pod's k/2 ToRs: 64 bytes a link, k²/2 probes (grows as k⁶, as the authors' data do);
//   - Pingmesh: every host pings the hosts of its own ToR, and every pair of ToRs is pinged
//     once (its ToR-pair level): a request and a reply of 64 bytes over the path's links
//     (grows as k⁴, as the authors' data do).
func Bandwidth(k int) (intLabel, intPath, hula, pingmesh float64) {
	h := HopDist(k)
	kf := float64(k)
	half := kf / 2
	// Directed switch ports by kind, and the links an item labeled there travels.
	edgeUp := (3*h[3] + 5*h[5]) / (h[3] + h[5])
	ports := []struct{ n, links float64 }{
		{kf * kf * kf / 4, 1},      // edge → host
		{kf * kf * kf / 4, 2},      // aggregation → edge
		{kf * kf * kf / 4, 3},      // core → aggregation
		{kf * kf * kf / 4, 4},      // aggregation → core
		{kf * kf * kf / 4, edgeUp}, // edge → aggregation
	}
	b := DistB(k, 0.5, label.F1, GLinear, 5)
	perPacket := b.Expectation / (1 - b.P[0]) // items per labeled packet
	for _, p := range ports {
		intLabel += p.n * p.links * (itemBytes + intHdr/perPacket)
	}
	links := kf * kf * kf / 2 // switch-switch links, undirected
	const maxItems = (1500 - probeHdr - intHdr) / itemBytes
	for left := links; left > 0; left -= maxItems {
		n := math.Min(left, maxItems) // links of this probe
		intPath += n*(probeHdr+intHdr) + itemBytes*n*(n+1)/2
	}
	tors := kf * kf / 2
	perProbe := half + half*(half-1) + half*half + half*half*(kf-1) + half*half*(kf-1)*half
	hula = tors * perProbe * hulaBytes
	// Links of a ping's path: host→edge→host 2; other ToR of the pod 4; other pod 6.
	sameTor := half * (half - 1) * tors * 2
	podPairs := tors * (half - 1) * 4        // ordered ToR pairs in one pod
	otherPairs := tors * (kf - 1) * half * 6 // ordered ToR pairs across pods
	pingmesh = 2 * pingBytes * (sameTor + (podPairs+otherPairs)/2)
	return
}

// Fig. 21: telemetry bandwidth against fat-tree size.
func fig21(o Options) (Figure, error) {
	fig := Figure{ID: "fig21", Title: "Telemetry bandwidth vs fat tree k", XLabel: "k", YLabel: "log10 of Mb/s over all links",
		Conditions: fmt.Sprintf("model (Bandwidth): one update of every switch port per 100 ms; items %d B, INT header %d B, probe headers %d B, HULA and Pingmesh probes %d B; y = log10 of the Mb/s summed over links", itemBytes, intHdr, probeHdr, hulaBytes),
		Paper:      "HULA always the most; Pingmesh good at small sizes, worse as they grow; INT-path ~35% more than INT-label; INT-label the least"}
	names := []string{"INT-label", "INT-path", "HULA", "Pingmesh"}
	ss := make([]Series, len(names))
	for i := range ss {
		ss[i].Name = names[i]
	}
	var ratio []float64
	for _, k := range fatTreeKs {
		a, b, c, d := Bandwidth(int(k))
		for i, v := range []float64{a, b, c, d} {
			ss[i].X, ss[i].Y = append(ss[i].X, k), append(ss[i].Y, math.Log10(v*8*updatesPerSec/1e6))
		}
		ratio = append(ratio, b/a)
	}
	fig.Series = append(ss, paperSeries("INT-label", paperKs, log10s(paperBWLabel)), paperSeries("INT-path", paperKs, log10s(paperBWPath)),
		paperSeries("HULA", paperKs, log10s(paperBWHULA)), paperSeries("Pingmesh", paperKs, log10s(paperBWPing)))
	fig.Intake = fmt.Sprintf("INT-path / INT-label: %.2f at k = 4, %.2f at k = 30 (the authors' 1.35); least to most at k = 4: %s; at k = 30: %s; at k = 10 (Mb/s): INT-label %.1f, INT-path %.1f, HULA %.0f, Pingmesh %.1f (the authors' 32.1, 43.3, 6016, 22.1)",
		ratio[0], last(ratio), order(ss, 0), order(ss, len(fatTreeKs)-1), math.Pow(10, ss[0].Y[3]), math.Pow(10, ss[1].Y[3]), math.Pow(10, ss[2].Y[3]), math.Pow(10, ss[3].Y[3]))
	return fig, nil
}

func log10s(y []float64) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = math.Log10(v)
	}
	return out
}

// order names the series from the least to the most Y at point i.
func order(ss []Series, i int) string {
	idx := make([]int, len(ss))
	for j := range idx {
		idx[j] = j
	}
	sort.SliceStable(idx, func(a, b int) bool { return ss[idx[a]].Y[i] < ss[idx[b]].Y[i] })
	var names []string
	for _, j := range idx {
		names = append(names, ss[j].Name)
	}
	return strings.Join(names, " < ")
}

// PathTrace is what tracing one flow's path of h switches costs (Fig. 22): packets and
// extra bits. INT-label: one labeled user packet carrying h 32-bit switch ids and an INT
// header; INT (sampling at the ingress, Sel-INT): the same in a probe with its own headers;
// PINT: each packet carries one 16-bit digest of one hop chosen uniformly (its reservoir
// sampling), a 32-bit id taking two digests, so the path is known once all 2h fragments have
// arrived: the mean over runs of that coupon collector's packets, times 16 bits.
func PathTrace(h int, runs int, seed uint64) (labelPkts, labelBits, intPkts, intBits, pintPkts, pintBits float64) {
	labelBits = float64(intHdr*8 + h*switchIDb)
	intBits = labelBits + probeHdr*8
	frags := h * switchIDb / pintDigest
	rng := rand.New(rand.NewPCG(seed, uint64(h)))
	total := 0
	for range runs {
		seen := make([]bool, frags)
		for got := 0; got < frags; total++ {
			// A packet carries hop j's digest; hop j's fragment is chosen by the packet id.
			f := int(rng.Uint64() % uint64(frags))
			if !seen[f] {
				seen[f] = true
				got++
			}
		}
	}
	pintPkts = float64(total) / float64(runs)
	return 1, labelBits, 1, intBits, pintPkts, pintPkts * pintDigest
}

// Fig. 22: path tracing of one flow against the hop count.
func fig22(o Options) (Figure, error) {
	fig := Figure{ID: "fig22", Title: "Path tracing of one flow: packets and extra bits vs hops", XLabel: "hops", YLabel: "packets / extra bits",
		Conditions: fmt.Sprintf("model (PathTrace): 32-bit switch ids; INT-label and INT one packet with a %d-byte INT header (INT a probe with %d bytes of headers more); PINT %d bits a packet, 2 digests an id, uniform hop choice, mean of 1,000 runs", intHdr, probeHdr, pintDigest),
		Paper:      "INT and INT-label one packet at every hop count; PINT more packets as hops grow; INT-label the fewest extra bits, PINT's grow with hops"}
	names := []string{"INT-label packets", "INT packets", "PINT packets", "INT-label bits", "INT bits", "PINT bits"}
	ss := make([]Series, len(names))
	for i := range ss {
		ss[i].Name = names[i]
	}
	for h := 1; h <= 8; h++ {
		lp, lb, ip, ib, pp, pb := PathTrace(h, 1000, seed(o))
		for i, v := range []float64{lp, ip, pp, lb, ib, pb} {
			ss[i].X, ss[i].Y = append(ss[i].X, float64(h)), append(ss[i].Y, v)
		}
	}
	fig.Series = ss
	fig.Intake = fmt.Sprintf("5 hops: packets INT-label 1, INT 1, PINT %.1f; bits %g, %g, %.0f", ss[2].Y[4], ss[3].Y[4], ss[4].Y[4], ss[5].Y[4])
	return fig, nil
}

// gapSink records, per port, the label time and receive time of its newest item, and for
// each later item the gap between receive times and the difference between that gap and
// the gap between label times (§4.2's Q = T_t1 − T_t2).
type gapSink struct {
	next     fabric.Sink
	last     map[uint16][2]int64 // port → (label time, receive time)
	gaps, qs []float64
	tps      []float64 // label gap − T: §4.2's T_p
	t        int64
}

func (g *gapSink) Label(now int64, r *telemetry.Report) {
	for _, it := range r.LabelList() {
		k := uint16(it.SwitchID)<<8 | uint16(it.EgressPort)
		lt := int64(it.EgressTS)
		if p, ok := g.last[k]; ok && lt > p[0] {
			g.gaps = append(g.gaps, float64(now-p[1]))
			g.qs = append(g.qs, float64((now-p[1])-(lt-p[0])))
			g.tps = append(g.tps, float64(lt-p[0]-g.t))
		}
		if p, ok := g.last[k]; !ok || lt > p[0] {
			g.last[k] = [2]int64{lt, now}
		}
	}
	if g.next != nil {
		g.next.Label(now, r)
	}
}

func (g *gapSink) Report(now int64, r *telemetry.Report) {
	if g.next != nil {
		g.next.Report(now, r)
	}
}

// DelayModel is §4.2 measured on one run: the share of a port's update gaps within T_i, the
// formula P_t = 1 − Φ((T + T_p − T_i)/(√2σ)) at the measured mean T_p and σ (√2σ the
// standard deviation of Q), and the window coverage.
type DelayModel struct {
	Within, Formula, Coverage float64
	// FormulaPerGap is P_t evaluated at each gap's own T_p and averaged: §4.2 with T_p's
	// spread instead of its mean.
	FormulaPerGap float64
	Tp, SigmaQ    float64 // ns
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(max(len(x), 1))
}

// Fig. "delay": §4.2's formula against the simulated coverage, Base A over T.
func figDelay(o Options) (Figure, error) {
	fig := Figure{ID: "delay", Title: "§4.2: P_t = 1 − Φ((T + T_p − T_i)/(√2σ)) vs simulated coverage", XLabel: "T (ms)", YLabel: "probability / coverage",
		Conditions: o.setup() + "; Base A, T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point; T_p and σ measured per run (mean label gap − T; standard deviation of receive gap − label gap)",
		Paper:      "§4.2: a port is probed within T_i with probability P_t; below 0.5 once T ≥ T_i; make T < T_i"}
	within, formula, cov := Series{Name: "gaps within T_i (simulated)"}, Series{Name: "P_t (§4.2 at the mean T_p, σ)", Analysis: true}, Series{Name: "window coverage (simulated)"}
	perGap := Series{Name: "P_t at each gap's T_p, averaged", Analysis: true}
	for _, t := range []float64{60, 70, 80, 90, 95, 100, 110} {
		m, err := o.delayModel(time.Duration(t) * time.Millisecond)
		if err != nil {
			return fig, err
		}
		within.X, within.Y = append(within.X, t), append(within.Y, m.Within)
		formula.X, formula.Y = append(formula.X, t), append(formula.Y, m.Formula)
		perGap.X, perGap.Y = append(perGap.X, t), append(perGap.Y, m.FormulaPerGap)
		cov.X, cov.Y = append(cov.X, t), append(cov.Y, m.Coverage)
	}
	fig.Series = []Series{within, formula, perGap, cov}
	fig.Intake = fmt.Sprintf("T = 80 / 90 / 100 ms: gaps within T_i %.3f / %.3f / %.3f, P_t at the mean T_p %.3f / %.3f / %.3f, P_t per gap %.3f / %.3f / %.3f, window coverage %.3f / %.3f / %.3f",
		within.Y[2], within.Y[3], within.Y[5], formula.Y[2], formula.Y[3], formula.Y[5], perGap.Y[2], perGap.Y[3], perGap.Y[5], cov.Y[2], cov.Y[3], cov.Y[5])
	return fig, nil
}

// delayModel runs Base A at labeling interval t and measures §4.2's quantities.
func (o Options) delayModel(t time.Duration) (DelayModel, error) {
	const ti = 100 * time.Millisecond
	g := &gapSink{last: map[uint16][2]int64{}, t: int64(t)}
	s := Setup{Algo: fabric.AlgoA, T: t, Duration: o.dur(20 * time.Second), Seed: seed(o), gaps: g}
	res, err := o.run(s)
	if err != nil {
		return DelayModel{}, err
	}
	m := DelayModel{Tp: mean(g.tps)}
	n := 0
	for _, v := range g.gaps {
		if v <= float64(ti) {
			n++
		}
	}
	m.Within = float64(n) / float64(max(len(g.gaps), 1))
	mq := mean(g.qs)
	for _, q := range g.qs {
		m.SigmaQ += (q - mq) * (q - mq)
	}
	m.SigmaQ = math.Sqrt(m.SigmaQ / float64(max(len(g.qs), 1)))
	// P(Q ≥ T + T_p − T_i) with Q ~ N(0, σ_Q²), σ_Q = √2σ.
	m.Formula = 1 - phi((float64(t)+m.Tp-float64(ti))/m.SigmaQ)
	for _, tp := range g.tps {
		m.FormulaPerGap += (1 - phi((float64(t)+tp-float64(ti))/m.SigmaQ)) / float64(len(g.tps))
	}
	m.Coverage, _ = o.coverage(res)
	return m, nil
}

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
