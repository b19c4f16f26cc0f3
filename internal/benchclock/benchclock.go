// Package benchclock gives benchmarks the CPU time of the thread that runs them, beside
// testing's wall clock. On a machine shared with other work (two cores, fuzzers running
// beside), the wall clock also counts the time other processes hold the core; the thread's
// CPU clock counts only the time the benchmark's own loop ran (its stalls on memory
// included), so before/after ratios survive the noise much better.
package benchclock

import (
	"runtime"
	"testing"
)

// Clock is a running thread CPU clock.
type Clock struct {
	b     *testing.B
	start int64
}

// Start locks the goroutine to its thread and starts the thread's CPU clock. Call it right
// before the timed loop, and Stop right after:
//
//	c := benchclock.Start(b)
//	for b.Loop() { ... }
//	c.Stop("report", reports)
func Start(b *testing.B) *Clock {
	runtime.LockOSThread()
	return &Clock{b: b, start: threadCPU()}
}

// Stop reports the CPU time per op as "cpu-ns/op" and, when unit is not empty, per item as
// "cpu-ns/<unit>" (n items over the whole run: reports, hops); it unlocks the thread. Off
// Linux the CPU clock reads 0 and nothing is reported.
func (c *Clock) Stop(unit string, n int) {
	end := threadCPU()
	runtime.UnlockOSThread()
	if end == 0 || c.b.N == 0 {
		return
	}
	d := float64(end - c.start)
	c.b.ReportMetric(d/float64(c.b.N), "cpu-ns/op")
	if unit != "" && n > 0 {
		c.b.ReportMetric(d/float64(n), "cpu-ns/"+unit)
	}
}
