package labelsim

import (
	"fmt"
	"math"
	"time"

	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
)

var ab = []fabric.Algo{fabric.AlgoA, fabric.AlgoB}

// variant is one labeling scheme of Figs. 12 and 13 and of the Algorithm 3 study.
type variant struct {
	a    fabric.Algo
	pro  bool    // "Pro": the §5 flag controller of the paper's prototype (flagpro.go)
	alg3 bool    // Algorithm 3 in the collector (label.Controller.Tick)
	k    float64 // Algorithm 3's k
}

// proVariants are the schemes of Figs. 12 and 13: Base A, Base B, and Pro as §5 implements
// it. Algorithm 3 is the sensitivity study alg3-k, never a paper figure's default.
var proVariants = []variant{{a: fabric.AlgoA}, {a: fabric.AlgoB}, {a: fabric.AlgoA, pro: true}}

func (v variant) name() string {
	if v.alg3 {
		return fmt.Sprintf("Algorithm 3 (k = %g)", v.k)
	}
	return algoName(v.a, v.pro)
}

func (v variant) setup(s Setup) Setup {
	s.Algo, s.ProFlag, s.Pro, s.K = v.a, v.pro, v.alg3, v.k
	return s
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

// paperSeries is the paper's own points: from its text, or from the authors' plotted data
// (the public prototype graytower/INT_LABEL, first commit 59c5ea3, "Experiment result/").
func paperSeries(name string, x, y []float64) Series {
	return Series{Name: "paper: " + name, X: x, Y: y, Paper: true}
}

func scaled(y []float64, f float64) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = v * f
	}
	return out
}

