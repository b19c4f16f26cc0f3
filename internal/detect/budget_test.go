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
		keys += int64(cap(s.se)+1)*int64(unsafe.Sizeof(swEntry{})) + int64(len(s.sl.l))*int64(unsafe.Sizeof(link{})) + int64(len(s.sidx.slots))*8 +
			int64(len(s.hops))*int64(unsafe.Sizeof(hopMemo{}))
	}
	l := newLog(&event.Bus{}, cfg.EventLog, cfg.Ring, 1)
	b := cfg.Budget(3)
	want := map[string]int64{"flow table": flows, "switch-key table": keys,
		"event log":        int64(len(l.ring)+logDrain)*int64(unsafe.Sizeof(event.Event{})) + int64(len(l.enc))*int64(unsafe.Sizeof(encoded{})),
		"sequence windows": int64(cfg.Shards) * int64(shardCap(cfg.MaxKeys, cfg.Shards)) * seqWinBytes,
		"event streams":    streamShared*streamEventBytes + int64(cfg.MaxStreams)*streamBatch*(int64(unsafe.Sizeof(encoded{})+unsafe.Sizeof(event.Event{}))+2*streamEventBytes),
		"rings":            3 * event.RingBytes(cfg.Ring)}
	if len(b) != 6 {
		t.Fatalf("%d items", len(b))
	}
	for _, it := range b {
		if it.Memory != want[it.Part] {
			t.Errorf("%s: budget %d, allocated %d", it.Part, it.Memory, want[it.Part])
		}
	}
}
