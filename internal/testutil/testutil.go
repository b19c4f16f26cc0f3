// Package testutil holds helpers shared by the module's tests. It is imported only from
// _test.go files, so nothing in it reaches a production binary.
package testutil

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually re-checks its condition: short enough that a test
// waits little past the moment the condition holds, long enough not to spin a shared core.
const pollInterval = 5 * time.Millisecond

// Eventually waits until cond returns true, checking it every few milliseconds, and fails
// the test with t.Fatalf naming what it waited for if timeout passes first. cond runs on the
// calling goroutine, and is checked after the last sleep before giving up.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
			return
		}
		time.Sleep(pollInterval)
	}
}
