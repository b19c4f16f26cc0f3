package dtasim

import (
	"math"
	"testing"
)

// DTA §4: Key-Write for 5-hop postcards (N=2, b=32, α=0.1) is wrong in at least one hop with
// probability ≈ 8·10⁻¹¹, where Postcarding's eq. 8 is below 10⁻²².
func TestKWPathWrong(t *testing.T) {
	got := KWPathWrong(2, 0.1, 32, 5)
	if w := 1 - math.Pow(1-KWWrong(2, 0.1, 32), 5); math.Abs(got-w) > 1e-4*w || math.Abs(got-5*KWWrong(2, 0.1, 32)) > 1e-9*got {
		t.Errorf("KWPathWrong = %g, want 1-(1-%g)^5", got, KWWrong(2, 0.1, 32))
	}
	if math.Round(got*1e11) != 8 || PCWrong(2, 0.1, 32, 1<<18, 5) >= 1e-22 {
		t.Errorf("KWPathWrong = %g (paper ≈ 8e-11), PCWrong = %g (paper < 1e-22)", got, PCWrong(2, 0.1, 32, 1<<18, 5))
	}
}
