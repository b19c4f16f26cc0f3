//go:build !linux

package ingest

import (
	"errors"
	"testing"
)

// TestReceivePathUnsupported: off Linux the receive path's refusal wraps
// errors.ErrUnsupported. It runs off Linux only; on Linux, `GOOS=darwin go vet ./internal/ingest`
// compiles it.
func TestReceivePathUnsupported(t *testing.T) {
	if err := CheckReceivePath(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CheckReceivePath: %v does not wrap errors.ErrUnsupported", err)
	}
}
