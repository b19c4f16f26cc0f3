package labelsim

import "github.com/intake-int/intake/internal/fabric"

// prototypeRoutes are the source routes of the authors' prototype (INT-label §6.1, the
// public code's sender: server1 and server8 each send to the other seven servers in turn,
// every packet carrying its egress ports). On the testbed's switches (the prototype's
// p<pod>_t<n> is tor, p<pod>_l<n> leaf, s<set>_s<n> spine) they use both uplinks of the
// senders' ToRs and 25 switch ports, the 25 its coverage script counts (the paper says 24).
// Fixed routing ("lowest-numbered next hop") uses 18.
func prototypeRoutes(t *fabric.Topology) map[[2]int][]int {
	path := func(names ...string) []int {
		var p []int
		for _, n := range names {
			i, ok := t.Find(n)
			if !ok {
				panic("testbed has no " + n)
			}
			p = append(p, i)
		}
		return p
	}
	return map[[2]int][]int{
		{0, 1}: path("tor1"),
		{0, 2}: path("tor1", "leaf1", "tor2"),
		{0, 3}: path("tor1", "leaf2", "tor2"),
		{0, 4}: path("tor1", "leaf1", "spine1", "leaf3", "tor3"),
		{0, 5}: path("tor1", "leaf1", "spine1", "leaf3", "tor3"),
		{0, 6}: path("tor1", "leaf2", "spine3", "leaf4", "tor4"),
		{0, 7}: path("tor1", "leaf2", "spine4", "leaf4", "tor4"),
		{7, 0}: path("tor4", "leaf4", "spine4", "leaf2", "tor1"),
		{7, 1}: path("tor4", "leaf4", "spine4", "leaf2", "tor1"),
		{7, 2}: path("tor4", "leaf4", "spine4", "leaf2", "tor2"),
		{7, 3}: path("tor4", "leaf4", "spine4", "leaf2", "tor2"),
		{7, 4}: path("tor4", "leaf3", "tor3"),
		{7, 5}: path("tor4", "leaf3", "tor3"),
		{7, 6}: path("tor4"),
	}
}
