//go:build unix

package config

import (
	"testing"
	"time"

	"github.com/intake-int/intake/internal/smallfile/smallfiletest"
)

// TestFIFO: a FIFO as the configuration file is refused at once, naming it. Before, the
// open waited for a writer forever (serve --check never returned).
func TestFIFO(t *testing.T) {
	p := smallfiletest.Fifo(t)
	err := smallfiletest.Within(t, 2*time.Second, "Load", func() error { _, err := Load(p); return err })
	if want := "open " + p + ": a FIFO, not a regular file"; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
}
