package docstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the intake binary the tests run, built once per test process.
var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
	dir  string
}

// intakeBinary builds ./cmd/intake once (go build reuses the build cache CI's earlier steps
// filled) and returns its path.
func intakeBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "docstest-bin-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "intake")
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/intake")
		cmd.Dir = root
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build ./cmd/intake: %v\n%s", built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
