package labelsim

import (
	"fmt"

	"github.com/intake-int/intake/internal/label"
)

// The labeling times analysis of INT-label §4.3: the distribution of the number of items a
// packet carries at its last hop (Z_A for Base A, Z_B for Base B) in a k-ary fat tree when
// host1 sends one packet to every other host, with r = T_s/T the per-switch interval-based
// labeling probability.

// MaxPathHops is the longest fat-tree path in switches (edge, aggregation, core,
// aggregation, edge).
const MaxPathHops = 5

// HopDist returns P(H = h) for h = 0..5 in a k-ary fat tree (§4.3: H is 1, 3 or 5).
func HopDist(k int) [MaxPathHops + 1]float64 {
	var d [MaxPathHops + 1]float64
	h := float64(k) / 2
	n := float64(k)*float64(k)*float64(k)/4 - 1
	d[1] = (h - 1) / n
	d[3] = (h - 1) * h / n
	d[5] = (float64(k) - 1) * h * h / n
	return d
}

// G names the choice of g, the interval-based labeling probability once f is known (§4.3
// leaves it open between g(0) = T_s/T and g(1) = 0).
type G string

const (
	// GLinear, the default: g(x) = (T_s/T)·(1 − x). Probabilistic labels refresh LT, so the
	// interval-based chance shrinks in proportion to the probabilistic one, and f + g ≤ 1.
	GLinear G = "linear"
	// GFlat: g(x) = T_s/T for x < 1 and g(1) = 0 (the interval-based chance is unaffected
	// until f is certain): an upper bound on labeling.
	GFlat G = "flat"
)

// ParseG checks a g name.
func ParseG(s string) (G, error) {
	switch G(s) {
	case GLinear, GFlat:
		return G(s), nil
	}
	return "", fmt.Errorf("%q: must be one of linear, flat", s)
}

func (g G) eval(x, r float64) float64 {
	if g == GFlat {
		if x >= 1 {
			return 0
		}
		return min(r, 1-x)
	}
	return r * (1 - x)
}

// Dist is a labeling-times distribution.
type Dist struct {
	P           [MaxPathHops + 1]float64 `json:"dist"`
	Expectation float64                  `json:"expectation"`
}

// DistA returns Z_A: P(Z_A = s) = Σ_l P(H = l)·P(Y_l = s), Y_l ~ B(l, r).
func DistA(k int, r float64) Dist {
	hd := HopDist(k)
	var d Dist
	for l := 1; l <= MaxPathHops; l += 2 {
		for s := 0; s <= l; s++ {
			d.P[s] += hd[l] * binom(l, s) * pow(r, s) * pow(1-r, l-s)
		}
	}
	d.finish()
	return d
}

// DistB returns Z_B with the recursion of §4.3:
// P(W_{n+1} = i) = P(W_n = i)(1 − g(f(i)) − f(i)) + P(W_n = i−1)(f(i−1) + g(f(i−1))),
// W_1 = (1 − r, r). For F3, f is evaluated at interval/T = 1/2, its mean over an interval.
func DistB(k int, r float64, f label.F, g G, maxHop int) Dist {
	hd := HopDist(k)
	var w, next [MaxPathHops + 1]float64
	w[0], w[1] = 1-r, r
	var d Dist
	for n := 1; n <= MaxPathHops; n++ {
		if n%2 == 1 {
			for s := 0; s <= n; s++ {
				d.P[s] += hd[n] * w[s]
			}
		}
		if n == MaxPathHops {
			break
		}
		next = [MaxPathHops + 1]float64{}
		for i := 0; i <= n; i++ {
			x := f.Eval(i, maxHop, 0.5)
			p := min(x+g.eval(x, r), 1)
			next[i] += w[i] * (1 - p)
			next[i+1] += w[i] * p
		}
		w = next
	}
	d.finish()
	return d
}

func (d *Dist) finish() {
	d.Expectation = 0
	for s, p := range d.P {
		d.Expectation += float64(s) * p
	}
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

func pow(x float64, n int) float64 {
	r := 1.0
	for range n {
		r *= x
	}
	return r
}
