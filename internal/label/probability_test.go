package label

import "testing"

func TestProbabilityFunctions(t *testing.T) {
	for _, c := range []struct {
		f       F
		n, max  int
		frac, p float64
	}{
		{F1, 0, 5, 0.5, 0}, {F1, 1, 5, 0.5, 1},
		{F2, 1, 5, 0.5, 0.25}, {F2, 3, 5, 0.5, 0.75}, {F2, 4, 5, 0.5, 1},
		{F3, 2, 5, 0.5, 0.25}, {F3, 2, 5, 2, 0.5},
		// The prototype's F3: the time term alone, also for a packet without items.
		{F3Proto, 0, 5, 0.3, 0.3}, {F3Proto, 4, 5, 0.3, 0.3}, {F3Proto, 1, 5, 1.5, 1}, {F3Proto, 1, 5, -0.1, 0},
	} {
		if got := c.f.Eval(c.n, c.max, c.frac); got != c.p {
			t.Errorf("%s(%d) MAX_hop %d at %v: %v, want %v", c.f, c.n, c.max, c.frac, got, c.p)
		}
	}
	if f, err := ParseF("F3-prototype"); err != nil || f != F3Proto {
		t.Errorf("ParseF(F3-prototype): %v %v", f, err)
	}
	if _, err := ParseF("F4"); err == nil || err.Error() != `"F4": must be one of F1, F2, F3, F3-prototype` {
		t.Errorf("ParseF(F4): %v", err)
	}
}