// Fig. 6: coverage and INT bandwidth occupation against the background rate.
func fig6(o Options) (Figure, error) {
	rates := []float64{0.25e6, 0.5e6, 1e6, 2e6, 3e6, 5e6, 8e6}
	fig := Figure{ID: "fig6", Title: "Coverage and INT bandwidth occupation vs background rate", XLabel: "total rate, both senders (Mb/s)", YLabel: "coverage / occupation",
		Conditions: o.setup() + "; the rate swept (x), 1 kB Poisson, T = 50 ms, T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "coverage rises with rate to a turning point; occupation falls; Base B above Base A in both"}
	for _, a := range ab {
		cov := Series{Name: algoName(a, false) + " coverage"}
		occ := Series{Name: algoName(a, false) + " occupation"}
		for _, r := range rates {
			res, err := o.run(Setup{Algo: a, Rate: r, Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			c, _ := o.coverage(res)
			cov.X, cov.Y = append(cov.X, 2*r/1e6), append(cov.Y, c)
			occ.X, occ.Y = append(occ.X, 2*r/1e6), append(occ.Y, res.BWOccupancy)
		}
		fig.Series = append(fig.Series, cov, occ)
	}
	fig.Intake = fmt.Sprintf("coverage A %.3f→%.3f, B %.3f→%.3f; occupation A %.4f→%.4f", fig.Series[0].Y[0], last(fig.Series[0].Y),
		fig.Series[2].Y[0], last(fig.Series[2].Y), fig.Series[1].Y[0], last(fig.Series[1].Y))
	return fig, nil
}

// paperTs are the labeling intervals of Figs. 7, 8 and 10 (ms).
var paperTs = []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}

// The authors' data for Figs. 7 and 8 (their Fig.4/data.xlsx, in units of 10^4): labeled
// packets and labeling times of Base A and Base B at paperTs, 10,000 packets.
var (
	paperFig7A = []float64{0.6505, 0.5327, 0.4636, 0.3967, 0.3602, 0.3141, 0.2928, 0.27, 0.2478, 0.2344}
	paperFig7B = []float64{0.6423, 0.4772, 0.3908, 0.3137, 0.2714, 0.2325, 0.2066, 0.1877, 0.1668, 0.152}
	paperFig8A = []float64{1.762, 1.195, 0.9743, 0.7599, 0.6471, 0.5527, 0.4935, 0.4409, 0.3944, 0.3597}
	paperFig8B = []float64{1.989, 1.441, 1.169, 0.9199, 0.7993, 0.6806, 0.6027, 0.5446, 0.4828, 0.4412}
)

// Fig. 7: labeled packets against T (10,000 packets).
func fig7(o Options) (Figure, error) {
	fig := Figure{ID: "fig7", Title: "Labeled packets vs labeling interval (Fig. 7)", XLabel: "T (ms)", YLabel: "labeled packets",
		Conditions: o.setup() + "; 10,000 packets, Base B with F1, T1 = 0",
		Paper:      "Base B needs 35.2% fewer labeled packets than Base A at T = 100 ms (authors' data: 2344 and 1520)"}
	lab, err := countAB(o, "labeled packets", func(r Result) float64 { return float64(r.Labeled) })
	if err != nil {
		return fig, err
	}
	fig.Series = []Series{lab[0], lab[1], paperSeries("Base A", paperTs, scaled(paperFig7A, 1e4)), paperSeries("Base B", paperTs, scaled(paperFig7B, 1e4))}
	fig.Intake = fmt.Sprintf("at T = 100 ms: A %.0f, B %.0f labeled packets, Base B %.1f%% fewer", last(lab[0].Y), last(lab[1].Y), 100*(1-last(lab[1].Y)/last(lab[0].Y)))
	return fig, nil
}

// Fig. 8: labeling times against T (10,000 packets).
func fig8(o Options) (Figure, error) {
	fig := Figure{ID: "fig8", Title: "Labeling times vs labeling interval (Fig. 8)", XLabel: "T (ms)", YLabel: "labeling times",
		Conditions: o.setup() + "; 10,000 packets, Base B with F1, T1 = 0",
		Paper:      "Base B adds a few redundant labels (authors' data at T = 100 ms: A 3597, B 4412)"}
	tim, err := countAB(o, "labeling times", func(r Result) float64 { return float64(r.Labels) })
	if err != nil {
		return fig, err
	}
	fig.Series = []Series{tim[0], tim[1], paperSeries("Base A", paperTs, scaled(paperFig8A, 1e4)), paperSeries("Base B", paperTs, scaled(paperFig8B, 1e4))}
	fig.Intake = fmt.Sprintf("at T = 100 ms: A %.0f, B %.0f labeling times (+%.1f%%)", last(tim[0].Y), last(tim[1].Y), 100*(last(tim[1].Y)/last(tim[0].Y)-1))
	return fig, nil
}

// countAB runs Base A and Base B, 10,000 packets, at each of paperTs, and returns what of
// each run y counts, one series per algorithm named after what.
func countAB(o Options, what string, y func(Result) float64) ([2]Series, error) {
	var out [2]Series
	for i, a := range ab {
		out[i].Name = algoName(a, false) + " " + what
		for _, t := range paperTs {
			res, err := o.run(Setup{Algo: a, T: time.Duration(t) * time.Millisecond, Seed: seed(o)})
			if err != nil {
				return out, err
			}
			out[i].X, out[i].Y = append(out[i].X, t), append(out[i].Y, y(res))
		}
	}
	return out, nil
}

// Fig. 9: coverage against telemetry interval / labeling interval, at the ratios of the
// authors' data (their Fig.6/data.xlsx).
func fig9(o Options) (Figure, error) {
	ratios := []float64{1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2}
	fig := Figure{ID: "fig9", Title: "Coverage vs telemetry interval / labeling interval", XLabel: "T_i / T", YLabel: "coverage",
		Conditions: o.setup() + "; T_i = 100 ms, T = T_i / ratio, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "≥ 0.98 at ratio 1.6 (A and B); 99.72% at ratio 2 (labeling 20/s, resolution 10/s); authors' data: A 0.806 → 0.994, B 0.845 → 0.995"}
	for _, a := range ab {
		s := Series{Name: algoName(a, false)}
		for _, r := range ratios {
			res, err := o.run(Setup{Algo: a, T: time.Duration(float64(100*time.Millisecond) / r), Duration: o.dur(20 * time.Second), Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			c, _ := o.coverage(res)
			s.X, s.Y = append(s.X, r), append(s.Y, c)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Series = append(fig.Series,
		paperSeries("Base A", ratios, []float64{0.8064, 0.8688, 0.9124, 0.9386, 0.9626, 0.9768, 0.9852, 0.9856, 0.9902, 0.9922, 0.9942}),
		paperSeries("Base B", ratios, []float64{0.8448, 0.8748, 0.9152, 0.9476, 0.9656, 0.9808, 0.986, 0.9904, 0.9924, 0.9944, 0.9952}))
	fig.Intake = fmt.Sprintf("ratio 1: A %.4f, B %.4f; ratio 1.6: A %.4f, B %.4f; ratio 2: A %.4f, B %.4f", fig.Series[0].Y[0], fig.Series[1].Y[0],
		fig.Series[0].Y[6], fig.Series[1].Y[6], last(fig.Series[0].Y), last(fig.Series[1].Y))
	return fig, nil
}

// Fig. 10: coverage and INT bandwidth against the labeling interval (T_i = 100 ms), beside
// the authors' data (their Fig.7/data.xlsx).
func fig10(o Options) (Figure, error) {
	fig := Figure{ID: "fig10", Title: "Coverage and INT bandwidth vs labeling interval", XLabel: "T (ms)", YLabel: "coverage / INT bandwidth",
		Conditions: o.setup() + "; T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point; INT bandwidth = INT bytes summed over every hop per second",
		Paper:      "coverage rises as T falls, turning point at T = 60 ms (T_i/T = 1.6); INT bandwidth rises as T falls; Base B above Base A in both (authors' data at 100 ms: coverage A 0.885, B 0.905; 0.361 and 0.446 Mb/s)"}
	var cov, bw [2]Series
	for i, a := range ab {
		cov[i].Name, bw[i].Name = algoName(a, false)+" coverage", algoName(a, false)+" INT bandwidth (Mb/s)"
		for _, t := range paperTs {
			d := o.dur(20 * time.Second)
			res, err := o.run(Setup{Algo: a, T: time.Duration(t) * time.Millisecond, Duration: d, Seed: seed(o)})
			if err != nil {
				return fig, err
			}
			c, _ := o.coverage(res)
			cov[i].X, cov[i].Y = append(cov[i].X, t), append(cov[i].Y, c)
			bw[i].X, bw[i].Y = append(bw[i].X, t), append(bw[i].Y, float64(res.Stats.INTBytes)*8/d.Seconds()/1e6)
		}
	}
	fig.Series = []Series{cov[0], cov[1], bw[0], bw[1],
		paperSeries("Base A coverage", paperTs, []float64{0.9996, 0.9976, 0.9972, 0.994, 0.992, 0.9916, 0.9836, 0.9708, 0.9388, 0.8852}),
		paperSeries("Base B coverage", paperTs, []float64{0.9992, 0.9976, 0.9992, 0.9976, 0.9972, 0.9928, 0.9856, 0.9776, 0.964, 0.9048}),
		paperSeries("Base A INT bandwidth (Mb/s)", paperTs, []float64{1.763, 1.191, 0.9842, 0.7705, 0.6494, 0.553, 0.4855, 0.4373, 0.3902, 0.3609}),
		paperSeries("Base B INT bandwidth (Mb/s)", paperTs, []float64{1.976, 1.434, 1.174, 0.9265, 0.8062, 0.685, 0.6075, 0.5399, 0.486, 0.4462})}
	fig.Intake = fmt.Sprintf("coverage at T = 10 / 60 / 100 ms: A %.4f / %.4f / %.4f, B %.4f / %.4f / %.4f; INT bandwidth at 10 / 100 ms: A %.3f / %.3f, B %.3f / %.3f Mb/s",
		cov[0].Y[0], cov[0].Y[5], last(cov[0].Y), cov[1].Y[0], cov[1].Y[5], last(cov[1].Y), bw[0].Y[0], last(bw[0].Y), bw[1].Y[0], last(bw[1].Y))
	return fig, nil
}

// Fig. 11: coverage over time for several T (Base A).
func fig11(o Options) (Figure, error) {
	fig := Figure{ID: "fig11", Title: "Coverage over time (Base A)", XLabel: "time (s)", YLabel: "coverage",
		Conditions: o.setup() + "; T_i = 100 ms, " + o.dur(10*time.Second).String(),
		Paper:      "T = 20 ms stays at 100%; longer T jitters more"}
	for _, t := range []time.Duration{20, 50, 80} {
		res, err := o.run(Setup{Algo: fabric.AlgoA, T: t * time.Millisecond, Duration: o.dur(10 * time.Second), Seed: seed(o)})
		if err != nil {
			return fig, err
		}
		s := Series{Name: fmt.Sprintf("T = %d ms", t)}
		_, ws := o.coverage(res)
		for i, c := range ws {
			s.X, s.Y = append(s.X, float64(i+1)/10), append(s.Y, c)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Intake = fmt.Sprintf("min coverage: T=20 %.3f, T=50 %.3f, T=80 %.3f", minOf(fig.Series[0].Y), minOf(fig.Series[1].Y), minOf(fig.Series[2].Y))
	return fig, nil
}

// Fig. 12: Base A/B against Pro as T approaches T_i, at the labeling intervals of the
// authors' data (their Fig.9/data.xlsx).
func fig12(o Options) (Figure, error) {
	ts := []float64{80, 85, 90, 95, 100}
	fig := Figure{ID: "fig12", Title: "Coverage of Base A/B and Pro vs labeling interval", XLabel: "T (ms)", YLabel: "coverage",
		Conditions: o.setup() + "; T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point; Pro = Base A + the §5 flag controller (a port that misses T_i labels every packet for 10 T_i)",
		Paper:      "Pro stays around 99%; Base A/B fall as T grows (authors' data at 100 ms: A 0.879, B 0.906, Pro 0.990)"}
	labels := make([]float64, len(proVariants))
	for i, v := range proVariants {
		s := Series{Name: v.name()}
		for _, t := range ts {
			res, err := o.run(v.setup(Setup{T: time.Duration(t) * time.Millisecond, Duration: o.dur(20 * time.Second), Seed: seed(o)}))
			if err != nil {
				return fig, err
			}
			c, _ := o.coverage(res)
			s.X, s.Y = append(s.X, t), append(s.Y, c)
			labels[i] = float64(res.Labels)
		}
		fig.Series = append(fig.Series, s)
	}
	fig.Series = append(fig.Series,
		paperSeries("Base A", ts, []float64{0.9738, 0.9546, 0.9387, 0.9174, 0.8794}),
		paperSeries("Base B", ts, []float64{0.9792, 0.9666, 0.9595, 0.9377, 0.9064}),
		paperSeries("Pro", ts, []float64{0.9962, 0.9940, 0.9902, 0.9943, 0.9897}))
	fig.Intake = fmt.Sprintf("at T = 100 ms: A %.3f, B %.3f, Pro %.3f with %.1fx Base A's labeling operations", last(fig.Series[0].Y), last(fig.Series[1].Y), last(fig.Series[2].Y), labels[2]/labels[0])
	return fig, nil
}

// fig13Losses are the per-link losses of Fig. 13 (x is the measured end-to-end loss).
var fig13Losses = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6}

// Fig. 13: coverage under packet loss, beside the authors' data (their Fig.10/data.xlsx).
func fig13(o Options) (Figure, error) {
	fig := Figure{ID: "fig13", Title: "Coverage vs packet loss", XLabel: "end-to-end loss", YLabel: "coverage",
		Conditions: o.setup() + "; T = 50 ms, T_i = 100 ms, random loss on every switch-switch link (x: measured end-to-end; the paper: rate-limited BMv2 queues), Pro = the §5 flag controller, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "coverage degrades with loss; Pro keeps about 92% at 60% loss (authors' data at 60.8%: A 0.858, B 0.875, Pro 0.920)"}
	for _, v := range proVariants {
		s := Series{Name: v.name()}
		for _, l := range fig13Losses {
			res, err := o.run(v.setup(Setup{Loss: l, Duration: o.dur(20 * time.Second), Seed: seed(o)}))
			if err != nil {
				return fig, err
			}
			c, _ := o.coverage(res)
			s.X, s.Y = append(s.X, res.E2ELoss), append(s.Y, c)
		}
		fig.Series = append(fig.Series, s)
	}
	loss := []float64{0, 0.08709, 0.1434, 0.2604, 0.3476, 0.4097, 0.4805, 0.5341, 0.6082, 0.6734, 0.7329, 0.7969}
	fig.Series = append(fig.Series,
		paperSeries("Base A", loss, []float64{0.9936, 0.9932, 0.986, 0.9648, 0.9608, 0.9528, 0.9236, 0.8808, 0.8584, 0.7832, 0.6784, 0.5128}),
		paperSeries("Base B", loss, []float64{0.9964, 0.9924, 0.9892, 0.9776, 0.9644, 0.9596, 0.9364, 0.9064, 0.8752, 0.8092, 0.7012, 0.5368}),
		paperSeries("Pro", loss, []float64{0.9992, 0.9944, 0.9936, 0.9968, 0.9864, 0.986, 0.9652, 0.9452, 0.9196, 0.8412, 0.7612, 0.5752}))
	p := fig.Series[2]
	fig.Intake = fmt.Sprintf("at %.0f%% loss: A %.3f, B %.3f, Pro %.3f; Pro at 60%% (interpolated) %.3f",
		100*last(p.X), last(fig.Series[0].Y), last(fig.Series[1].Y), last(p.Y), At(p, 0.6))
	return fig, nil
}

// At is s linearly interpolated at x (s.X ascending); NaN outside.
func At(s Series, x float64) float64 {
	for i := 1; i < len(s.X); i++ {
		if s.X[i-1] <= x && x <= s.X[i] {
			if s.X[i] == s.X[i-1] {
				return s.Y[i]
			}
			return s.Y[i-1] + (s.Y[i]-s.Y[i-1])*(x-s.X[i-1])/(s.X[i]-s.X[i-1])
		}
	}
	return math.NaN()
}

// alg3K is a sensitivity study, not a paper figure: Algorithm 3 (§3.2) in place of the §5
// flag controller, over k, which the paper never gives ("Input: … parameter k"), at Fig.
// 12's hardest point (T = T_i = 100 ms) and at Fig. 13's per-link loss 0.4.
func alg3K(o Options) (Figure, error) {
	ks := []float64{0.25, 0.5, 0.75, 1}
	fig := Figure{ID: "alg3-k", Title: "Sensitivity study (not a paper figure): Algorithm 3's coverage vs k", XLabel: "k", YLabel: "coverage",
		Conditions: o.setup() + "; Base A + Algorithm 3 in the collector (max S 5, 5 ms loop), T_i = 100 ms, " + o.dur(20*time.Second).String() + " per point",
		Paper:      "the paper gives no k; its Figs. 12 and 13 come from the §5 flag controller (Pro)"}
	at100 := Series{Name: "T = 100 ms (Fig. 12's last point)"}
	lossy := Series{Name: "T = 50 ms, per-link loss 0.4 (Fig. 13)"}
	var ratio []float64
	var e2e float64
	base, err := o.run(Setup{Algo: fabric.AlgoA, T: 100 * time.Millisecond, Duration: o.dur(20 * time.Second), Seed: seed(o)})
	if err != nil {
		return fig, err
	}
	for _, k := range ks {
		v := variant{a: fabric.AlgoA, alg3: true, k: k}
		r1, err := o.run(v.setup(Setup{T: 100 * time.Millisecond, Duration: o.dur(20 * time.Second), Seed: seed(o)}))
		if err != nil {
			return fig, err
		}
		r2, err := o.run(v.setup(Setup{Loss: 0.4, Duration: o.dur(20 * time.Second), Seed: seed(o)}))
		if err != nil {
			return fig, err
		}
		c1, _ := o.coverage(r1)
		c2, _ := o.coverage(r2)
		at100.X, at100.Y = append(at100.X, k), append(at100.Y, c1)
		lossy.X, lossy.Y = append(lossy.X, k), append(lossy.Y, c2)
		ratio = append(ratio, float64(r1.Labels)/float64(base.Labels))
		e2e = r2.E2ELoss
	}
	fig.Series = []Series{at100, lossy}
	fig.Intake = fmt.Sprintf("at T = 100 ms, k = 0.25 / 0.5 / 0.75 / 1: %.3f / %.3f / %.3f / %.3f (%.2f / %.2f / %.2f / %.2f x Base A's labels); at per-link loss 0.4 (%.0f%% end-to-end): %.3f / %.3f / %.3f / %.3f",
		at100.Y[0], at100.Y[1], at100.Y[2], at100.Y[3], ratio[0], ratio[1], ratio[2], ratio[3], 100*e2e, lossy.Y[0], lossy.Y[1], lossy.Y[2], lossy.Y[3])
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
		Conditions: o.setup() + "; 10,000 packets, T = 50 ms, Base B F1, T1 = 0",
		Paper:      "A: 1 most, decreasing to 5; B: 1 most, then 5, many 4 and 5 (authors' data: A 1842 737 513 221 75, B 730 392 485 435 614)"}
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
	// The authors' data (their Fig.12/data.xlsx, in units of 10^4 packets).
	ks := []float64{1, 2, 3, 4, 5}
	fig.Series = append(fig.Series, paperSeries("Base A", ks, scaled([]float64{0.1842, 0.07371, 0.05132, 0.0221, 0.007512}, 1e4)),
		paperSeries("Base B", ks, scaled([]float64{0.07297, 0.03924, 0.04847, 0.04347, 0.06144}, 1e4)))
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
		Conditions: o.setup() + "; 10,000 packets, T = 50 ms, F1",
		Paper:      "labeling times fall and labeled packets rise as T1 → T; T1 = T/2 is \"the cross point in Fig. 18\" (of two curves on two y axes)"}
	rs := []float64{0, 0.25, 0.5, 0.75, 1}
	err := countFigure(&fig, o, rs, func(i int) Setup {
		return Setup{Algo: fabric.AlgoB, T1: time.Duration(rs[i] * float64(50*time.Millisecond)), Seed: seed(o)}
	})
	if err != nil {
		return fig, err
	}
	fig.Intake = fmt.Sprintf("labeled %v; labeling times %v; on one axis they never cross (every labeled packet carries a label); "+
		"rescaled each to its own span, any rising and falling pair crosses, here at T1/T = %.2f",
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
		Conditions: o.setup() + "; 10,000 packets, T = 50 ms, T1 = 0, MAX_hop 5",
		Paper:      "F1 best (fewest labeled packets and labels), F2 second, F3 worst"}
	fs := []label.F{label.F1, label.F2, label.F3}
	if o.paper() {
		// The prototype's F3 is its P_time alone: (CT − LT − T1)/(T − T1), INT_num unused.
		fs[2] = label.F3Proto
		fig.Conditions += "; F3 inferred from the prototype's code, time only: (CT − LT)/T for every packet (the paper's F3 is F2·interval/T: --testbed)"
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
