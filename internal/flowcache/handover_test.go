package flowcache

import (
	"reflect"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// TestHandover: the flows a snapshot selects leave one cache (when removed) and carry on in
// another exactly where they were: counts, receive times, latency sums and every hop's
// latest values and sums; a later report adds to them as if it had reached the first cache.
func TestHandover(t *testing.T) {
	a, b := New(small(64, 4), Deps{}), New(small(64, 4), Deps{})
	for i := range 10 {
		for j := range 3 {
			a.Process(0, report(flow(uint16(1000+i)), int64(100*j+i), hop{1, 10 + uint32(j), 5, 7}, hop{2, 20, uint32(i), 9}))
		}
	}
	odd := func(k *telemetry.FlowKey) bool { return k.SrcPort%2 == 1 }
	var imgs [][]byte
	if n := a.Snapshot(odd, false, func(_ *telemetry.FlowKey, img []byte) { imgs = append(imgs, append([]byte(nil), img...)) }); n != 5 || len(imgs) != 5 {
		t.Fatalf("snapshot: %d flows, %d images", n, len(imgs))
	}
	if got := a.Stats().Flows; got != 10 {
		t.Fatalf("a snapshot without remove took flows: %d left", got)
	}
	for _, img := range imgs {
		if len(img) != a.ImageSize() {
			t.Fatalf("image of %d bytes, ImageSize %d", len(img), a.ImageSize())
		}
		if err := b.Adopt(img); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		k := flow(uint16(1000 + i))
		want, _ := a.Lookup(&k)
		got, ok := b.Lookup(&k)
		if odd(&k) != ok {
			t.Fatalf("flow %d in b: %v", i, ok)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Errorf("flow %d adopted as %+v, was %+v", i, got, want)
		}
	}
	// Handed over: gone from a, and a report more adds to b's as it would have to a's.
	if n := a.Snapshot(odd, true, func(*telemetry.FlowKey, []byte) {}); n != 5 || a.Stats().Flows != 5 {
		t.Fatalf("remove: %d handed, %d left", n, a.Stats().Flows)
	}
	k := flow(1001)
	if _, ok := a.Lookup(&k); ok {
		t.Fatal("a handed-over flow is still in a")
	}
	b.Process(0, report(k, 500, hop{1, 40, 5, 7}, hop{2, 20, 1, 9}))
	got, _ := b.Lookup(&k)
	if got.Packets != 4 || got.First != 1 || got.Last != 500 || got.Hops[0].Sum[0] != 10+11+12+40 {
		t.Errorf("after a report more: %+v", got)
	}
	// Adopting an image replaces the flow's bucket; a bad image is refused with why.
	if err := b.Adopt(imgs[0]); err != nil || b.Stats().Flows != 5 {
		t.Fatalf("re-adopt: %v, %d flows", err, b.Stats().Flows)
	}
	if got, _ := b.Lookup(&k); got.Packets != 3 {
		t.Errorf("re-adopted flow has %d packets, want the image's 3", got.Packets)
	}
	if err := b.Adopt(imgs[0][:8]); err == nil || !strings.Contains(err.Error(), "a flow image of 8 bytes") {
		t.Errorf("short image: %v", err)
	}
	if err := b.Adopt(make([]byte, b.ImageSize())); err == nil {
		t.Error("an empty image was adopted")
	}
}
