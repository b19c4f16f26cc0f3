package detect

import (
	"testing"
	"unsafe"

	"github.com/intake-int/intake/event"
)

// TestBudget: the budget is what New and the event log allocate.
func TestBudget(t *testing.T) {
	cfg := testConfig()
	cfg.MaxFlows, cfg.MaxKeys, cfg.EventLog = 1000, 300, 20000
	d := New(cfg, Deps{})
	var flows, keys int64
	for _, s := range d.shards {
		flows += int64(len(s.fe))*int64(unsafe.Sizeof(flowEntry{})) + int64(len(s.fl.l))*int64(unsafe.Sizeof(link{})) + int64(len(s.fidx.slots))*8
		keys += int64(len(s.se))*int64(unsafe.Sizeof(swEntry{})) + int64(len(s.sl.l))*int64(unsafe.Sizeof(link{})) + int64(len(s.sidx.slots))*8
	}
	l := newLog(&event.Bus{}, cfg.EventLog, cfg.Ring, 1)
	b := cfg.Budget(3)
	want := map[string]int64{"flow table": flows, "switch-key table": keys,
		"event log": int64(len(l.ring)) * int64(unsafe.Sizeof(event.Event{})), "rings": 3 * event.RingBytes(cfg.Ring)}
	if len(b) != 4 {
		t.Fatalf("%d items", len(b))
	}
	for _, it := range b {
		if it.Memory != want[it.Part] {
			t.Errorf("%s: budget %d, allocated %d", it.Part, it.Memory, want[it.Part])
		}
	}
}
