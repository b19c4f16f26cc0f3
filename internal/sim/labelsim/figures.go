package labelsim

import (
	"fmt"
	"math"
	"time"

	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
)

var ab = []fabric.Algo{fabric.AlgoA, fabric.AlgoB}

// variant is one labeling scheme of Figs. 12 and 13.
type variant struct {
	a       fabric.Algo
	pro     bool    // Algorithm 3
	proFlag bool    // the prototype's flag controller
	k       float64 // Algorithm 3's k (0: 1)
}

var proVariants = []variant{{a: fabric.AlgoA}, {a: fabric.AlgoB}, {a: fabric.AlgoA, pro: true}, {a: fabric.AlgoA, proFlag: true}}

// fig12Variants adds Algorithm 3 with k = 0.5: the paper leaves Fig. 12's k unstated, and
// at k = 0.5 a port is sped up before it misses a window (docs/label-results.md).
var fig12Variants = append(proVariants[:len(proVariants):len(proVariants)], variant{a: fabric.AlgoA, pro: true, k: 0.5})

func (v variant) name() string {
	if v.proFlag {
		return "Pro (prototype flag)"
	}
	if v.pro && v.k != 0 {
		return fmt.Sprintf("Pro (k = %g)", v.k)
	}
	return algoName(v.a, v.pro)
}

func algoName(a fabric.Algo, pro bool) string {
	if pro {
		return "Pro"
	}
	if a == fabric.AlgoA {
		return "Base A"
	}
	return "Base B"
}

