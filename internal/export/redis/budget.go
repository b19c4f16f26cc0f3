package redis

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/record"
)

// Budget is what the sink's queue holds when full (docs/config.md, "Budget"): redis.queue
// items of the largest size the sink makes them (an event, a record of the flow cache fc,
// or a histogram). The sink is the flow cache's: without it, none. TestBudgetReal fills the
// queue and measures it.
func (r *Config) Budget(fc export.Records) budget.Budget {
	if !r.Enabled() || !fc.Enabled {
		return nil
	}
	e := export.WorstEvent()
	per := redisItemBytes(AppendEvent(make([]string, 0, redisEventFields), &e))
	what := "events"
	rec := export.WorstRecord(fc)
	if n := redisItemBytes(AppendRecord(make([]string, 0, redisRecordFields(rec)), rec, true)); n > per {
		per, what = n, fmt.Sprintf("records of %d hops", fc.MaxHops)
	}
	h := record.Histogram{Scale: "log", Bins: fc.HistogramBins, Total: math.MaxUint64, Counts: make([]record.Bin, fc.HistogramBins)}
	for i := range h.Counts {
		h.Counts[i] = record.Bin{Lo: math.MaxUint64, Count: math.MaxUint64}
	}
	if n := redisItemBytes(appendRedisHist(make([]string, 0, 6+2*len(h.Counts)), &h)); n > per {
		per, what = n, fmt.Sprintf("histograms of %d bins", fc.HistogramBins)
	}
	return budget.Budget{{Component: "export", Part: "redis queue", Memory: budget.Add(export.SinkBase, budget.Mul(int64(r.Queue), per)),
		Note: fmt.Sprintf("%d %s × %d B (redis.queue)", r.Queue, what, per)}}
}

// redisItemBytes is what a queued Redis item of fields takes: the item, its slice and each
// string (counted whether or not it is a constant).
func redisItemBytes(fields []string) int64 {
	n := int64(unsafe.Sizeof(redisItem{})) + export.AllocBytes(cap(fields)*16)
	for _, f := range fields {
		n += export.AllocBytes(len(f))
	}
	return n
}
