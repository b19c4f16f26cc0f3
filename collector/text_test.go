package collector

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/ingest"
)

// TestStatusText: `intake status`' text, byte for byte: the counters and their rates, the
// breakdowns, the listeners (one stopped, one spread by flow with receive buffers in KiB and
// MiB), the drops by section and the API server's connections.
func TestStatusText(t *testing.T) {
	st := Status{Status: ingest.Status{Running: true, UptimeS: 3725.4, Workers: 2, ProcessorQueueDrops: map[string]uint64{"kafka": 3},
		Totals: ingest.Totals{PacketsReceived: 1000, BytesReceived: 64000, ReportsDecoded: 990, ReportsByFormat: map[string]uint64{"tr2.0": 990, "dta": 0},
			DecodeErrors: ingest.ByReason{Total: 10, ByReason: map[string]uint64{"truncated": 10}},
			IngestDrops:  ingest.ByReason{Total: 2, ByReason: map[string]uint64{"oversize": 2}}, KernelDrops: 4},
		Rates: ingest.Rates{PacketsPerS: 100.4, BytesPerS: 6400, ReportsPerS: 99, DecodeErrorsPerS: 1, IngestDropsPerS: 0.2, KernelDropsPerS: 0.4},
		Listeners: []ingest.ListenerStatus{
			{Name: "report", Format: "report", Address: "[::]:32766", Port: 32766, Sockets: 2, Spread: "flow", RcvBufRequested: 8 << 20, RcvBufGranted: 425984,
				Totals: ingest.Totals{PacketsReceived: 1000, ReportsDecoded: 990, DecodeErrors: ingest.ByReason{Total: 10}, IngestDrops: ingest.ByReason{Total: 2}, KernelDrops: 4},
				Rates:  ingest.Rates{PacketsPerS: 100.4}},
			{Name: "dta", Format: "dta", Port: 40040, Sockets: 1, RcvBufRequested: 1000, RcvBufGranted: 2048}}},
		Drops: Drops{Total: 12, Sections: map[string]map[string]uint64{"ingest": {"oversize": 2, "kernel": 4}, "processor_queues": {"kafka": 3},
			"flowcache": {"rings": 0}, "zeta": {"x": 1}, "http": {"source": 2}}},
		HTTP: &api.ConnStats{Listening: "127.0.0.1:8040", Open: 3, Max: 1024, MaxPerSource: 64, Evicted: 5}}
	var b strings.Builder
	st.WriteText(&b, "127.0.0.1:8040")
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
