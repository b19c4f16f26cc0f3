//go:build !linux

package benchclock

// threadCPU: no thread CPU clock is read off Linux; Start then reports nothing.
func threadCPU() int64 { return 0 }
