package label

import (
	"testing"

	"github.com/intake-int/intake/internal/budget/budgettest"
	"github.com/intake-int/intake/telemetry"
)

// TestBudgetReal: a controller that has seen every (switch, port) an item can name holds
// no more than its ports line, and not more than twice less.
func TestBudgetReal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled = true
	real := budgettest.Heap(func() any {
		c := New(cfg, Deps{})
		for sw := range 256 {
			for p := range 256 {
				it := telemetry.LabelItem{SwitchID: uint8(sw), EgressPort: uint8(p), EgressTS: 1 << 30}
				c.install(&it, 1<<30)
			}
		}
		return c
	})
	budgettest.Within(t, "label", real, budgettest.Memory(t, cfg.Budget(), "ports"), 2)
}
