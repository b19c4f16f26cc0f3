// Package prefetch asks the CPU to bring memory into its cache ahead of use. A batch path
// (ingest.BatchProcessor) computes where each of its reports' state lives, prefetches all
// of it, and only then works through the reports: their cache misses overlap instead of
// each stalling the report that needs it.
//
// A prefetch is a hint: it never faults (any address will do, a stale one costs nothing),
// loads no value into the program, so it is no memory access in the Go memory model and the
// race detector does not see it, and the CPU may drop it. One call takes a whole list, so
// that the call's cost is paid once per batch, not per line.
package prefetch

// Addrs prefetches the cache line holding each address in addrs into every cache level.
// It is written in assembly on amd64 and arm64 and does nothing elsewhere.
func Addrs(addrs []uintptr) { addrs_(addrs) }
