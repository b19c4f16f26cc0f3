package history

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/internal/budget"
)

// Budget is the memory the history takes: its ring of points (allocated at New, in full)
// and the state of the last sample (docs/config.md, "Budget").
func (c *Config) Budget() budget.Budget {
	if !c.Enabled {
		return nil
	}
	n := int64(c.slots())
	sw, fl := int64(unsafe.Sizeof(switchPoint{})), int64(unsafe.Sizeof(flowPoint{}))
	// The last sample: the running counts of up to maxCounted switches per kept one (a map
	// entry of about 48 B), the period's switches (about 120 B each), per flow its sums (a
	// map entry of about 96 B) twice, and the candidates' heap.
	last := budget.Add(budget.Mul(int64(c.MaxSwitches), maxCounted*48+120), budget.Mul(int64(c.MaxFlows), 2*96+fl+24))
	return budget.Budget{{Component: "history", Part: "ring", Memory: budget.Add(budget.Mul(n, int64(c.MaxSwitches)*sw+int64(c.MaxFlows)*fl), last),
		Note: fmt.Sprintf("%d periods × (%d switches × %d B + %d flows × %d B)", n, c.MaxSwitches, sw, c.MaxFlows, fl)}}
}
