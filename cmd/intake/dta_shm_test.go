package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/intake-int/intake/internal/dta"
)

// withTestDataDir runs the tests with dta.data_dir's default pointed at a directory of the
// test binary's own, removed afterwards: the tests that run serve, demo or bench with the
// default configuration would otherwise map /dev/shm/intake-dta, shared with every other
// test run and any collector on the machine. Tests of the DTA stores give their own
// t.TempDir(). At the end it fails the run if any test opened stores for writing on
// /dev/shm (dta.WriterDirs: this process's, whatever other processes do there).
func withTestDataDir(run func() int) int {
	dir, err := os.MkdirTemp("", "intake-test-dta-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	dta.DefaultDataDir = filepath.Join(dir, "default")
	code := run()
	for _, d := range dta.WriterDirs() {
		if abs, _ := filepath.Abs(d); strings.HasPrefix(abs, "/dev/shm/") || abs == "/dev/shm" {
			fmt.Fprintf(os.Stderr, "FAIL: a test opened DTA stores in %s: tests must use a temporary data_dir\n", d)
			code = 1
		}
	}
	return code
}