// Fig. 6: coverage and INT bandwidth occupation against the background rate.
func fig6(o Options) (Figure, error) {
	rates := []float64{0.25e6, 0.5e6, 1e6, 2e6, 3e6, 5e6, 8e6}
	fig := Figure{ID: "fig6", Title: "Coverage and INT bandwidth occupation vs background rate", XLabel: "rate per sender (Mb/s)", YLabel: "coverage / occupation",
		Conditions: "testbed, 2 senders, 1 kB Poisson, fixed routes, T = 50 ms, T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "coverage rises with rate to a turning point; occupation falls; Base B above Base A in both"}
	for _, a := range ab {
		cov := Series{Name: algoName(a, false) + " coverage"}
		occ := Series{Name: algoName(a, false) + " occupation"}
		for _, r := range rates {
			res, err := o.run(Setup{Algo: a, Rate: r, Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			cov.X, cov.Y = append(cov.X, r/1e6), append(cov.Y, res.Coverage)
			occ.X, occ.Y = append(occ.X, r/1e6), append(occ.Y, res.BWOccupancy)
		}
		fig.Series = append(fig.Series, cov, occ)
	}
	fig.Intake = fmt.Sprintf("coverage A %.3f→%.3f, B %.3f→%.3f; occupation A %.4f→%.4f", fig.Series[0].Y[0], last(fig.Series[0].Y),
		fig.Series[2].Y[0], last(fig.Series[2].Y), fig.Series[1].Y[0], last(fig.Series[1].Y))
	return fig, nil
}

// Figs. 7 and 8: labeled packets and labeling times against T (10,000 packets).
func fig78(o Options) (Figure, error) {
	ts := []time.Duration{10, 20, 40, 60, 80, 100}
	fig := Figure{ID: "fig7-8", Title: "Labeled packets (Fig. 7) and labeling times (Fig. 8) vs labeling interval", XLabel: "T (ms)", YLabel: "count",
		Conditions: "testbed, 10,000 packets, 5 Mb/s per sender, Base B with F1, T1 = 0",
		Paper:      "Base B needs 35.2% fewer labeled packets than Base A at T = 100 ms; few extra labels"}
	var lab, tim [2]Series
	for i, a := range ab {
		lab[i].Name, tim[i].Name = algoName(a, false)+" labeled packets", algoName(a, false)+" labeling times"
		for _, t := range ts {
			res, err := o.run(Setup{Algo: a, T: t * time.Millisecond, Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			x := float64(t)
			lab[i].X, lab[i].Y = append(lab[i].X, x), append(lab[i].Y, float64(res.Labeled))
			tim[i].X, tim[i].Y = append(tim[i].X, x), append(tim[i].Y, float64(res.Labels))
		}
	}
	fig.Series = []Series{lab[0], lab[1], tim[0], tim[1]}
	red := 1 - last(lab[1].Y)/last(lab[0].Y)
	fig.Intake = fmt.Sprintf("Base B %.1f%% fewer labeled packets at T = 100 ms; labeling times +%.1f%%", 100*red, 100*(last(tim[1].Y)/last(tim[0].Y)-1))
	return fig, nil
}

// Fig. 9: coverage against telemetry interval / labeling interval.
func fig9(o Options) (Figure, error) {
	ratios := []float64{0.8, 1, 1.2, 1.4, 1.6, 2, 2.4}
	fig := Figure{ID: "fig9", Title: "Coverage vs telemetry interval / labeling interval", XLabel: "T_i / T", YLabel: "coverage",
		Conditions: "testbed, T_i = 100 ms, T = T_i / ratio, 5 Mb/s per sender, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "≥ 0.98 at ratio 1.6 (A and B); 99.72% at ratio 2 (labeling 20/s, resolution 10/s)"}
	for _, a := range ab {
		s := Series{Name: algoName(a, false)}
		for _, r := range ratios {
			res, err := o.run(Setup{Algo: a, T: time.Duration(float64(100*time.Millisecond) / r), Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			s.X, s.Y = append(s.X, r), append(s.Y, res.Coverage)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("ratio 1.6: A %.4f, B %.4f; ratio 2: A %.4f, B %.4f", fig.Series[0].Y[4], fig.Series[1].Y[4], fig.Series[0].Y[5], fig.Series[1].Y[5])
	return fig, nil
}

// Fig. 11: coverage over time for several T (Base A).
func fig11(o Options) (Figure, error) {
	fig := Figure{ID: "fig11", Title: "Coverage over time (Base A)", XLabel: "time (s)", YLabel: "coverage",
		Conditions: "testbed, T_i = 100 ms, 5 Mb/s per sender, " + o.dur(10*time.Second).String(),
		Paper:      "T = 20 ms stays at 100%; longer T jitters more"}
	for _, t := range []time.Duration{20, 50, 80} {
		res, err := o.run(Setup{Algo: fabric.AlgoA, T: t * time.Millisecond, Duration: o.dur(10 * time.Second), Seed: seed(o)})
		if err != nil {
			return fig, err
		}
		s := Series{Name: fmt.Sprintf("T = %d ms", t)}
		for i, c := range res.Windows {
			s.X, s.Y = append(s.X, float64(i+1)/10), append(s.Y, c)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("min coverage: T=20 %.3f, T=50 %.3f, T=80 %.3f", minOf(fig.Series[0].Y), minOf(fig.Series[1].Y), minOf(fig.Series[2].Y))
	return fig, nil
}

// Fig. 12: Base A/B against Pro as T approaches T_i.
func fig12(o Options) (Figure, error) {
	ts := []time.Duration{60, 70, 80, 90, 100}
	fig := Figure{ID: "fig12", Title: "Coverage of Base A/B and Pro vs labeling interval", XLabel: "T (ms)", YLabel: "coverage",
		Conditions: "testbed, T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point; Pro = Base A + Algorithm 3 (k = 1, max S 5, 5 ms loop) in the collector; " +
			"Pro (prototype flag) = Base A + the prototype's controller (label every packet for 10 T_i after a port misses T_i); Pro (k = 0.5) = Algorithm 3 with k = 0.5",
		Paper: "Pro stays around 99%; Base A/B fall as T grows"}
	labels := make([]float64, len(fig12Variants))
	for i, v := range fig12Variants {
		s := Series{Name: v.name()}
		for _, t := range ts {
			res, err := o.run(Setup{Algo: v.a, Pro: v.pro, ProFlag: v.proFlag, K: v.k, T: t * time.Millisecond, Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			s.X, s.Y = append(s.X, float64(t)), append(s.Y, res.Coverage)
			labels[i] = float64(res.Labels)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("at T = 100 ms: A %.3f, B %.3f, Pro (Algorithm 3) %.3f with %.2fx A's labels, Pro (prototype flag) %.3f with %.1fx A's labels, Pro (k = 0.5) %.3f with %.2fx A's labels",
		last(fig.Series[0].Y), last(fig.Series[1].Y), last(fig.Series[2].Y), labels[2]/labels[0], last(fig.Series[3].Y), labels[3]/labels[0], last(fig.Series[4].Y), labels[4]/labels[0])
	return fig, nil
}

// Fig. 13: coverage under packet loss.
func fig13(o Options) (Figure, error) {
	losses := []float64{0, 0.05, 0.1, 0.2, 0.3, 0.4}
	fig := Figure{ID: "fig13", Title: "Coverage vs packet loss", XLabel: "end-to-end loss", YLabel: "coverage",
		Conditions: "testbed, T = 50 ms, T_i = 100 ms, loss on every switch-switch link (x: measured end-to-end), Pro k = 1, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "coverage degrades with loss; Pro keeps about 92% at 60% loss"}
	for _, v := range proVariants {
		s := Series{Name: v.name()}
		for _, l := range losses {
			res, err := o.run(Setup{Algo: v.a, Pro: v.pro, ProFlag: v.proFlag, Loss: l, Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			s.X, s.Y = append(s.X, res.E2ELoss), append(s.Y, res.Coverage)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("at %.0f%% loss: A %.3f, B %.3f, Pro (Algorithm 3) %.3f, Pro (prototype flag) %.3f; at %.0f%% loss: Pro %.3f",
		100*last(fig.Series[2].X), last(fig.Series[0].Y), last(fig.Series[1].Y), last(fig.Series[2].Y), last(fig.Series[3].Y),
		100*fig.Series[2].X[4], fig.Series[2].Y[4])
	return fig, nil
}

// zFigure is Fig. 15 or 16: §4.3's E[Z_A], E[Z_B] (f(i) = i/5, g linear) over xs, next to
// E[Z] measured on the emulator (zSim) at the simulated points and the analysis evaluated at
// the labeling probability measured there.
type zFigure struct {
	analysis func(x float64, b bool) float64 // E[Z] at the paper's point x
	xs       []float64                       // the paper's points
	simXs    []float64                       // simulated points
	sim      func(x float64, a fabric.Algo) zSim
}

func (z zFigure) fill(fig *Figure, o Options) error {
	var an [2]Series
	for i, a := range ab {
		an[i].Name, an[i].Analysis = algoName(a, false)+": analysis", true
		for _, x := range z.xs {
			an[i].X, an[i].Y = append(an[i].X, x), append(an[i].Y, z.analysis(x, a == fabric.AlgoB))
		}
	}
	fig.Series = append(fig.Series, an[0], an[1])
	done := map[zSim]zResult{} // Base A's runs serve both algorithms
	run := func(zs zSim) (zResult, error) {
		if r, ok := done[zs]; ok {
			return r, nil
		}
		r, err := zs.run()
		done[zs] = r
		return r, err
	}
	for _, a := range ab {
		sim := Series{Name: algoName(a, false) + ": simulated"}
		at := Series{Name: algoName(a, false) + ": analysis at measured r", Analysis: true}
		for _, x := range z.simXs {
			// r is the per-hop labeling probability Base A shows in this traffic: T_s/T as
			// the emulator realizes it, the input of both analyses.
			za := z.sim(x, fabric.AlgoA)
			ra, err := run(za)
			if err != nil {
				return err
			}
			res := ra
			e := DistA(za.K, ra.R).Expectation
			if a == fabric.AlgoB {
				zb := z.sim(x, fabric.AlgoB)
				if res, err = run(zb); err != nil {
					return err
				}
				e = DistB(zb.K, ra.R, label.F2, GLinear, 6).Expectation
			}
			sim.X, sim.Y = append(sim.X, x), append(sim.Y, res.EZ)
			at.X, at.Y = append(at.X, x), append(at.Y, e)
		}
		fig.Series = append(fig.Series, sim, at)
	}
	return nil
}

// zPackets is how many packets each simulated point measures.
func zPackets(o Options) int {
	if o.Long {
		return 1_000_000
	}
	return 200_000
}

const zConditions = "analysis: f(i) = i/5 (F2 with MAX_hop 6, as Figs. 15-16), g linear; simulation: k-ary fat tree, every host sends Poisson 1 kB packets " +
	"to uniformly random hosts, ECMP, T set so that T_s/T is the nominal ratio, %d packets measured after 1.2 T; 'analysis at measured r' " +
	"evaluates §4.3 at the per-hop labeling probability r = labels/packet-hops of Base A in the same traffic"

// Fig. 15: E[Z] against k at T_s/T = 1/100; simulated up to k = 8 (k = 14, the largest with
// 8-bit switch ids, in the long variant).
func fig15(o Options) (Figure, error) {
	fig := Figure{ID: "fig15", Title: "Expected labeling times vs fat tree k (T_s/T = 1/100)", XLabel: "k", YLabel: "E[Z]",
		Conditions: fmt.Sprintf(zConditions, zPackets(o)), Paper: "E[Z] grows with k; Base B above Base A"}
	z := zFigure{
		analysis: func(k float64, b bool) float64 {
			if b {
				return DistB(int(k), 0.01, label.F2, GLinear, 6).Expectation
			}
			return DistA(int(k), 0.01).Expectation
		},
		simXs: []float64{4, 6, 8},
		sim: func(k float64, a fabric.Algo) zSim {
			return zSim{K: int(k), Ratio: 0.01, Algo: a, Packets: zPackets(o), Seed: seed(o)}
		},
	}
	for k := 4; k <= 48; k += 4 {
		z.xs = append(z.xs, float64(k))
	}
	if o.Long {
		z.simXs = []float64{4, 6, 8, 10, 12, 14}
	}
	if err := z.fill(&fig, o); err != nil {
		return fig, err
	}
	a, b, sa, aa, sb, bb := fig.Series[0], fig.Series[1], fig.Series[2], fig.Series[3], fig.Series[4], fig.Series[5]
	fig.Intake = fmt.Sprintf("analysis k=4→48: A %.4f→%.4f, B %.4f→%.4f; at k=%v: simulated A %.4f (analysis at measured r %.4f), B %.4f (%.4f)",
		a.Y[0], last(a.Y), b.Y[0], last(b.Y), last(sa.X), last(sa.Y), last(aa.Y), last(sb.Y), last(bb.Y))
	return fig, nil
}

// Fig. 16: E[Z] against T_s/T; the analysis at k = 20 as the paper, simulated at k = 8 (14 in
// the long variant).
func fig16(o Options) (Figure, error) {
	k := 8
	if o.Long {
		k = 14
	}
	fig := Figure{ID: "fig16", Title: fmt.Sprintf("Expected labeling times vs T_s/T (analysis k = 20, simulated k = %d)", k), XLabel: "100·T_s/T", YLabel: "E[Z]",
		Conditions: fmt.Sprintf(zConditions, zPackets(o)), Paper: "E[Z] grows with T_s/T; Base B above Base A"}
	xs := []float64{0.1, 0.5, 1, 2, 5, 10}
	z := zFigure{
		analysis: func(x float64, b bool) float64 {
			if b {
				return DistB(20, x/100, label.F2, GLinear, 6).Expectation
			}
			return DistA(20, x/100).Expectation
		},
		xs: xs, simXs: xs,
		sim: func(x float64, a fabric.Algo) zSim {
			return zSim{K: k, Ratio: x / 100, Algo: a, Packets: zPackets(o), Seed: seed(o)}
		},
	}
	if err := z.fill(&fig, o); err != nil {
		return fig, err
	}
	a, b, sa, aa, sb, bb := fig.Series[0], fig.Series[1], fig.Series[2], fig.Series[3], fig.Series[4], fig.Series[5]
	fig.Intake = fmt.Sprintf("analysis (k=20) T_s/T 0.001→0.1: A %.4f→%.4f, B %.4f→%.4f; simulated (k=%d) at 1/100: A %.4f (analysis at measured r %.4f), B %.4f (%.4f)",
		a.Y[0], last(a.Y), b.Y[0], last(b.Y), k, sa.Y[2], aa.Y[2], sb.Y[2], bb.Y[2])
	return fig, nil
}

// Fig. 17: labeled packets by number of items.
func fig17(o Options) (Figure, error) {
	fig := Figure{ID: "fig17", Title: "Exported packets by labeling times", XLabel: "labeling times", YLabel: "packets",
		Conditions: "testbed, 10,000 packets, T = 50 ms, Base B F1, T1 = 0",
		Paper:      "A: 1 most, decreasing to 5; B: 1 most, then 5, many 4 and 5"}
	for _, a := range ab {
		res, err := o.run(Setup{Algo: a, Seed: seed(o)})
		if err != nil {
			return fig, err
		}
		s := Series{Name: algoName(a, false)}
		for n := 1; n <= 5; n++ {
			s.X, s.Y = append(s.X, float64(n)), append(s.Y, float64(res.Hist[n]))
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("A %v; B %v", fig.Series[0].Y, fig.Series[1].Y)
	return fig, nil
}

// countFigure fills fig with the labeled (exported) packets and the labeling operations of
// one 10,000-packet Base B run per x, setup(i) giving run i's setup.
func countFigure(fig *Figure, o Options, xs []float64, setup func(i int) Setup) error {
	lab, tim := Series{Name: "labeled packets"}, Series{Name: "labeling times"}
	for i, x := range xs {
		res, err := o.run(setup(i))
		if err != nil {
			return err
		}
		lab.X, lab.Y = append(lab.X, x), append(lab.Y, float64(res.Labeled))
		tim.X, tim.Y = append(tim.X, x), append(tim.Y, float64(res.Labels))
	}
	fig.Series = []Series{lab, tim}
	return nil
}

// Fig. 18: rest time T1.
func fig18(o Options) (Figure, error) {
	fig := Figure{ID: "fig18", Title: "Impact of the rest time T1 (Base B)", XLabel: "T1 / T", YLabel: "count",
		Conditions: "testbed, 10,000 packets, T = 50 ms, F1",
		Paper:      "labeling times fall and labeled packets rise as T1 → T; they cross near T1 = T/2"}
	rs := []float64{0, 0.25, 0.5, 0.75, 1}
	err := countFigure(&fig, o, rs, func(i int) Setup {
		return Setup{Algo: fabric.AlgoB, T1: time.Duration(rs[i] * float64(50*time.Millisecond)), Seed: seed(o)}
	})
	if err != nil {
		return fig, err
	}
	fig.Intake = fmt.Sprintf("labeled %v; labeling times %v; on two axes each spanning its curve, the curves cross at T1/T = %.2f",
		fig.Series[0].Y, fig.Series[1].Y, Crossing(fig.Series[0], fig.Series[1]))
	return fig, nil
}

// Crossing is where a and b (same X) cross when each is drawn on its own axis spanning its
// range, as Fig. 18 draws labeled packets and labeling times: the first x where the
// min-max normalized curves meet, linearly interpolated; NaN if they do not.
func Crossing(a, b Series) float64 {
	norm := func(y []float64, i int) float64 {
		lo, hi := y[0], y[0]
		for _, v := range y {
			lo, hi = min(lo, v), max(hi, v)
		}
		if hi == lo {
			return 0
		}
		return (y[i] - lo) / (hi - lo)
	}
	for i := 1; i < len(a.X); i++ {
		d0 := norm(a.Y, i-1) - norm(b.Y, i-1)
		d1 := norm(a.Y, i) - norm(b.Y, i)
		if d0 == 0 {
			return a.X[i-1]
		}
		if d0*d1 < 0 || d1 == 0 {
			return a.X[i-1] + (a.X[i]-a.X[i-1])*d0/(d0-d1)
		}
	}
	return math.NaN()
}

// Fig. 19: probability functions.
func fig19(o Options) (Figure, error) {
	fig := Figure{ID: "fig19", Title: "Impact of the probability function (Base B)", XLabel: "F1, F2, F3", YLabel: "count",
		Conditions: "testbed, 10,000 packets, T = 50 ms, T1 = 0, MAX_hop 5",
		Paper:      "F1 best (fewest labeled packets and labels), F2 second, F3 worst"}
	fs := []label.F{label.F1, label.F2, label.F3}
	if o.Paper {
		// The prototype's F3 is its P_time alone: (CT − LT − T1)/(T − T1), INT_num unused.
		fs[2] = label.F3Proto
		fig.Conditions += "; F3 as the prototype's code evaluates it: (CT − LT)/T for every packet"
	}
	err := countFigure(&fig, o, []float64{1, 2, 3}, func(i int) Setup { return Setup{Algo: fabric.AlgoB, F: fs[i], Seed: seed(o)} })
	if err != nil {
		return fig, err
	}
	fig.Intake = fmt.Sprintf("labeled F1/F2/F3 %v; labeling times %v", fig.Series[0].Y, fig.Series[1].Y)
	return fig, nil
}

func last(y []float64) float64 { return y[len(y)-1] }

func minOf(y []float64) float64 {
	m := 1.0
	for _, v := range y {
		m = min(m, v)
	}
	return m
}
