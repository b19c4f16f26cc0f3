//go:build !linux

package dta

// threadCPU: no thread CPU clock is read off Linux, so the benchmarks' cpu-ns/op reads 0
// there; compare their ns/op (the wall clock) instead.
func threadCPU() int64 { return 0 }
