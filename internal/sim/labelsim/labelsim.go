// Package labelsim reproduces INT-label's analysis and evaluation:
//
//   - the labeling-times analysis of INT-label §4.3: the distribution and expectation of the
//     number of items a packet carries at its last hop in a k-ary fat tree, Z_A for Base A and
//     Z_B for Base B (analysis.go; `intake sim label-dist`);
//   - the evaluation of §6.2, Figs. 6-9, 11-13 and 15-19, on the emulated testbed of §6.1
//     (package fabric, in virtual time), with the collector's controller (package label) in
//     the loop where the figure needs it (Pro, Algorithm 3 of §3.2), the authors' prototype
//     controller of §5 beside it (flagpro.go), and Figs. 15-16's analysis next to E[Z]
//     simulated on fat trees (zsim.go) (`intake sim label`), on the testbed's fixed routes or
//     on the authors' prototype's traffic (prototype.go; `--paper-setup`).
//
// Each experiment returns a Figure: series of (x, y) points with the conditions they were
// measured under, which cmd/intake prints as tables and JSON and Figure.Chart draws (package
// sim/plot). docs/label-results.md sets every figure against the paper's. Nothing here runs
// in the collector.
package labelsim
