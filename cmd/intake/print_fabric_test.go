package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/fabric"
)

func TestFabricStatsText(t *testing.T) {
	s := fabric.Stats{Now: int64(3 * time.Second), Sent: 100, Delivered: 97, PacketHops: 400, Drops: 2, Lost: 1, Labels: 12, Exports: 10,
		ExportedItems: 12, LostItems: 1, Reports: 5, Postcards: 6, TrafficBytes: 100000, INTBytes: 250}
	s.ItemsHist[1], s.ItemsHist[2] = 8, 2
	var b strings.Builder
	writeFabricStats(&b, &s)
	want := "  packets    100 sent, 97 delivered, 2 dropped at full queues, 1 lost on links (400 hops)\n" +
		"  INT-label  12 labels; 10 exports carrying 12 items (exports by items carried: 1: 8, 2: 2); 1 items lost with their packets\n" +
		"  INT        5 INT-MD reports, 6 postcards; INT-label headers 0.25% of the bytes on links\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if got := fabricProgress(&s); got != "3s: 100 packets sent, 97 delivered, 12 labels, 10 exports, 11 reports" {
		t.Errorf("progress %q", got)
	}
}
