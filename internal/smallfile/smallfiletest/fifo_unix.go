//go:build unix

package smallfiletest

import (
	"path/filepath"
	"syscall"
	"testing"
)

// Fifo makes a FIFO without a writer in a temporary directory and returns its path.
func Fifo(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
