package detect

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/budget"
	"github.com/intake-int/intake/event"
)

// Budget is the memory the detector takes: its preallocated key tables, the event log and
// the event bus's rings, one of detect.ring events per consumer (the log, the export
// pipeline, the Redis sink, the DTA event list: ringConsumers of them, which the caller
// knows from the rest of the configuration). docs/config.md, "Budget".
func (c *Config) Budget(ringConsumers int) budget.Budget {
	if !c.Enabled {
		return nil
	}
	perFlows, perKeys := int64(shardCap(c.MaxFlows, c.Shards)), int64(shardCap(c.MaxKeys, c.Shards))
	table := func(n, entry int64) int64 {
		idx := int64(8)
		for idx < 2*n {
			idx <<= 1
		}
		return budget.Add(budget.Mul(n, entry+int64(unsafe.Sizeof(link{}))), idx*8)
	}
	flows := budget.Mul(int64(c.Shards), table(perFlows, int64(unsafe.Sizeof(flowEntry{}))))
	keys := budget.Mul(int64(c.Shards), table(perKeys, int64(unsafe.Sizeof(swEntry{}))))
	logN := int64(logSize(c.EventLog))
	b := budget.Budget{
		{Component: "detect", Part: "flow table", Memory: flows, Note: fmt.Sprintf("%d flows in %d shards", c.MaxFlows, c.Shards)},
		{Component: "detect", Part: "switch-key table", Memory: keys, Note: fmt.Sprintf("%d keys in %d shards", c.MaxKeys, c.Shards)},
		{Component: "detect", Part: "event log", Memory: budget.Mul(logN, int64(unsafe.Sizeof(event.Event{}))),
			Note: fmt.Sprintf("%d events (event_log, streams read it)", logN)},
	}
	if ringConsumers > 0 {
		b = append(b, budget.Item{Component: "event bus", Part: "rings", Memory: budget.Mul(int64(ringConsumers), event.RingBytes(c.Ring)),
			Note: fmt.Sprintf("%d consumers × %d events (detect.ring)", ringConsumers, c.Ring)})
	}
	return b
}
