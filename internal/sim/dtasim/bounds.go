package dtasim

import "math"

// The analysis of DTA appendix A.5-A.6 (DART §4): bounds on empty and wrong returns for a
// key queried after αM (Key-Write) or αC (Postcarding) later writes, with redundancy N and
// b-bit checksums; Postcarding also with |V| values and B hops.

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// KWEmpty is eqs. (1)+(2)+(3): the probability that a query returns nothing.
func KWEmpty(n int, alpha float64, b int) float64 {
	q := 1 - math.Pow(2, -float64(b)) // a foreign slot does not match
	over := 1 - math.Exp(-alpha*float64(n))
	N := float64(n)
	e1 := math.Pow(over, N) * math.Pow(q, N)
	e2 := math.Pow(over, N) * (1 - math.Pow(q, N) - N*(1-q)*math.Pow(q, N-1))
	e3 := 0.0
	for j := 1; j <= n-1; j++ {
		e3 += binom(n, j) * math.Pow(over, float64(j)) * math.Exp(-alpha*N*float64(n-j)) * (1 - math.Pow(q, float64(j)))
	}
	return e1 + e2 + e3
}

// KWWrong is eq. (4): the probability of a wrong value.
func KWWrong(n int, alpha float64, b int) float64 {
	return math.Pow(1-math.Exp(-alpha*float64(n)), float64(n)) * float64(n) * math.Pow(2, -float64(b))
}

// pcValid is ((|V|+1)·2^-b)^B, the chance that a foreign chunk decodes (capped at 1).
func pcValid(values, hops, b int) float64 {
	return math.Pow(math.Min(1, float64(values+1)*math.Pow(2, -float64(b))), float64(hops))
}

// PCEmpty is eqs. (5)+(6)+(7).
func PCEmpty(n int, alpha float64, b, values, hops int) float64 {
	p := pcValid(values, hops, b)
	over := 1 - math.Exp(-alpha*float64(n))
	N := float64(n)
	e5 := math.Pow(over, N) * math.Pow(1-p, N)
	e6 := math.Pow(over, N) * (1 - math.Pow(1-p, N) - N*p*math.Pow(1-p, N-1))
	e7 := 0.0
	for j := 1; j <= n-1; j++ {
		e7 += binom(n, j) * math.Pow(over, float64(j)) * math.Exp(-alpha*N*float64(n-j)) * (1 - math.Pow(1-p, float64(j)))
	}
	return e5 + e6 + e7
}

// PCWrong is eq. (8).
func PCWrong(n int, alpha float64, b, values, hops int) float64 {
	return math.Pow(1-math.Exp(-alpha*float64(n)), float64(n)) * float64(n) * pcValid(values, hops, b)
}

// KWSuccess is the success probability the simulation is compared with: every copy
// overwritten is the dominant failure, 1 - (1 - e^{-αN})^N, less the checksum terms.
func KWSuccess(n int, alpha float64, b int) float64 {
	return 1 - KWEmpty(n, alpha, b) - KWWrong(n, alpha, b)
}

// SlotsFor returns the store size M (slots) at which a key with later writes after it is
// found with probability success (KWSuccess at α = later/M): the size a published
// success rate implies under the analysis. Success rises with M, so bisection (on log M)
// finds it; 0 when success is out of the range M ∈ [later/100, 10⁶·later] gives.
func SlotsFor(n int, later float64, b int, success float64) float64 {
	lo, hi := math.Log(later/100), math.Log(later*1e6)
	at := func(lm float64) float64 { return KWSuccess(n, later/math.Exp(lm), b) }
	if success < at(lo) || success > at(hi) {
		return 0
	}
	for range 200 {
		mid := (lo + hi) / 2
		if at(mid) < success {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}
