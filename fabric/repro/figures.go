package repro

import (
	"fmt"
	"time"

	"github.com/intake-int/intake/fabric"
	"github.com/intake-int/intake/label"
)

var ab = []fabric.Algo{fabric.AlgoA, fabric.AlgoB}

// variant is one labeling scheme of Figs. 12 and 13.
type variant struct {
	a       fabric.Algo
	pro     bool // Algorithm 3
	proFlag bool // the prototype's flag controller
}

var proVariants = []variant{{a: fabric.AlgoA}, {a: fabric.AlgoB}, {a: fabric.AlgoA, pro: true}, {a: fabric.AlgoA, proFlag: true}}

func (v variant) name() string {
	if v.proFlag {
		return "Pro (prototype flag)"
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
			res, err := Run(Setup{Algo: a, Rate: r, Duration: o.dur(20 * time.Second), Seed: seed(o)})
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
			res, err := Run(Setup{Algo: a, T: t * time.Millisecond, Seed: seed(o)})
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
			res, err := Run(Setup{Algo: a, T: time.Duration(float64(100*time.Millisecond) / r), Duration: o.dur(20 * time.Second), Seed: seed(o)})
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
		res, err := Run(Setup{Algo: fabric.AlgoA, T: t * time.Millisecond, Duration: o.dur(10 * time.Second), Seed: seed(o)})
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
			"Pro (prototype flag) = Base A + the prototype's controller (label every packet for 10 T_i after a port misses T_i)",
		Paper: "Pro stays around 99%; Base A/B fall as T grows"}
	labels := make([]float64, len(proVariants))
	for i, v := range proVariants {
		s := Series{Name: v.name()}
		for _, t := range ts {
			res, err := Run(Setup{Algo: v.a, Pro: v.pro, ProFlag: v.proFlag, T: t * time.Millisecond, Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			s.X, s.Y = append(s.X, float64(t)), append(s.Y, res.Coverage)
			labels[i] = float64(res.Labels)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("at T = 100 ms: A %.3f, B %.3f, Pro (Algorithm 3) %.3f with %.2fx A's labels, Pro (prototype flag) %.3f with %.1fx A's labels",
		last(fig.Series[0].Y), last(fig.Series[1].Y), last(fig.Series[2].Y), labels[2]/labels[0], last(fig.Series[3].Y), labels[3]/labels[0])
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
			res, err := Run(Setup{Algo: v.a, Pro: v.pro, ProFlag: v.proFlag, Loss: l, Duration: o.dur(20 * time.Second), Seed: seed(o)})
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

// Figs. 15-16: E[Z_A], E[Z_B] from §4.3 against k and T_s/T, next to E[Z] measured on the
// emulator (zSim) and the analysis evaluated at the labeling probability measured there.
func fig1516(o Options) (Figure, error) {
	fig := Figure{ID: "fig15-16", Title: "Expected labeling times: analysis (§4.3) and simulation", XLabel: "k (Fig. 15, T_s/T = 1/100) | 100·T_s/T (Fig. 16)", YLabel: "E[Z]",
		Paper: "E[Z] grows with k and with T_s/T; Base B above Base A"}
	var a15, b15, a16, b16 Series
	a15.Name, b15.Name, a16.Name, b16.Name = "Base A analysis vs k", "Base B analysis vs k", "Base A analysis vs Ts/T (k=20)", "Base B analysis vs Ts/T (k=20)"
	for k := 4; k <= 48; k += 4 {
		a := label.DistA(k, 0.01)
		b := label.DistB(k, 0.01, label.F2, label.GLinear, 6)
		a15.X, a15.Y = append(a15.X, float64(k)), append(a15.Y, a.Expectation)
		b15.X, b15.Y = append(b15.X, float64(k)), append(b15.Y, b.Expectation)
	}
	ratios := []float64{0.001, 0.005, 0.01, 0.02, 0.05, 0.1}
	for _, r := range ratios {
		a := label.DistA(20, r)
		b := label.DistB(20, r, label.F2, label.GLinear, 6)
		a16.X, a16.Y = append(a16.X, 100*r), append(a16.Y, a.Expectation)
		b16.X, b16.Y = append(b16.X, 100*r), append(b16.Y, b.Expectation)
	}
	fig.Series = []Series{a15, b15, a16, b16}

	// Simulation: fat trees up to k = 8 (k = 14, the largest with 8-bit switch ids, in the
	// long variant); Fig. 16's sweep at k = 8 (paper: k = 20).
	ks, k16, pkts := []int{4, 6, 8}, 8, 200_000
	if o.Long {
		ks, k16, pkts = []int{4, 6, 8, 10, 12, 14}, 14, 1_000_000
	}
	sim := func(name string, xs []float64, run func(i int, a fabric.Algo) (float64, zResult, error)) error {
		for _, a := range ab {
			s := Series{Name: algoName(a, false) + " simulated " + name}
			an := Series{Name: algoName(a, false) + " analysis at measured Ts/T " + name}
			for i, x := range xs {
				k, res, err := run(i, a)
				if err != nil {
					return err
				}
				// The analysis at the per-hop labeling probability Base A measured: B's
				// analysis takes T_s/T, not B's own label rate, as its input.
				r := res.R
				if a == fabric.AlgoB {
					_, ra, err := run(i, fabric.AlgoA)
					if err != nil {
						return err
					}
					r = ra.R
				}
				e := label.DistA(int(k), r).Expectation
				if a == fabric.AlgoB {
					e = label.DistB(int(k), r, label.F2, label.GLinear, 6).Expectation
				}
				s.X, s.Y = append(s.X, x), append(s.Y, res.EZ)
				an.X, an.Y = append(an.X, x), append(an.Y, e)
			}
			fig.Series = append(fig.Series, s, an)
		}
		return nil
	}
	cache := map[zSim]zResult{}
	runZ := func(z zSim) (zResult, error) {
		if r, ok := cache[z]; ok {
			return r, nil
		}
		r, err := z.run()
		cache[z] = r
		return r, err
	}
	var kx []float64
	for _, k := range ks {
		kx = append(kx, float64(k))
	}
	if err := sim("vs k", kx, func(i int, a fabric.Algo) (float64, zResult, error) {
		r, err := runZ(zSim{K: ks[i], Ratio: 0.01, Algo: a, Packets: pkts, Seed: seed(o)})
		return float64(ks[i]), r, err
	}); err != nil {
		return fig, err
	}
	var rx []float64
	for _, r := range ratios {
		rx = append(rx, 100*r)
	}
	if err := sim(fmt.Sprintf("vs Ts/T (k=%d)", k16), rx, func(i int, a fabric.Algo) (float64, zResult, error) {
		r, err := runZ(zSim{K: k16, Ratio: ratios[i], Algo: a, Packets: pkts, Seed: seed(o)})
		return float64(k16), r, err
	}); err != nil {
		return fig, err
	}
	fig.Conditions = fmt.Sprintf("analysis: f(i) = i/5 (F2 with MAX_hop 6, as Figs. 15-16), g linear; simulation: k-ary fat tree, every host sends Poisson 1 kB packets "+
		"to uniformly random hosts, ECMP, T set so that T_s/T is the nominal ratio, %d packets measured after 1.2 T; 'analysis at measured Ts/T' "+
		"evaluates §4.3 at the per-hop labeling probability Base A showed in the same traffic", pkts)
	sa, aa, sb, ab := fig.Series[4], fig.Series[5], fig.Series[6], fig.Series[7]
	fig.Intake = fmt.Sprintf("analysis k=4→48: A %.4f→%.4f, B %.4f→%.4f; at k=%d, T_s/T=1/100: simulated A %.4f (analysis %.4f), B %.4f (analysis %.4f)",
		a15.Y[0], last(a15.Y), b15.Y[0], last(b15.Y), ks[len(ks)-1], last(sa.Y), last(aa.Y), last(sb.Y), last(ab.Y))
	return fig, nil
}

// Fig. 17: labeled packets by number of items.
func fig17(o Options) (Figure, error) {
	fig := Figure{ID: "fig17", Title: "Exported packets by labeling times", XLabel: "labeling times", YLabel: "packets",
		Conditions: "testbed, 10,000 packets, T = 50 ms, Base B F1, T1 = 0",
		Paper:      "A: 1 most, decreasing to 5; B: 1 most, then 5, many 4 and 5"}
	for _, a := range ab {
		res, err := Run(Setup{Algo: a, Seed: seed(o)})
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

// Fig. 18: rest time T1.
func fig18(o Options) (Figure, error) {
	fig := Figure{ID: "fig18", Title: "Impact of the rest time T1 (Base B)", XLabel: "T1 / T", YLabel: "count",
		Conditions: "testbed, 10,000 packets, T = 50 ms, F1",
		Paper:      "labeling times fall and labeled packets rise as T1 → T; they cross near T1 = T/2"}
	lab, tim := Series{Name: "labeled packets"}, Series{Name: "labeling times"}
	for _, r := range []float64{0, 0.25, 0.5, 0.75, 1} {
		res, err := Run(Setup{Algo: fabric.AlgoB, T1: time.Duration(r * float64(50*time.Millisecond)), Seed: seed(o)})
		if err != nil {
			return fig, err
		}
		lab.X, lab.Y = append(lab.X, r), append(lab.Y, float64(res.Labeled))
		tim.X, tim.Y = append(tim.X, r), append(tim.Y, float64(res.Labels))
	}
	fig.Series = []Series{lab, tim}
	fig.Intake = fmt.Sprintf("labeled %v; labeling times %v", lab.Y, tim.Y)
	return fig, nil
}

// Fig. 19: probability functions.
func fig19(o Options) (Figure, error) {
	fig := Figure{ID: "fig19", Title: "Impact of the probability function (Base B)", XLabel: "F1, F2, F3", YLabel: "count",
		Conditions: "testbed, 10,000 packets, T = 50 ms, T1 = 0, MAX_hop 5",
		Paper:      "F1 best (fewest labeled packets and labels), F2 second, F3 worst"}
	lab, tim := Series{Name: "labeled packets"}, Series{Name: "labeling times"}
	for i, f := range []label.F{label.F1, label.F2, label.F3} {
		res, err := Run(Setup{Algo: fabric.AlgoB, F: f, Seed: seed(o)})
		if err != nil {
			return fig, err
		}
		lab.X, lab.Y = append(lab.X, float64(i+1)), append(lab.Y, float64(res.Labeled))
		tim.X, tim.Y = append(tim.X, float64(i+1)), append(tim.Y, float64(res.Labels))
	}
	fig.Series = []Series{lab, tim}
	fig.Intake = fmt.Sprintf("labeled F1/F2/F3 %v; labeling times %v", lab.Y, tim.Y)
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
