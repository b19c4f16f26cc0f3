package dtasim

import (
	"math"
	"testing"
)

// DART Fig. 5 at a small scale: every key queried at each size; the 8- and 16-bit wrong
// answers counted within sampling error (Poisson, 4σ) of eq. 4 summed over the ages queried,
// none with 32 bits; the full-scale storage axis is 10⁸ keys of 24-byte slots.
func TestWrongFigure(t *testing.T) {
	pts, chart, err := WrongFigure(1<<15, 2, StoreCompact, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(WrongBits)*len(WrongSlotsPerKey) || len(chart.Series) != 2*len(WrongBits) {
		t.Fatalf("%d points, %d series", len(pts), len(chart.Series))
	}
	seen8 := 0
	for _, p := range pts {
		if p.Queries != 1<<15 || p.Slots != int(p.SlotsPerKey*(1<<15)) || math.Abs(p.FullScaleGiB-p.SlotsPerKey*100e6*24/(1<<30)) > 1e-9 {
			t.Errorf("%+v", p)
		}
		if math.Abs(float64(p.Wrong)-p.Expected) > 4*math.Sqrt(p.Expected)+1 {
			t.Errorf("%d bits, %g slots a key: %d wrong, analysis %.2f", p.Bits, p.SlotsPerKey, p.Wrong, p.Expected)
		}
		if p.Bits == 32 && p.Wrong != 0 {
			t.Errorf("32 bits: %d wrong", p.Wrong)
		}
		if p.Bits == 8 {
			seen8 += p.Wrong
		}
	}
	if seen8 < 100 {
		t.Errorf("8 bits: only %d wrong answers in all", seen8)
	}
	if got := kwWrongSum(2, 3, 4, 8); math.Abs(got-(KWWrong(2, 0, 8)+KWWrong(2, 0.25, 8)+KWWrong(2, 0.5, 8))) > 1e-15 {
		t.Errorf("kwWrongSum = %g", got)
	}
}
