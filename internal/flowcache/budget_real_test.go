package flowcache

import (
	"testing"

	"github.com/intake-int/intake/internal/budget/budgettest"
)

// TestBudgetReal: a flow cache filled past its limits (three times the flows its table
// holds, 5 hops each over more switches than the histograms keep, the eviction rings full
// and overflowing) holds no more than its table, rings and histograms lines, and not more
// than twice less. The table is under hugeMin, so on the Go heap (a larger one is mapped,
// counted in full as Outside).
func TestBudgetReal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Rows = 512
	const workers = 2
	real := budgettest.Heap(func() any {
		f := New(cfg, Deps{Workers: workers})
		n := 3 * cfg.Rows * cfg.Buckets
		for i := range n {
			k := flow(uint16(i))
			k.DstPort = uint16(i >> 16)
			var hs []hop
			for j := range 5 {
				hs = append(hs, hop{uint32((i*5+j)%(2*cfg.Histograms.MaxSwitches) + 1), uint32(i), 3, 4})
			}
			f.Process(i%workers, report(k, int64(i)<<10, hs...))
		}
		for w := range workers {
			f.Flush(w)
		}
		return f
	})
	budgettest.Within(t, "flowcache", real, cfg.Budget(workers).Memory(), 2)
}
