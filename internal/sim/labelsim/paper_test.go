package labelsim

import (
	"math"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/fabric"
)

// The paper setup (`intake sim label --paper-setup`, seed 1) and what docs/label-results.md
// says it reproduces.
func TestPaperSetup(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of runs")
	}
	figs, err := Reproduce(Options{Seed: 1, Paper: true}, "fig6", "fig12", "fig13", "fig17", "fig18", "fig19")
	if err != nil {
		t.Fatal(err)
	}
	series := func(id, name string) Series {
		for _, f := range figs {
			for _, s := range f.Series {
				if f.ID == id && s.Name == name {
					return s
				}
			}
		}
		t.Fatalf("%s: no series %q", id, name)
		return Series{}
	}
	// Fig. 6: Base B's coverage is above Base A's wherever A is below 99.9%; from 2 Mb/s
	// both are within two port-windows (1/25 of a 100 ms window, 197 windows) of 100%.
	a, b := series("fig6", "Base A coverage"), series("fig6", "Base B coverage")
	for i := range a.Y {
		if a.Y[i] < 0.999 && b.Y[i] <= a.Y[i] || a.Y[i] >= 0.999 && math.Abs(b.Y[i]-a.Y[i]) > 2.0/25/197 {
			t.Errorf("fig6 at %v Mb/s: A %v, B %v", a.X[i], a.Y[i], b.Y[i])
		}
	}
	// Fig. 12: Algorithm 3 with k = 0.5 around 99% up to T = T_i.
	for i, c := range series("fig12", "Pro (k = 0.5)").Y {
		if c < 0.99 {
			t.Errorf("fig12 Pro (k = 0.5) at point %d: %v", i, c)
		}
	}
	// Fig. 13: Pro (Algorithm 3) at 60% end-to-end loss (interpolated): the paper's 92% ± 2.
	p := series("fig13", "Pro")
	at60 := math.NaN()
	for i := 1; i < len(p.X); i++ {
		if p.X[i-1] <= 0.6 && p.X[i] >= 0.6 {
			at60 = p.Y[i-1] + (p.Y[i]-p.Y[i-1])*(0.6-p.X[i-1])/(p.X[i]-p.X[i-1])
		}
	}
	if !(math.Abs(at60-0.92) <= 0.02) {
		t.Errorf("fig13 Pro at 60%% loss: %v (points %v %v)", at60, p.X, p.Y)
	}
	t.Logf("fig13 Pro at 60%% loss: %.3f", at60)
	// Fig. 17: Base B has the most packets with one item, fewer with 1 and 2 than Base A and
	// more with 4 and 5; 2 is B's rarest count. (The paper has 5 second only to 1; here 3,
	// 4 and 5 are within 5% of each other.)
	fa, fb := series("fig17", "Base A"), series("fig17", "Base B")
	if !(fb.Y[0] > fb.Y[2] && fb.Y[0] > fb.Y[3] && fb.Y[0] > fb.Y[4] && fb.Y[0] < fa.Y[0] && fb.Y[1] < fa.Y[1] &&
		fb.Y[3] > fa.Y[3] && fb.Y[4] > fa.Y[4] && fb.Y[1] < fb.Y[2] && fb.Y[1] < fb.Y[3] && fb.Y[1] < fb.Y[4]) {
		t.Errorf("fig17: A %v, B %v", fa.Y, fb.Y)
	}
	if hi, lo := max(fb.Y[2], fb.Y[3], fb.Y[4]), min(fb.Y[2], fb.Y[3], fb.Y[4]); hi > 1.05*lo {
		t.Errorf("fig17 B: 3, 4, 5 items %v", fb.Y[2:])
	}
	// Fig. 18: on two axes the curves cross at T1 = T/2 (± 0.1 T).
	if c := Crossing(series("fig18", "labeled packets"), series("fig18", "labeling times")); !(math.Abs(c-0.5) <= 0.1) {
		t.Errorf("fig18 crossing at T1/T = %v", c)
	}
	// Fig. 19 with the prototype's F3: F3 worst in labeled packets and in labeling times,
	// F1 the fewest labeled packets.
	lp, lt := series("fig19", "labeled packets"), series("fig19", "labeling times")
	if !(lp.Y[0] < lp.Y[1] && lp.Y[1] < lp.Y[2] && lt.Y[2] > lt.Y[0] && lt.Y[2] > lt.Y[1]) {
		t.Errorf("fig19: labeled %v, labels %v", lp.Y, lt.Y)
	}
}

// Fig. 7's reduction at T = 100 ms depends on the senders' rate, which the paper gives as
// "around 5 Mb/s": over 8 seeds, the paper setup's mean is 40% at 5 Mb/s and the paper's
// 35.2% lies between 2 and 3 Mb/s.
func TestFig7RateSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("48 runs")
	}
	mean := map[float64]float64{}
	for _, rate := range []float64{2e6, 3e6, 5e6} {
		var sum float64
		for seed := uint64(1); seed <= 8; seed++ {
			ra, err := Run(Setup{Algo: fabric.AlgoA, T: 100 * time.Millisecond, Rate: rate, Seed: seed, Prototype: true})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := Run(Setup{Algo: fabric.AlgoB, T: 100 * time.Millisecond, Rate: rate, Seed: seed, Prototype: true})
			if err != nil {
				t.Fatal(err)
			}
			sum += 1 - float64(rb.Labeled)/float64(ra.Labeled)
		}
		mean[rate] = sum / 8
		t.Logf("%g Mb/s: Base B %.1f%% fewer labeled packets (mean of 8 seeds)", rate/1e6, 100*mean[rate])
	}
	if !(mean[2e6] < 0.352 && mean[3e6] > 0.352 && mean[5e6] > 0.385 && mean[5e6] < 0.415) {
		t.Errorf("reduction by rate %v", mean)
	}
}

// Fig. 6 at 3 and 5 Mb/s (default testbed): both coverages are within one port-window per
// run of 100%, and over 8 seeds Base B is not below Base A on average.
func TestFig6Saturation(t *testing.T) {
	if testing.Short() {
		t.Skip("32 runs")
	}
	for _, rate := range []float64{3e6, 5e6} {
		var diff float64
		for seed := uint64(1); seed <= 8; seed++ {
			ra, err := Run(Setup{Algo: fabric.AlgoA, Rate: rate, Duration: 20 * time.Second, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := Run(Setup{Algo: fabric.AlgoB, Rate: rate, Duration: 20 * time.Second, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			// One port missed in one window of ~197: 1/(18·197) ≈ 0.00028.
			if ra.Coverage < 0.997 || rb.Coverage < 0.997 {
				t.Errorf("%g Mb/s seed %d: A %v, B %v", rate/1e6, seed, ra.Coverage, rb.Coverage)
			}
			diff += rb.Coverage - ra.Coverage
		}
		t.Logf("%g Mb/s: mean B − A over 8 seeds %+.5f", rate/1e6, diff/8)
		if diff < -1e-9 {
			t.Errorf("%g Mb/s: mean B − A %v", rate/1e6, diff/8)
		}
	}
}
