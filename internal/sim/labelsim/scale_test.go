package labelsim

import (
	"math"
	"testing"
	"time"
)

// Fig. 20's counts: on k = 4 and 6, and the authors' data at k = 10, 20, 30 exactly.
func TestGenerators(t *testing.T) {
	for _, c := range []struct{ k, label, path, ping, hula int }{{4, 0, 16, 24, 8}, {6, 0, 54, 72, 18}} {
		a, b, p, h := Generators(c.k)
		if a != c.label || b != c.path || p != c.ping || h != c.hula {
			t.Errorf("k = %d: %d %d %d %d, want %d %d %d %d", c.k, a, b, p, h, c.label, c.path, c.ping, c.hula)
		}
	}
	for i, k := range paperKs {
		a, b, p, h := Generators(int(k))
		if a != 0 || float64(b) != paperGenPath[i] || float64(p) != paperGenPing[i] || float64(h) != paperGenHULA[i] {
			t.Errorf("k = %v: %d %d %d %d", k, a, b, p, h)
		}
	}
}

// Fig. 21's models: INT-label the least at every size; at k = 30 the authors' order
// (INT-label < INT-path < Pingmesh < HULA); HULA's probes multicast without suppression.
func TestBandwidth(t *testing.T) {
	for _, k := range fatTreeKs {
		l, p, h, m := Bandwidth(int(k))
		if !(l < p && l < h && l < m) {
			t.Errorf("k = %v: INT-label %v, INT-path %v, HULA %v, Pingmesh %v", k, l, p, h, m)
		}
	}
	if l, p, h, m := Bandwidth(30); !(l < p && p < m && m < h) {
		t.Errorf("k = 30: INT-label %v, INT-path %v, HULA %v, Pingmesh %v", l, p, h, m)
	}
	// HULA at k = 4: 8 ToRs × (2 up + 2 across the pod + 4 to cores + 12 to other pods + 24
	// down) links × 64 bytes.
	if _, _, h, _ := Bandwidth(4); h != 8*44*64 {
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
