//go:build !linux

package bench

import (
	"errors"
	"testing"
)

// TestVethUnsupported: off Linux NewVeth's refusal wraps errors.ErrUnsupported. It runs off
// Linux only; on Linux, `GOOS=darwin go vet ./internal/bench` compiles it.
func TestVethUnsupported(t *testing.T) {
	if _, err := NewVeth(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("NewVeth: %v does not wrap errors.ErrUnsupported", err)
	}
}
