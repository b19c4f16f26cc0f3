// Package smallfiletest makes the files smallfile refuses (a FIFO without a writer, a file
// over a cap) and bounds a call that used to block on them, for the tests of the packages
// that read such files.
package smallfiletest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Big writes a file of n bytes in a temporary directory and returns its path.
func Big(t testing.TB, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, []byte(strings.Repeat("#", n)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Within returns f's result, or fails the test at once when f has not returned within d
// (what was read from a FIFO blocked forever; the goroutine is left behind).
func Within[T any](t testing.TB, d time.Duration, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %s", what, d)
		var zero T
		return zero
	}
}
