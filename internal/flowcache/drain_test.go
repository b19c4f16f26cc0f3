package flowcache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/record"
)

// TestDrainBacksOff: an idle cache's drain backs off from every 5 ms (200 wakeups a second,
// what an idle collector spent 3 % of a core on) to every 80 ms; a record evicted then
// still reaches the sinks, and the drain is back at its quick pace after it.
func TestDrainBacksOff(t *testing.T) {
	var got atomic.Int64
	f := New(DefaultConfig(), Deps{Records: []func(*record.Record){func(*record.Record) { got.Add(1) }}})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop(context.Background())
	time.Sleep(time.Second)
	if n := f.drains.Load(); n < 5 || n > 30 {
		t.Errorf("%d drains in an idle second: want the back-off's 15 or so (at 5 ms, 200)", n)
	}
	b := make([]uint64, f.t.bktW)
	if !f.rings.push(0, b, record.ReasonIdle) {
		t.Fatal("push refused")
	}
	deadline := time.Now().Add(2 * time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got.Load() != 1 {
		t.Fatalf("%d records reached the sink", got.Load())
	}
}

// TestRingKick: a ring that fills past a quarter wakes the drain once (the kick is a
// channel of one), not on every record after.
func TestRingKick(t *testing.T) {
	s := newRingSet(2, 64, 4)
	b := make([]uint64, 4)
	for i := range 15 {
		s.push(0, b, record.ReasonIdle)
		if len(s.kick) != 0 {
			t.Fatalf("kicked at %d records of 64", i+1)
		}
	}
	for range 30 {
		s.push(0, b, record.ReasonIdle)
	}
	if len(s.kick) != 1 {
		t.Fatalf("%d kicks pending after a quarter", len(s.kick))
	}
	<-s.kick
	s.rings[0].pop(func([]uint64, record.Reason) {})
	s.push(1, b, record.ReasonIdle) // another ring, far from a quarter
	if len(s.kick) != 0 {
		t.Fatal("kicked by a ring below a quarter")
	}
}
