package labelsim

import (
	"math"
	"testing"
	"time"
)

// Fig. 20's counts on the two smallest fat trees: k = 4 (k/2 even: INT-path needs one
// generator) and k = 6 (the 18 edge switches have odd degree 3).
func TestGenerators(t *testing.T) {
	for _, c := range []struct{ k, label, path, ping, hula int }{{4, 0, 1, 24, 8}, {6, 0, 18, 72, 18}} {
		a, b, p, h := Generators(c.k)
		if a != c.label || b != c.path || p != c.ping || h != c.hula {
			t.Errorf("k = %d: %d %d %d %d, want %d %d %d %d", c.k, a, b, p, h, c.label, c.path, c.ping, c.hula)
		}
	}
}

// Fig. 21's models: INT-label the least at every size, HULA's and Pingmesh's probes grow
// faster than INT-label's items (k²/2 probes over k³/2 links; a host's pings to every ToR).
func TestBandwidth(t *testing.T) {
	for _, k := range []int{4, 8, 24} {
		l, p, h, m := Bandwidth(k)
		if !(l < p && l < h && l < m) {
			t.Errorf("k = %d: INT-label %v, INT-path %v, HULA %v, Pingmesh %v", k, l, p, h, m)
		}
	}
	// HULA at k = 4: 8 ToRs × 32 links × 64 bytes.
	if _, _, h, _ := Bandwidth(4); h != 8*32*64 {
		t.Errorf("HULA at k = 4: %v", h)
	}
}

// Fig. 22's model at 5 hops: INT-label 12 + 5·4 bytes, INT 42 bytes more, PINT the coupon
// collector over 10 fragments (10·H_10 = 29.29 packets) within 5%.
func TestPathTrace(t *testing.T) {
	lp, lb, ip, ib, pp, pb := PathTrace(5, 1000, 1)
	if lp != 1 || ip != 1 || lb != 256 || ib != 592 || math.Abs(pp/29.29-1) > 0.05 || pb != 16*pp {
		t.Errorf("%v %v %v %v %v %v", lp, lb, ip, ib, pp, pb)
	}
}

// §4.2: the formula evaluated at each gap's own T_p gives the share of update gaps within
// T_i (to 0.02), where at the mean T_p it is a step; the window coverage is not that share
// (0.92 at T = T_i where almost no gap is within T_i).
func TestDelayFormula(t *testing.T) {
	o := Options{Seed: 1}
	for _, ms := range []time.Duration{80, 90} {
		m, err := o.delayModel(ms * time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(m.FormulaPerGap-m.Within) > 0.02 || m.Formula != 1 {
			t.Errorf("T = %d ms: %+v", ms, m)
		}
	}
	m, err := o.delayModel(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if m.Within > 0.01 || m.Formula > 0.01 || m.Coverage < 0.9 {
		t.Errorf("T = 100 ms: %+v", m)
	}
}
