package budget

import (
	"os"
	"testing"
)

func TestOnTmpfs(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	if !OnTmpfs("/dev/shm/intake-budget-test/not-yet") {
		t.Error("/dev/shm is not tmpfs")
	}
	if OnTmpfs("/proc") {
		t.Error("/proc is tmpfs")
	}
}
