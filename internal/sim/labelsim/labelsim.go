// Package labelsim reproduces INT-label's analysis and evaluation:
//
//   - the labeling-times analysis of INT-label §4.3: the distribution and expectation of the
//     number of items a packet carries at its last hop in a k-ary fat tree, Z_A for Base A and
//     Z_B for Base B (analysis.go; `intake sim label-dist`);
//   - the evaluation of §6.2, Figs. 6-13 and 15-19, on the emulated testbed of §6.1
//     (package fabric, in virtual time) in one configuration, the paper's (5 Mb/s in total
//     over the authors' prototype's routes, prototype.go; Pro the §5 flag controller,
//     flagpro.go), with Algorithm 3 of §3.2 (package label's controller in the loop) as a
//     sensitivity study over k, and Figs. 15-16's analysis next to E[Z] simulated on fat
//     trees (zsim.go) (`intake sim label`; `--testbed` for the emulator's own setup);
//   - Figs. 20-22's comparisons with INT-path, HULA, Pingmesh and PINT as stated models, and
//     §4.2's delay formula against the emulator's update gaps (scale.go).
//
// Each experiment returns a Figure: series of (x, y) points with the conditions they were
// measured under, which cmd/intake prints as tables and JSON and Figure.Chart draws (package
// sim/plot). docs/label-results.md sets every figure against the paper's. Nothing here runs
// in the collector.
package labelsim
