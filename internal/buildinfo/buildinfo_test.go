package buildinfo

import (
	"runtime"
	"testing"
)

// A test binary has build information: the toolchain's version, and a main module version
// (test binaries record none: "").
func TestRead(t *testing.T) {
	i, ok := Read()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	if i.GoVersion != runtime.Version() {
		t.Errorf("GoVersion %q, want %q", i.GoVersion, runtime.Version())
	}
	if i.Modified && i.Revision == "" {
		t.Errorf("modified without a revision: %+v", i)
	}
}
