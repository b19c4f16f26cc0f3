package label

import "fmt"

// Base B's probability functions (INT-label §3.1, Algorithm 2; F1-F3 as §6.2 defines them for
// Fig. 19): the chance that a switch labels a packet which already carries INT_num items. The
// emulated fabric's switches evaluate them per packet; package sim/labelsim's §4.3 analysis
// evaluates them per hop.

// F is a Base B probability function f(INT_num).
type F string

const (
	F1 F = "F1" // f(0) = 0, f(i) = 1: the paper's default
	F2 F = "F2" // f(i) = i / (MAX_hop − 1)
	F3 F = "F3" // f(i) = i / (MAX_hop − 1) · interval / T
	// F3Proto is F3 as the authors' prototype code evaluates it (its P_time weight, b = 1,
	// a = 0): (CT − LT − T1)/(T − T1) whatever INT_num, so packets without items too.
	F3Proto F = "F3-prototype"
)

// ParseF checks a probability function name.
func ParseF(s string) (F, error) {
	switch F(s) {
	case F1, F2, F3, F3Proto:
		return F(s), nil
	}
	return "", fmt.Errorf("%q: must be one of F1, F2, F3, F3-prototype", s)
}

// Eval returns f(n) for an item count n; frac is (CT − LT)/T, used by F3 only. Specific-flow
// packets carry INT_num ≥ MAX_hop and get 1.
func (f F) Eval(n, maxHop int, frac float64) float64 {
	if f == F3Proto {
		return min(max(frac, 0), 1)
	}
	if n <= 0 {
		return 0
	}
	if n >= maxHop-1 {
		if f == F3 && n < maxHop {
			return min(frac, 1)
		}
		return 1
	}
	switch f {
	case F1:
		return 1
	case F2:
		return float64(n) / float64(maxHop-1)
	case F3:
		return float64(n) / float64(maxHop-1) * min(frac, 1)
	}
	return 0
}
