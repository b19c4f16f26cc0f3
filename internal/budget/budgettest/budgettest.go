// Package budgettest measures what a component really allocates, for the tests that hold
// its Budget lines to it (docs/config.md, "Budget"): each component's test fills the
// component to its configured limits and compares the live heap it then holds with the
// lines its configuration section's Budget method prints.
package budgettest

import (
	"runtime"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/budget"
)

// Heap returns the bytes of live heap that build's result holds: HeapAlloc after a full
// collection, before build and after it, with the result kept alive in between. build
// should fill what it makes to its limits (a table's entries, a queue's items).
func Heap(build func() any) int64 { return measure(build, false) }

// HeapStacks is Heap plus the goroutine stacks build's result keeps running (StackInuse):
// for what runs a goroutine per item, as a server's connections.
func HeapStacks(build func() any) int64 { return measure(build, true) }

func measure(build func() any, stacks bool) int64 {
	var before, after runtime.MemStats
	settle(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	n := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if stacks {
		n += int64(after.StackInuse) - int64(before.StackInuse)
	}
	return n
}

// settle collects until the live heap holds still, and reads it into ms. What an earlier
// test left winding down (a goroutine that notices its stop on its next 10 ms tick, a timer
// about to fire) can let go of megabytes a moment later, inside the next measurement: a
// package's test saw its heap shrink by 10.8 MiB that way. So the heap must agree, within a
// sixteenth of Slack, over 30 ms of collections 5 ms apart (up to half a second).
func settle(ms *runtime.MemStats) {
	runtime.GC()
	runtime.ReadMemStats(ms)
	still := 0
	for range 100 {
		prev := int64(ms.HeapAlloc)
		time.Sleep(5 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(ms)
		if d := int64(ms.HeapAlloc) - prev; d > -Slack/16 && d < Slack/16 {
			if still++; still == 6 {
				return
			}
		} else {
			still = 0
		}
	}
}

// Memory is the sum of the memory of b's items whose part is one of parts (all of b's
// items when parts is empty); it fails t when a part is missing.
func Memory(t testing.TB, b budget.Budget, parts ...string) int64 {
	t.Helper()
	var n int64
	for _, p := range parts {
		found := false
		for _, it := range b {
			if it.Part == p {
				n, found = budget.Add(n, it.Memory), true
			}
		}
		if !found {
			t.Fatalf("no budget item %q in %v", p, b)
		}
	}
	if len(parts) == 0 {
		n = b.Memory()
	}
	return n
}

// Slack is what a measurement may exceed the budget by: a component's fixed state (its
// structs and counters, tens of KiB, which no line counts) and what the test binary's other
// goroutines hold meanwhile (seen: up to 75 KiB more when a package's other tests ran first).
const Slack = 128 << 10

// Within fails t unless the measured real bytes are within the budget's (and Slack) and the budget is
// at most ratio times them: a budget below what is allocated is not a bound, one far above
// it refuses configurations that would fit.
func Within(t testing.TB, what string, real, budgeted int64, ratio float64) {
	t.Helper()
	t.Logf("%s: real %s, budget %s (budget/real %.3f, %+d B)", what, budget.Bytes(real), budget.Bytes(budgeted), float64(budgeted)/float64(max(real, 1)), budgeted-real)
	if real > budgeted+Slack {
		t.Errorf("%s: allocates %s, more than its budget of %s", what, budget.Bytes(real), budget.Bytes(budgeted))
	}
	if float64(budgeted) > ratio*float64(real) {
		t.Errorf("%s: budget %s is more than %.1f× the %s allocated", what, budget.Bytes(budgeted), ratio, budget.Bytes(real))
	}
}
