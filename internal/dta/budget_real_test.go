package dta

import (
	"context"
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget/budgettest"
)

// TestBudgetReal: a started translator (its stores are mapped: Outside the Go heap) with
// a large postcard cache, many Append lists and the event list holds no more of the Go heap
// than its postcard cache, append batches and event ring lines, and not more than twice less.
func TestBudgetReal(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Postcard.Cache = 1 << 14
	cfg.Append.Lists, cfg.Append.Batch, cfg.Append.ValueBytes, cfg.INT.EventList = 4096, 16, 32, 2
	cfg.INT.DropList, cfg.INT.QueueList = 0, 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	const workers = 3
	var tr *Translator
	real := budgettest.Heap(func() any {
		tr = NewTranslator(cfg, Deps{Workers: workers, Bus: &event.Bus{}})
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return tr
	})
	defer tr.Stop(context.Background())
	b := cfg.Budget(workers)
	budgettest.Within(t, "dta (Go heap)", real, budgettest.Memory(t, b, "postcard cache", "append batches", "dta ring"), 2)
}
