//go:build !linux

package gen

import (
	"errors"
	"testing"
)

// TestSendUnsupported: off Linux the sender's refusal wraps errors.ErrUnsupported. It runs
// off Linux only; on Linux, `GOOS=darwin go vet ./internal/gen` compiles it.
func TestSendUnsupported(t *testing.T) {
	if err := CheckSend(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CheckSend: %v does not wrap errors.ErrUnsupported", err)
	}
}
