//go:build !linux

package budget

// OnTmpfs reports whether path is on tmpfs: only known on Linux.
func OnTmpfs(string) bool { return false }
