package flowcache

import (
	"reflect"
	"slices"
	"testing"
)

// TestRecent: the first Read counts every sample; the next only those since; a flow not
// updated since `since` is not listed, and counts only its new samples when it is again; a
// switch without new samples is not listed.
func TestRecent(t *testing.T) {
	f := New(small(4, 2), Deps{})
	a, b := flow(1000), flow(2000)
	f.Process(0, report(a, 100, hop{1, 10, 0, 0}, hop{2, 20, 0, 0}))
	f.Process(0, report(b, 150, hop{1, 30, 0, 0}))
	f.Flush(0)
	rc := f.NewRecent()
	byNode := func(s []SwitchLatency) []SwitchLatency {
		slices.SortFunc(s, func(x, y SwitchLatency) int { return int(x.Node) - int(y.Node) })
		return s
	}
	flows, sws := rc.Read(0)
	if len(flows) != 2 {
		t.Fatalf("%d flows, want 2", len(flows))
	}
	if want := []SwitchLatency{{Node: 1, Sum: 40, N: 2, Latest: 30}, {Node: 2, Sum: 20, N: 1, Latest: 20}}; !reflect.DeepEqual(byNode(sws), want) {
		t.Errorf("first read %+v, want %+v", sws, want)
	}

	f.Process(0, report(a, 300, hop{1, 14, 0, 0}, hop{2, 20, 0, 0}))
	f.Flush(0)
	flows, sws = rc.Read(200)
	if len(flows) != 1 || flows[0].Flow != a {
		t.Fatalf("flows since 200: %+v", flows)
	}
	if want := []SwitchLatency{{Node: 1, Sum: 14, N: 1, Latest: 14}, {Node: 2, Sum: 20, N: 1, Latest: 20}}; !reflect.DeepEqual(byNode(sws), want) {
		t.Errorf("second read %+v, want %+v", sws, want)
	}
	if _, sws = rc.Read(0); len(sws) != 0 {
		t.Errorf("nothing new: %+v", sws)
	}
	// b was not listed by the read since 200; back, it counts only its new sample.
	f.Process(0, report(b, 400, hop{1, 50, 0, 0}))
	f.Flush(0)
	if _, sws = rc.Read(350); !reflect.DeepEqual(sws, []SwitchLatency{{Node: 1, Sum: 50, N: 1, Latest: 50}}) {
		t.Errorf("b back: %+v", sws)
	}
}
