//go:build !linux

package xdp

import (
	"errors"
	"testing"
)

// TestStubsUnsupported: off Linux every refusal wraps errors.ErrUnsupported, so a caller can
// tell "not on this system" from a failure. It runs off Linux only; on Linux, `GOOS=darwin
// go vet ./internal/xdp` and `GOOS=windows go vet ./internal/xdp` compile it.
func TestStubsUnsupported(t *testing.T) {
	_, errAttach := Attach("eth0", 4790, Options{})
	_, errOpen := Open(1, 0, 1<<20)
	_, errStores := NewDTAStores(DTA{})
	_, errDetect := NewDetectState(Detect{})
	_, errFlowCache := NewFlowCacheState(FlowCache{})
	_, errFloor := AttachFloor("eth0")
	_, errStats := EnableRunStats()
	for name, err := range map[string]error{"Attach": errAttach, "Open": errOpen, "NewDTAStores": errStores,
		"NewDetectState": errDetect, "NewFlowCacheState": errFlowCache, "AttachFloor": errFloor, "EnableRunStats": errStats} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: %v does not wrap errors.ErrUnsupported", name, err)
		}
	}
}
