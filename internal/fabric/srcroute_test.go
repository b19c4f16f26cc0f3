package fabric

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
)

type egressSet map[[2]uint8]int

func (e egressSet) Egress(sw, port uint8, _, _ int64, _ int, _, _ bool, _ *telemetry.LabelItem) {
	e[[2]uint8{sw, port}]++
}

// A source-routed pair takes its path (not the fixed routes' lowest-numbered uplinks); the
// other pair of the same sender keeps the fixed route.
func TestSourceRoutes(t *testing.T) {
	topo := Testbed(DefaultLink)
	path := func(names ...string) []int {
		var p []int
		for _, n := range names {
			i, ok := topo.Find(n)
			if !ok {
				t.Fatal(n)
			}
			p = append(p, i)
		}
		return p
	}
	f, err := New(Config{
		Topology: topo, Routing: "fixed",
		Traffic:      Traffic{Senders: []int{0}, Dsts: []int{7}, Rate: 1e6, Packets: 50},
		SourceRoutes: map[[2]int][]int{{0, 7}: path("tor1", "leaf2", "spine4", "leaf4", "tor4")},
		Seed:         1,
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := egressSet{}
	f.SetTracer(seen)
	f.RunVirtual(int64(2 * time.Second))
	if st := f.Stats(); st.Sent != 50 || st.Delivered != 50 {
		t.Fatalf("sent %d delivered %d", st.Sent, st.Delivered)
	}
	// Switch ids: tor1-4 are 1-4, leaf1-4 5-8, spine1-4 9-12. Ports count from 1 in link
	// order: tor: servers, then leaves; leaf: tors, then spines; spine: leaves.
	var got [][2]uint8
	for k, n := range seen {
		if n != 50 {
			t.Errorf("switch %d port %d: %d packets", k[0], k[1], n)
		}
		got = append(got, k)
	}
	sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
	want := [][2]uint8{{1, 4}, {4, 2}, {6, 4}, {8, 2}, {12, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("egress (switch, port) %v, want %v", got, want)
	}

	for _, c := range []struct {
		routes map[[2]int][]int
		err    string
	}{
		{map[[2]int][]int{{0, 7}: path("tor1", "spine1", "leaf3", "tor4")}, "source route 0→7: no link tor1–spine1"},
		{map[[2]int][]int{{0, 7}: path("tor2", "leaf1", "spine1", "leaf3", "tor4")}, "source route 0→7: no link server1–tor2"},
		{map[[2]int][]int{{0, 7}: path("tor1", "leaf1", "spine1", "leaf3", "tor3")}, "source route 0→7: no link tor3–server8"},
		{map[[2]int][]int{{0, 0}: path("tor1")}, "source route 0→0: hosts out of range"},
		{map[[2]int][]int{{0, 1}: {12}}, "source route 0→1: node 12 is not a switch"},
	} {
		_, err := New(Config{Topology: Testbed(DefaultLink), SourceRoutes: c.routes})
		if err == nil || err.Error() != c.err {
			t.Errorf("%v: error %v, want %q", c.routes, err, c.err)
		}
	}
}
