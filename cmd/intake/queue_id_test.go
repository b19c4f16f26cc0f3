package main

import (
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
)

// TestServeINTCollectorQueueIDs: reports in INTCollector's layout (TR v1.0, INT v1.0 with the
// 16|16 queue word) into `intake serve` with quirks.intcollector on the listener. Switch 4
// sends queues 1, 257 and 513: three switch keys of the detector, three new_key events, as
// INTCollector keeps them (queue_id_t.q_id is 16 bits), not one queue 1 whose occupancy moved.
func TestServeINTCollectorQueueIDs(t *testing.T) {
	trAddr, httpAddr := serveDetect(t, `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 1, decoder: {quirks: {intcollector: true}}}
http: {address: '127.0.0.1:0'}
export: {period: 0s}
`)
	conn, err := net.Dial("udp", trAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	queueEvents := func() []string {
		_, out, _ := runVerb("query", "events", "--api", httpAddr)
		var qs []string
		for _, l := range strings.Split(untime(out), "\n") {
			if strings.Contains(l, "queue_occupancy") {
				qs = append(qs, strings.Join(strings.Fields(l), " "))
			}
		}
		return qs
	}
	want := []string{"TIME new_key switch queue_occupancy switch 5, queue 1 0 600 -"}
	for i, q := range []uint16{1, 257, 513} {
		// wire/producers_test.go's intcollectorReport: TR v1.0 from switch 5, two hops of
		// bitmap 0xF000; switch 4's queue word is queue id | occupancy 100+i.
		b, err := hex.DecodeString(strings.ReplaceAll(fmt.Sprintf("14000040 00000005 %08x 5ad88132"+
			"020000000002 020000000001 0800 455c0048 00010000 40110000 0a000001 0a000002 13881388 00340000"+
			"01000b5c 10000403 f0000000 00000005 00010002 00000190 00010258 00000004 00020003 000000c8 %04x%04x",
			i+1, q, 100+i), " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("TIME new_key switch queue_occupancy switch 4, queue %d 0 %d -", q, 100+i))
		var got []string
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("%d queue events", len(want)), func() bool {
			got = queueEvents()
			return len(got) >= len(want)
		})
		// The order of one report's switch events is not the point here: compare as sets.
		if !sameSet(got, want) {
			t.Fatalf("after queue %d: queue events\n%s\nwant\n%s", q, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s]--; seen[s] < 0 {
			return false
		}
	}
	return true
}
