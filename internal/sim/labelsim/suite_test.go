package labelsim

import (
	"math"
	"testing"
	"time"
)

// The whole suite on seed 1, and the claims docs/label-results.md makes about it.
func TestSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("the reproduction suite takes a few seconds")
	}
	start := time.Now()
	figs, err := Reproduce(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Figure{}
	for _, f := range figs {
		t.Logf("%s: %s | paper: %s", f.ID, f.Intake, f.Paper)
		byID[f.ID] = f
	}
	t.Logf("suite in %v", time.Since(start))
	if len(figs) != len(IDs()) {
		t.Fatalf("%d figures of %d", len(figs), len(IDs()))
	}
	series := func(id, name string) Series {
		for _, s := range byID[id].Series {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("%s: no series %q", id, name)
		return Series{}
	}
	// Figs. 7-8: Base B labels fewer packets than Base A at every T, with more labels.
	la, lb := series("fig7", "Base A labeled packets"), series("fig7", "Base B labeled packets")
	ta, tb := series("fig8", "Base A labeling times"), series("fig8", "Base B labeling times")
	for i := range la.X {
		if lb.Y[i] >= la.Y[i] || tb.Y[i] <= ta.Y[i] {
			t.Errorf("fig7-8 T=%v: labeled A %v B %v, labels A %v B %v", la.X[i], la.Y[i], lb.Y[i], ta.Y[i], tb.Y[i])
		}
	}
	// Fig. 9: at T_i/T = 2 both reach the paper's 99.72%.
	for _, n := range []string{"Base A", "Base B"} {
		if s := series("fig9", n); last(s.X) != 2 || last(s.Y) < 0.9972 {
			t.Errorf("fig9 %s at ratio %v: %v", n, last(s.X), last(s.Y))
		}
	}
	// Fig. 10: coverage falls and INT bandwidth falls as T grows; B above A in bandwidth.
	ca, ba, bb := series("fig10", "Base A coverage"), series("fig10", "Base A INT bandwidth (Mb/s)"), series("fig10", "Base B INT bandwidth (Mb/s)")
	if !(ca.Y[0] > last(ca.Y) && ba.Y[0] > 5*last(ba.Y) && bb.Y[0] > ba.Y[0] && last(bb.Y) > last(ba.Y)) {
		t.Errorf("fig10: coverage A %v, bandwidth A %v, B %v", ca.Y, ba.Y, bb.Y)
	}
	// Fig. 12: Pro (the §5 flag controller) at or above 98.5% at every T up to T_i, and
	// above Base A.
	a, pf := series("fig12", "Base A"), series("fig12", "Pro")
	for i := range pf.Y {
		if pf.Y[i] < 0.985 || pf.Y[i] <= a.Y[i] {
			t.Errorf("fig12 at T = %v ms: A %v, Pro %v", a.X[i], a.Y[i], pf.Y[i])
		}
	}
	// Fig. 13: Pro above Base A under every loss > 0.
	a, pf = series("fig13", "Base A"), series("fig13", "Pro")
	for i := 1; i < len(a.Y); i++ {
		if pf.Y[i] <= a.Y[i] {
			t.Errorf("fig13 loss %v: A %v, Pro %v", a.X[i], a.Y[i], pf.Y[i])
		}
	}
	// The Algorithm 3 study: smaller k, more coverage and more labels at T = T_i.
	k := series("alg3-k", "T = 100 ms (Fig. 12's last point)")
	if !(k.Y[0] > 0.995 && k.Y[0] > k.Y[1] && k.Y[1] > last(k.Y)) {
		t.Errorf("alg3-k: %v", k.Y)
	}
	// Figs. 15-16: E[Z_A] simulated equals the analysis at the measured labeling
	// probability within 2% (E[Z_A] = E[H]·r by linearity); E[Z_B] simulated is below the
	// analysis (g linear) and above E[Z_A].
	for _, id := range []string{"fig15", "fig16"} {
		sa, aa := series(id, "Base A: simulated"), series(id, "Base A: analysis at measured r")
		sb, ab := series(id, "Base B: simulated"), series(id, "Base B: analysis at measured r")
		for i := range sa.X {
			if math.Abs(sa.Y[i]/aa.Y[i]-1) > 0.02 || sb.Y[i] >= ab.Y[i] || sb.Y[i] <= sa.Y[i] {
				t.Errorf("%s x=%v: A sim %v analysis %v; B sim %v analysis %v", id, sa.X[i], sa.Y[i], aa.Y[i], sb.Y[i], ab.Y[i])
			}
		}
	}
	// Fig. 17: Base B has fewer packets with 1 and 2 items than Base A and more with 4 and
	// 5; 1 is B's most frequent count and 5 second only to 1, as the paper says.
	fa, fb := series("fig17", "Base A"), series("fig17", "Base B")
	if !(fb.Y[0] < fa.Y[0] && fb.Y[1] < fa.Y[1] && fb.Y[3] > fa.Y[3] && fb.Y[4] > fa.Y[4] &&
		fb.Y[0] > fb.Y[4] && fb.Y[4] > fb.Y[1] && fb.Y[4] > fb.Y[2] && fb.Y[4] > fb.Y[3]) {
		t.Errorf("fig17 Base A %v, Base B %v", fa.Y, fb.Y)
	}
	// Fig. 18: labeled packets rise and labeling times fall as T1 → T.
	lp, lt := series("fig18", "labeled packets"), series("fig18", "labeling times")
	for i := 1; i < len(lp.Y); i++ {
		if lp.Y[i] < lp.Y[i-1] || lt.Y[i] > lt.Y[i-1] {
			t.Errorf("fig18 T1/T %v: labeled %v, labels %v", lp.X[i], lp.Y, lt.Y)
		}
	}
}
