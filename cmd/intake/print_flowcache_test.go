package main

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/flowcache"
)

// TestFlowCacheStatsText: `intake query flowcache-stats`'s text, byte for byte, with the kernel's part
// (flowcache.kernel) and the event rings.
func TestFlowCacheStatsText(t *testing.T) {
	s := flowcache.StatsJSON{Stats: flowcache.Stats{Rows: 16, Buckets: 4, MaxHops: 5, Capacity: 64, Flows: 2, Occupancy: 2.0 / 64, Bytes: 8192, BytesPerFlow: 128,
		Reports: 10, Updates: 7, Inserts: 2, SkippedNoFlow: 1, SkippedNoHops: 3, TruncatedPaths: 4,
		Evictions: flowcache.Evictions{Collision: 5, Idle: 6}, Rings: flowcache.RingStats{Count: 4, Entries: 4096, Pushed: 9, Exported: 8, Pending: 1, Drops: 2},
		Switches: 3, SwitchOverflow: 11,
		Kernel: &flowcache.KernelStats{KernelCounts: flowcache.KernelCounts{Reports: 20, Pushed: 12, RingFull: 13, LockBusy: 14}, Flows: 15, Bytes: 16384, Pending: 17, Errors: 18}},
		EventRings: []event.RingStatus{{Consumer: "export", Size: 1024, Pending: 3, Drops: 1}}}
	var b strings.Builder
	writeFlowCacheStats(&b, &s)
	want := `flow cache  16 rows × 4 buckets × 5 hops: 2 of 64 flows (3.12%), 8192 bytes (128.0 per flow)
reports     10 (updates 7, new flows 2, no flow 1, no hops 3, truncated paths 4)
evictions   collision 5, idle 6
rings       4 × 4096: 9 records, 8 exported, 1 pending, 2 dropped
histograms  3 switches, 11 samples over max_switches
kernel      20 reports (included above), 15 flows, 16384 bytes; ring 12 pushed, 17 pending, 13 dropped; 14 updates lost to a held row, 18 read errors
event ring  export: 3 of 1024 pending, 1 dropped
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestFlowCacheFlowText: `intake query flowcache-flow`'s text of a flow whose path was truncated,
// without an end-to-end latency and with values its reports did not carry ("-").
func TestFlowCacheFlowText(t *testing.T) {
	f := flowcache.FlowJSON{Src: "10.0.0.1", Dst: "10.0.0.2", Sport: 1000, Dport: 80, Proto: 6, Packets: 3, FirstSeen: "a", LastSeen: "b",
		Path: []uint32{4, 5}, Truncated: true, Hops: []flowcache.HopJSON{{Hop: 1, NodeID: 4, Latest: flowcache.ValuesJSON{QueueOccupancy: new(uint64(2))},
			Mean: flowcache.MeansJSON{QueueOccupancy: new(2.25), HopLatency: new(1500.5)}}}}
	var b strings.Builder
	if err := writeFlowCacheFlow(&b, &f); err != nil {
		t.Fatal(err)
	}
	want := `flow     10.0.0.1:1000 > 10.0.0.2:80 tcp
path     4 > 5 (2 hops, source first; longer paths seen: truncated to max_hops)
packets  3, first seen a, last seen b
HOP  SWITCH  HOP LATENCY latest  mean     QUEUE OCCUPANCY latest  mean  TX UTILIZATION latest  mean
1    4       -                   1.50 µs  2                       2.2   -                      -
latest: the newest value this flow's reports carried; mean: over its reports since first seen
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
