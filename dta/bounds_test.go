package dta

import (
	"math"
	"testing"
)

// The paper's worked examples (DTA §4): N=2, b=32, α=0.1: empty < 3.3%, wrong ≤ 1.6e-11;
// N=1: 9.5%; N=4: 1.2%. Postcarding with |V|=2^18, B=5: empty ≤ 3.3%, wrong < 1e-22.
func TestBoundsPaperExamples(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{1, 0.095}, {2, 0.033}, {4, 0.012}} {
		if e := KWEmpty(c.n, 0.1, 32); math.Abs(e-c.want) > 0.0006 {
			t.Errorf("KWEmpty(N=%d) = %.4f, want %.3f", c.n, e, c.want)
		}
	}
	if w := KWWrong(2, 0.1, 32); w > 1.6e-11 || w < 1.5e-11 {
		t.Errorf("KWWrong = %g", w)
	}
	if e := PCEmpty(2, 0.1, 32, 1<<18, 5); e > 0.033 {
		t.Errorf("PCEmpty = %g", e)
	}
	if w := PCWrong(2, 0.1, 32, 1<<18, 5); w >= 1e-22 {
		t.Errorf("PCWrong = %g", w)
	}
}
