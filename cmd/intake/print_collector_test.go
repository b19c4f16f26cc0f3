package main

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/export/redis"
	grouprole "github.com/intake-int/intake/internal/group"
	"github.com/intake-int/intake/internal/ingest"
)

// TestStatusText: `intake status`' text, byte for byte: the counters and their rates, the
// breakdowns, the listeners (one stopped, one spread by flow with receive buffers in KiB and
// MiB), the drops by section and the API server's connections.
func TestStatusText(t *testing.T) {
	st := collector.Status{Status: ingest.Status{Running: true, UptimeS: 3725.4, Workers: 2, ProcessorQueueDrops: map[string]uint64{"kafka": 3},
		Totals: ingest.Totals{PacketsReceived: 1000, BytesReceived: 64000, ReportsDecoded: 990, ReportsByFormat: map[string]uint64{"tr2.0": 990, "dta": 0},
			DecodeErrors: ingest.ByReason{Total: 10, ByReason: map[string]uint64{"truncated": 10}},
			IngestDrops:  ingest.ByReason{Total: 2, ByReason: map[string]uint64{"oversize": 2}}, KernelDrops: 4},
		Rates: ingest.Rates{PacketsPerS: 100.4, BytesPerS: 6400, ReportsPerS: 99, DecodeErrorsPerS: 1, IngestDropsPerS: 0.2, KernelDropsPerS: 0.4},
		Listeners: []ingest.ListenerStatus{
			{Name: "report", Format: "report", Address: "[::]:32766", Port: 32766, Sockets: 2, Spread: "flow", RcvBufRequested: 8 << 20, RcvBufGranted: 425984,
				Totals: ingest.Totals{PacketsReceived: 1000, ReportsDecoded: 990, DecodeErrors: ingest.ByReason{Total: 10}, IngestDrops: ingest.ByReason{Total: 2}, KernelDrops: 4},
				Rates:  ingest.Rates{PacketsPerS: 100.4}},
			{Name: "dta", Format: "dta", Port: 40040, Sockets: 1, RcvBufRequested: 1000, RcvBufGranted: 2048}}},
		Drops: collector.Drops{Total: 12, Sections: map[string]map[string]uint64{"ingest": {"oversize": 2, "kernel": 4}, "processor_queues": {"kafka": 3},
			"flowcache": {"rings": 0}, "zeta": {"x": 1}, "http": {"source": 2}}},
		HTTP: &api.ConnStats{Listening: "127.0.0.1:8040", Open: 3, Max: 1024, MaxPerSource: 64, Evicted: 5}}
	var b strings.Builder
	writeStatus(&b, &st, "127.0.0.1:8040")
	want := `intake at 127.0.0.1:8040: running, up 1h2m5s, 2 workers

                    total  per s
  packets received   1000    100
    bytes received  64000   6400
   reports decoded    990     99
     decode errors     10      1
      ingest drops      2      0
      kernel drops      4      0
reports by format: (tr2.0 990)
decode errors by reason: (truncated 10)
ingest drops by reason: (oversize 2)
processor queue drops: (kafka 3)

LISTENER  FORMAT  ADDRESS     SOCKETS    RCVBUF REQ/GRANTED  PACKETS  REPORTS  ERRORS  DROPS  KERNEL DROPS  PKTS/S
report    report  [::]:32766  2 by flow  8MiB/416KiB         1000     990      10      2      4             100
dta       dta     -:40040     1          1000/2KiB           0        0        0       0      0             0

drops: 12
  ingest: (kernel 4, oversize 2)
  processor queues: (kafka 3)
  http connections: (source 2)
  zeta: (x 1)

http: on 127.0.0.1:8040, 3 connections open (max 1024, 64 per source), 5 idle closed to make room
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestStatusHTTPText: `intake status` prints the API server's connections and its refused
// ones with the drops.
func TestStatusHTTPText(t *testing.T) {
	st := collector.Status{Drops: collector.Drops{Total: 3, Sections: map[string]map[string]uint64{"http": {"total": 1, "source": 2}}},
		HTTP: &api.ConnStats{Listening: "0.0.0.0:8040 (all IPv4 addresses)", Open: 5, Max: 1024, MaxPerSource: 64,
			Refused: map[string]uint64{"total": 1, "source": 2}, Evicted: 7}}
	var b strings.Builder
	writeStatus(&b, &st, "127.0.0.1:8040")
	for _, want := range []string{"\ndrops: 3\n  http connections: (source 2, total 1)\n",
		"\nhttp: on 0.0.0.0:8040 (all IPv4 addresses), 5 connections open (max 1024, 64 per source), 7 idle closed to make room\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestGroupStatusText: `intake status` of a processor prints its partitions with their lag
// and where their state came from, and the group's processors; of an inlet, what it
// produced.
func TestGroupStatusText(t *testing.T) {
	d := grouprole.Described{State: "Stable", Members: []grouprole.Member{{Name: "p1", API: "10.0.0.1:8040", Partitions: []int32{0, 2}},
		{Name: "p2", API: "10.0.0.2:8040", Partitions: []int32{1}}}}
	st := collector.Status{Group: &collector.GroupStatus{Role: "processor", Group: d, Processor: &grouprole.ProcessorStatus{
		GroupID: "intake", Topic: "intake.raw", Member: "p1", Records: 900, Replayed: 12, Rebalances: 3, Commits: 40,
		Snapshots: 8, AdoptedFlows: 5, Lag: 7,
		Partitions: []grouprole.PartitionStatus{{Partition: 0, Next: 500, Records: 400, Lag: 3, StateFrom: "snapshot"}, {Partition: 2, Next: 510, Records: 500, Lag: 4, StateFrom: "topic start"}}}}}
	var b strings.Builder
	writeStatus(&b, &st, "x")
	want := `
group: processor
  member p1 of group intake on intake.raw: 900 records (12 replayed, 0 bad), group lag 7
  3 rebalances, 40 commits (0 failed), 8 snapshots (0 failed), 5 flows adopted
  PARTITION  NEXT  RECORDS  LAG  STATE FROM   
  0          500   400      3    snapshot     
  2          510   500      4    topic start  
  group state Stable, 2 processors:
    p1 (10.0.0.1:8040): partitions [0 2]
    p2 (10.0.0.2:8040): partitions [1]
`
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("got\n%s\nwant the end\n%s", b.String(), want)
	}
	st.Group = &collector.GroupStatus{Role: "inlet", Group: grouprole.Described{State: "Stable", Members: []grouprole.Member{}},
		Inlet: &grouprole.InletStatus{Topic: "intake.raw", Partitions: 12, Offered: 10, Produced: 7, Dropped: 2, Failed: 1, LastError: "timeout"}}
	b.Reset()
	writeStatus(&b, &st, "x")
	if want := "\ngroup: inlet\n  topic intake.raw (12 partitions): 10 reports offered, 7 produced, 2 dropped (buffer full), 1 failed\n  last error: timeout\n  group state Stable, 0 processors:\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("got\n%s\nwant the end\n%s", b.String(), want)
	}
}

// TestDropsText: the text lists every section (kafka included) with what it lost, in
// SectionNames' order (collector's TestDropsJSON: the same drops as JSON).
func TestDropsText(t *testing.T) {
	d := collector.Drops{Total: 6, Sections: map[string]map[string]uint64{
		"zeta": {"x": 1}, "http": {"total": 0}, "kafka": {"flow.queue_full": 2}, "ingest": {"kernel": 0, "oversize": 3}}}
	var s strings.Builder
	writeStatus(&s, &collector.Status{Drops: d}, "x")
	if !strings.Contains(s.String(), "\ndrops: 6\n  ingest: (oversize 3)\n  kafka: (flow.queue_full 2)\n  zeta: (x 1)\n") {
		t.Fatalf("text:\n%s", s.String())
	}
}

// TestSummaryText: the summary serve and demo end with, byte for byte: every family, the
// lines only some runs have (inner errors, queue drops, the XDP program's detection), the
// export sinks, Redis by kind and Kafka by topic with what is pending.
func TestSummaryText(t *testing.T) {
	s := collector.Summary{Rejected: map[string]uint64{"dta redundancy": 2, "dta list_id": 0},
		KernelDetect: &detect.KernelCounts{Reports: 40, RingFull: 1, TableFull: 2, Lifted: map[string]uint64{"truncated": 3, "ipv6": 0}},
		Sinks: []export.SinkStatus{{Name: "influxdb", Sent: 10, Dropped: map[string]uint64{"queue_full": 1, "server": 0}},
			{Name: "influxdb-records", Sent: 5}},
		Redis: &redis.Counts{Sent: map[string]uint64{"flow": 4, "hash": 2}, Dropped: map[string]map[string]uint64{"hash": {"error": 1}}},
		Kafka: &kafka.Counts{Topics: map[string]string{"report": "intake.reports", "event": "intake.events"},
			Offered: map[string]uint64{"report": 9, "event": 3}, Sent: map[string]uint64{"report": 7, "event": 3},
			Dropped: map[string]map[string]uint64{"report": {"queue_full": 2}}, Queued: 1, InFlight: 2}}
	s.Status = ingest.Status{ProcessorQueueDrops: map[string]uint64{"kafka": 2}, Totals: ingest.Totals{PacketsReceived: 100, BytesReceived: 12345,
		ReportsDecoded: 90, ReportsByFormat: map[string]uint64{"tr2.0": 80, "dta": 10},
		DecodeErrors: ingest.ByReason{Total: 4, ByReason: map[string]uint64{"truncated": 4}}, InnerErrors: ingest.ByReason{Total: 1, ByReason: map[string]uint64{"ipv4": 1}},
		IngestDrops: ingest.ByReason{Total: 0, ByReason: map[string]uint64{}}, KernelDrops: 6}}
	var b strings.Builder
	writeSummary(&b, &s)
	want := `  packets received  100 (12345 bytes)
  reports decoded   90 (dta 10, tr2.0 80)
  decode errors     4 (truncated 4)
  inner errors      1 (ipv4 1) (reports kept without their data packet)
  rejected          2 (dta redundancy 2)
  ingest drops      0
  kernel drops      6
  queue drops       2 (kafka 2)
  detected in XDP   40 reports; went up unparsed 3 (truncated 3); lost 1 events (ring full), 2 updates (table full)
  export influxdb   10 sent, 1 dropped (queue_full 1)
  export influxdb-records 5 sent, 0 dropped
  redis flows       4 sent, 0 dropped
  redis hashes      2 sent, 1 dropped (error 1)
  kafka reports     7 sent, 2 dropped (queue_full 2) of 9 offered to intake.reports
  kafka events      3 sent, 0 dropped of 3 offered to intake.events
  kafka pending     1 queued, 2 in flight
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// A run without inner errors, queue drops, the XDP program or sinks: the six lines.
	b.Reset()
	writeSummary(&b, &collector.Summary{})
	if want := "  packets received  0 (0 bytes)\n  reports decoded   0\n  decode errors     0\n  rejected          0\n  ingest drops      0\n  kernel drops      0\n"; b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
