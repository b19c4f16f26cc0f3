package prom

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
)

// Budget is what the remote-write queue holds when full (docs/config.md, "Budget"):
// export.queue (q) events. TestBudgetReal fills it and measures it.
func (c *Config) Budget(q export.Batching) budget.Budget {
	if c.RemoteWrite == "" {
		return nil
	}
	n := int64(q.Queue)
	ev := int64(unsafe.Sizeof(event.Event{}))
	return budget.Budget{{Component: "export", Part: "remote write queue", Memory: budget.Add(export.SinkBase, budget.Mul(n, ev)),
		Note: fmt.Sprintf("%d events × %d B (queue)", n, ev)}}
}
