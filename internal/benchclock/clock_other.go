//go:build !linux

package benchclock

// threadCPU: no thread CPU clock is read off Linux; Start then reports nothing.
func threadCPU() int64 { return 0 }

// Process: the process's CPU time is read on Linux only; elsewhere it is 0.
func Process() int64 { return 0 }
