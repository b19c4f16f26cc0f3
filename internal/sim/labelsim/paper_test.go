package labelsim

import (
	"math"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/fabric"
)

// The paper's configuration (the default of `intake sim label`, seed 1) and the values
// docs/label-results.md calls reproduced, each against the paper's or its authors' data.
func TestPaperSetup(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of runs")
	}
	figs, err := Reproduce(Options{Seed: 1}, "fig7", "fig8", "fig12", "fig13", "fig17", "fig19")
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
	// Figs. 7-8 at T = 100 ms: the authors' 2344 / 1520 labeled packets and 3597 / 4412
	// labels (issue 32: 2345 / 1508 and 3615 / 4362).
	if a, b := last(series("fig7", "Base A labeled packets").Y), last(series("fig7", "Base B labeled packets").Y); a != 2345 || b != 1508 {
		t.Errorf("fig7 at 100 ms: A %v, B %v", a, b)
	}
	if a, b := last(series("fig8", "Base A labeling times").Y), last(series("fig8", "Base B labeling times").Y); a != 3615 || b != 4362 {
		t.Errorf("fig8 at 100 ms: A %v, B %v", a, b)
	}
	// Fig. 12: Pro around 99% (the authors' 0.990-0.996) at every T from 80 to 100 ms.
	for i, c := range series("fig12", "Pro").Y {
		if c < 0.985 {
			t.Errorf("fig12 Pro at point %d: %v", i, c)
		}
	}
	// Fig. 13: Pro at 60% end-to-end loss (interpolated): the paper's 92% ± 2.
	p := series("fig13", "Pro")
	if at60 := At(p, 0.6); !(math.Abs(at60-0.92) <= 0.02) {
		t.Errorf("fig13 Pro at 60%% loss: %v (points %v %v)", at60, p.X, p.Y)
	}
	// Fig. 17: in Base B, 5 items second only to 1.
	fb := series("fig17", "Base B")
	if !(fb.Y[0] > fb.Y[4] && fb.Y[4] > max(fb.Y[1], fb.Y[2], fb.Y[3])) {
		t.Errorf("fig17 B: %v", fb.Y)
	}
	// Fig. 19 with the time-only F3: F3 worst in labeled packets and in labeling times,
	// F1 the fewest labeled packets.
	lp, lt := series("fig19", "labeled packets"), series("fig19", "labeling times")
	if !(lp.Y[0] < lp.Y[1] && lp.Y[1] < lp.Y[2] && lt.Y[2] > lt.Y[0] && lt.Y[2] > lt.Y[1]) {
		t.Errorf("fig19: labeled %v, labels %v", lp.Y, lt.Y)
	}
}

// Coverage over the prototype's fixed 25-port list counts idle ports as missed: at the
// lowest rate of Fig. 6 it is far below the active-port coverage (issue 32: 0.33 against
// 0.88 where the paper has 0.21); with traffic on all 25 ports both agree.
func TestCoverageDefinitions(t *testing.T) {
	low, err := Run(Setup{Algo: fabric.AlgoA, Rate: 0.125e6, Duration: 20 * time.Second, Seed: 1, Prototype: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("0.25 Mb/s total: active %.3f, fixed %.3f", low.Coverage, low.CoverageFixed)
	if !(low.CoverageFixed < 0.5 && low.Coverage > 0.8) {
		t.Errorf("0.25 Mb/s total: active %v, fixed %v", low.Coverage, low.CoverageFixed)
	}
	hi, err := Run(Setup{Algo: fabric.AlgoA, Rate: 2.5e6, T: 20 * time.Millisecond, Duration: 5 * time.Second, Seed: 1, Prototype: true})
	if err != nil {
		t.Fatal(err)
	}
	if hi.Coverage != 1 || hi.CoverageFixed != 1 {
		t.Errorf("5 Mb/s total, T = 20 ms: active %v, fixed %v", hi.Coverage, hi.CoverageFixed)
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

// Why Fig. 18's two-axis crossing is no evidence (issue 32): any rising series and any
// falling one over the same x, each rescaled to its own span, cross, whatever their values;
// the suite checks the trends instead (TestSuite).
func TestCrossingIsAnyPair(t *testing.T) {
	x := []float64{0, 0.25, 0.5, 0.75, 1}
	for _, c := range []struct{ up, down []float64 }{
		{[]float64{1, 2, 3, 4, 5}, []float64{50, 40, 30, 20, 10}},
		{[]float64{1, 1.1, 1.2, 1.3, 100}, []float64{9, 8.9, 8.8, 8.7, 8.6}},
		{[]float64{2826, 2883, 3028, 3340, 3800}, []float64{8147, 7577, 7154, 6870, 6676}},
	} {
		if v := Crossing(Series{X: x, Y: c.up}, Series{X: x, Y: c.down}); !(v > 0 && v < 1) {
			t.Errorf("%v and %v: crossing %v", c.up, c.down, v)
		}
	}
}
