package labelsim

import (
	"testing"

	"github.com/intake-int/intake/internal/label"
)

// Z_A with r = 1: every switch labels, Z_A = H. Z_B with F1 and r = 1 equals Z_A.
func TestAnalysis(t *testing.T) {
	hd := HopDist(4)
	if s := hd[1] + hd[3] + hd[5]; s < 0.999999 || s > 1.000001 {
		t.Fatalf("P(H) sums to %v", s)
	}
	a := DistA(4, 1)
	b := DistB(4, 1, label.F1, GLinear, 5)
	for s := range a.P {
		if d := a.P[s] - hd[s]; d > 1e-12 || d < -1e-12 || b.P[s]-a.P[s] > 1e-12 || a.P[s]-b.P[s] > 1e-12 {
			t.Fatalf("s=%d: A %v B %v H %v", s, a.P[s], b.P[s], hd[s])
		}
	}
	// Base B labels more than Base A (§6.2, Figs. 15-16).
	for _, f := range []label.F{label.F1, label.F2, label.F3} {
		if a, b := DistA(20, 0.01), DistB(20, 0.01, f, GLinear, 6); b.Expectation <= a.Expectation {
			t.Fatalf("%s: E[Z_B] %v <= E[Z_A] %v", f, b.Expectation, a.Expectation)
		}
	}
}
