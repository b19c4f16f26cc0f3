package label

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/internal/budget"
)

// Budget is the memory the controller takes at most: its windows and stripes, a table of
// 256 ports for each of the 256 switch ids an item can carry (allocated when the switch is
// first seen), the list of known ports, and the control queue (docs/config.md, "Budget").
// Item fields bound it, not the configuration: it is a constant.
func (c *Config) Budget() budget.Budget {
	if !c.Enabled {
		return nil
	}
	table := (int64(unsafe.Sizeof([256]port{})) + 8191) &^ 8191 // its size class: 8 KiB steps up there
	ports := 256 * table
	known := int64(256*256*2) * 2 // append's growth, with its size classes
	n := int64(unsafe.Sizeof(Controller{})) + ports + known
	if c.Control != "" {
		n += int64(controlQueue * unsafe.Sizeof(Shift{}))
	}
	return budget.Budget{{Component: "label", Part: "ports", Memory: n,
		Note: fmt.Sprintf("256 switches × 256 ports × %d B, and the windows", unsafe.Sizeof(port{}))}}
}
