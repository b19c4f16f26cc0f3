//go:build unix

package config

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFO: a FIFO as the configuration file is refused at once, naming it. Before, the
// open waited for a writer forever (serve --check never returned).
func TestFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intake.yaml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(p); done <- err }()
	select {
	case err := <-done:
		if want := "open " + p + ": a FIFO, not a regular file"; err == nil || err.Error() != want {
			t.Errorf("%v, want %s", err, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Load still blocked after 2s")
	}
}
