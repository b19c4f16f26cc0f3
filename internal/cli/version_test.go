package cli

import (
	"runtime"
	"strings"
	"testing"
)

// Version starts with "intake" and ends with the Go version (a test binary records no
// revision, so nothing stands between them but the module version).
func TestVersion(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, "intake ") || !strings.HasSuffix(v, " "+runtime.Version()) {
		t.Errorf("Version() = %q", v)
	}
}
