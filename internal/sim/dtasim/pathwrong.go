package dtasim

import "math"

// KWPathWrong is DTA §4's comparison for Postcarding: Key-Write used for postcards, one
// report per hop, gives a wrong answer for a B-hop path when any of its B queries is wrong,
// 1 - (1 - eq. 4)^B (the hops' answers taken as independent). At N = 2, b = 32, α = 0.1 and
// B = 5 it is 7.65·10⁻¹¹, the paper's "≈ 8·10⁻¹¹ (in at least one hop)".
func KWPathWrong(n int, alpha float64, b, hops int) float64 {
	return -math.Expm1(float64(hops) * math.Log1p(-KWWrong(n, alpha, b)))
}
