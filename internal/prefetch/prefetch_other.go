//go:build !amd64 && !arm64

package prefetch

func addrs_([]uintptr) {}
