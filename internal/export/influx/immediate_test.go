package influx

import (
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
)

// An immediate event (a DTA report's notification: no measurement) is no InfluxDB point in
// either schema: a line with an empty measurement would be refused, and the batch with it.
// A change event still is.
func TestImmediateNoPoint(t *testing.T) {
	imm := event.Event{Kind: event.KindImmediate, Scope: event.ScopeFlow, Prev: 1, Value: 42}
	chg := event.Event{Kind: event.KindChange, Scope: event.ScopeE2E, Measurement: event.FlowLatency, Value: 7}
	for _, schema := range []string{"intake", "intcollector"} {
		s := New(Config{URL: "http://127.0.0.1:1", Schema: schema, Batch: 10}, export.Batching{Queue: 8}, export.SinkDeps{})
		s.Offer(&imm)
		s.Offer(&chg)
		if q := s.SinkStatus().Queued; q != 1 {
			t.Errorf("%s: %d events queued, want 1 (the change event's)", schema, q)
		}
	}
}
