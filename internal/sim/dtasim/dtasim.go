// Package dtasim reproduces the analysis and the simulations of DART and DTA's Key-Write
// store:
//
//   - the bounds on empty and wrong query answers of DTA appendix A.5 (Key-Write, eqs. 1-4)
//     and A.6 (Postcarding, eqs. 5-8), DART §4's analysis (bounds.go; `intake sim
//     dta-bounds`);
//   - the Monte Carlo of DART §5.1-5.2 and DTA §6.5.2-6.5.3: keys inserted into a real
//     Key-Write store (package dta's, in anonymous memory) and queried, success tallied by key
//     age next to the analysis (montecarlo.go; `intake sim dta`);
//   - the papers' figures built on it: DART Fig. 3 / DTA Fig. 12, average query success
//     against load factor for N = 1-4, and DART Fig. 4 / DTA Fig. 13, the aging of 5-hop path
//     traces in 3 GiB and 30 GiB (figures.go; `intake sim dta --figure load|aging`), and DART
//     Fig. 5, wrong answers against storage size for 8-, 16- and 32-bit checksums (wrong.go;
//     `--figure wrong`);
//   - DTA Fig. 14, postcard aggregation against intermediate flows and cache size, through
//     package dta's translator cache (postcard.go; `--figure postcard`), and DTA §4's
//     Key-Write-for-postcards comparison (pathwrong.go; `sim dta-bounds`'s kw_path_wrong).
//
// docs/dta-results.md sets every figure against the paper's. Nothing here runs in the
// collector: package dta owns the stores, this package only uses their exported API.
package dtasim
