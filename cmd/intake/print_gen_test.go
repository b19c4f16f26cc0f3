package main

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/gen"
)

// TestClusterSummaryText: `intake gen --collectors`' text, byte for byte.
func TestGenClusterSummaryText(t *testing.T) {
	s := gen.ClusterSummary{Collectors: []gen.Summary{{To: "10.0.0.1:32766", Datagrams: 10, Reports: 20}, {To: "10.0.0.2:32766", Datagrams: 5, Reports: 9}},
		Datagrams: 15, Reports: 29, SendErrors: 1}
	var b strings.Builder
	if err := writeClusterSummary(&b, &s); err != nil {
		t.Fatal(err)
	}
	want := "gen: sent 10 datagrams (20 reports) to 10.0.0.1:32766\n" +
		"gen: sent 5 datagrams (9 reports) to 10.0.0.2:32766\n" +
		"gen: sent 15 datagrams (29 reports) to 2 collectors; 1 send errors\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
