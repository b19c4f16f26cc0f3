package main

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/cluster"
)

// TestClusterStatusText: `intake status --cluster`'s text, byte for byte: a member up (self), one up
// without report addresses, one down, and the partial line.
func TestClusterStatusText(t *testing.T) {
	st := cluster.StatusJSON{Self: "m0", Hash: cluster.HashName, Partial: true, Missing: []string{"m2"}, Members: []cluster.MemberStatus{
		{Name: "m0", API: "127.0.0.1:8040", Reports: []string{"10.0.0.1:32766", "10.0.0.1:40040"}, Self: true, Up: true, RTTMs: 0.25,
			Status: []byte(`{"packets_received":100,"reports_decoded":90,"drops":{"total":3}}`)},
		{Name: "m1", API: "127.0.0.1:8041", Up: true, RTTMs: 12.5, Status: []byte(`{"packets_received":7,"reports_decoded":7,"drops":{"total":0}}`)},
		{Name: "m2", API: "127.0.0.1:8042", Reports: []string{"10.0.0.3:32766"}, Error: "connection refused"}}}
	var b strings.Builder
	if err := writeClusterStatus(&b, &st); err != nil {
		t.Fatal(err)
	}
	want := `cluster of 3 members (hash: crc32c mod members), asked through m0
MEMBER     STATE  API             REPORTS TO                     PACKETS  REPORTS  DROPS  RTT
m0 (self)  up     127.0.0.1:8040  10.0.0.1:32766,10.0.0.1:40040  100      90       3      0.25 ms
m1         up     127.0.0.1:8041  -                              7        7        0      12.50 ms
m2         DOWN   127.0.0.1:8042  10.0.0.3:32766                 -        -        -      -
m2 is down: connection refused
partial: 2 of 3 members answered (missing: m2)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	st.Members[1].Status = []byte(`{"drops":`)
	if err := writeClusterStatus(&b, &st); err == nil || !strings.HasPrefix(err.Error(), "member m1: status: ") {
		t.Errorf("a member's bad status: %v", err)
	}
}
