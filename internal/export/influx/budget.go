package influx

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
)

// Budget is what the sinks' queues hold when full (docs/config.md, "Budget"): the events
// queue, and with the flow cache (fc) the records queue, each at export.queue (q) items of
// the largest size the sink makes them. TestBudgetReal fills the queues and measures them.
func (c *Config) Budget(q export.Batching, fc export.Records) budget.Budget {
	if c.URL == "" {
		return nil
	}
	n := int64(q.Queue)
	ev := int64(unsafe.Sizeof(event.Event{}))
	b := budget.Budget{{Component: "export", Part: "influxdb queue", Memory: budget.Add(export.SinkBase, budget.Mul(n, ev)),
		Note: fmt.Sprintf("%d events × %d B (queue)", n, ev)}}
	if fc.Enabled {
		lines, _ := AppendRecordLines(nil, export.WorstRecord(fc))
		per := int64(unsafe.Sizeof(lineBatch{})) + export.AllocBytes(cap(lines))
		b = append(b, budget.Item{Component: "export", Part: "influxdb records queue", Memory: budget.Add(export.SinkBase, budget.Mul(n, per)),
			Note: fmt.Sprintf("%d records of %d hops × %d B (queue)", n, fc.MaxHops, per)})
	}
	return b
}
