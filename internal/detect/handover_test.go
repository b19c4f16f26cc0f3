package detect

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// TestFlowHandover: a flow handed to another detector carries on there as if it had stayed:
// no new_key again, the change rule against the same reference; a flow not handed over is a
// new key to it. Handed over with remove, it leaves the first detector.
func TestFlowHandover(t *testing.T) {
	var busA, busB event.Bus
	a := New(testConfig(), Deps{Bus: &busA})
	cb := busB.Subscribe("t", 1024)
	b := New(testConfig(), Deps{Bus: &busB})
	a.Process(0, report(1, 1000, hop{node: 7, lat: 100}))
	a.Process(0, report(2, 1001, hop{node: 7, lat: 100}))
	a.Process(0, report(3, 1000, hop{node: 7, lat: 140})) // within T of 100: the reference stays 100
	moved := func(k *telemetry.FlowKey) bool { return k.SrcPort == 1000 }
	n := a.SnapshotFlows(moved, true, func(_ *telemetry.FlowKey, img []byte) {
		if len(img) != a.FlowImageSize() {
			t.Fatalf("image of %d bytes, FlowImageSize %d", len(img), a.FlowImageSize())
		}
		if err := b.AdoptFlow(img); err != nil {
			t.Fatal(err)
		}
	})
	if n != 1 {
		t.Fatalf("%d flows handed over", n)
	}
	k := report(0, 1000).Flow
	if _, ok := a.Flow(k); ok {
		t.Error("a handed-over flow is still in a")
	}
	if fs, ok := b.Flow(k); !ok || fs.Reports != 2 || fs.Hops[0].HopLatency != 140 {
		t.Fatalf("adopted: %+v %v", fs, ok)
	}
	// 151 is 51 from the reference 100 (not 11 from the latest 140): a change, and no
	// new_key for the flow's keys.
	b.Process(0, report(4, 1000, hop{node: 7, lat: 151}))
	got := drain(cb)
	want := []string{"change switch flow_hop_latency sw7 100->151 T50"} // and no new_key
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events after the hand-over: %q, want %q", got, want)
	}
	if err := b.AdoptFlow(make([]byte, b.FlowImageSize())); err == nil {
		t.Error("an empty image was adopted")
	}
	if err := b.AdoptFlow([]byte{1}); err == nil || !strings.Contains(err.Error(), "a flow image of 1 bytes") {
		t.Errorf("short image: %v", err)
	}
}
