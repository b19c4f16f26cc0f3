//go:build amd64 || arm64

package prefetch

//go:noescape
func addrs_(addrs []uintptr)
