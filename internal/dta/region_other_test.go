//go:build !unix

package dta

import (
	"errors"
	"testing"
)

// TestRegionUnsupported: where there is no shared file mapping (not Unix), a writable store
// and a kernel-held one are refused with errors that wrap errors.ErrUnsupported. It runs
// there only; on Linux, `GOOS=windows go vet ./internal/dta` compiles it.
func TestRegionUnsupported(t *testing.T) {
	if _, err := mapFile(nil, 8, true); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("mapFile writable: %v does not wrap errors.ErrUnsupported", err)
	}
	if _, err := mapKernelArray(1, 8); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("mapKernelArray: %v does not wrap errors.ErrUnsupported", err)
	}
}
