package main

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// The query verbs of the flow cache read the endpoints internal/collector/flowcache_test.go checks,
// and print them as text.
func TestQueryFlowCache(t *testing.T) {
	p, addr := collectortest.StartFlowCache(t, nil)
	collectortest.FlowCacheFixture(p)

	c, out, errs := runVerb("query", "flowcache-flow", "--api", addr, "--src", "10.0.0.1", "--dst", "10.0.0.2", "--sport", "1000", "--dport", "80", "--proto", "17")
	wantOut := `flow     10.0.0.1:1000 > 10.0.0.2:80 udp
path     1 > 2 (2 hops, source first)
latency  36 ns end to end, latest; mean 33 ns
packets  2, first seen 1970-01-01T00:00:00.0000001Z, last seen 1970-01-01T00:00:00.0000002Z
HOP  SWITCH  HOP LATENCY latest  mean     QUEUE OCCUPANCY latest  mean  TX UTILIZATION latest  mean
1    1       11 ns               10.5 ns  6                       5.5   7                      7.0
2    2       25 ns               22.5 ns  3                       1.5   9                      8.5
latest: the newest value this flow's reports carried; mean: over its reports since first seen
`
	if c != 0 || out != wantOut {
		t.Errorf("query flowcache-flow: exit %d %s\n%s", c, errs, out)
	}
	c, out, errs = runVerb("query", "top", "--api", addr, "--by", "packets", "--n", "2")
	wantTop := `#  FLOW                             PACKETS  LATENCY MEAN  LATENCY LATEST  PATH
1  10.0.0.1:1000 > 10.0.0.2:80 udp  2        33 ns         36 ns           1 > 2
2  10.0.0.1:2000 > 10.0.0.2:80 udp  1        90 ns         90 ns           1 > 3
`
	if c != 0 || out != wantTop {
		t.Errorf("query top: exit %d %s\n%q", c, errs, out)
	}
	c, out, errs = runVerb("query", "histogram", "--api", addr, "--switch", "1")
	// Latency bins with their unit (issue 31: raw ns before).
	wantHist := "switch 1 hop_latency: 3 samples, linear scale, 4 bins\n" +
		"  [10 ns, 20 ns)  2   ########################################\n" +
		"        >= 30 ns  1                       ####################\n"
	if c != 0 || out != wantHist {
		t.Errorf("query histogram: exit %d %s\n%q", c, errs, out)
	}
	// One metric name, tx_utilization; tx_util still works and warns (issue 31).
	wantUtil := "switch 1 tx_utilization: 3 samples, linear scale, 4 bins\n" +
		"  [1, 2)  1                       ####################\n" +
		"    >= 3  2   ########################################\n"
	c, out, errs = runVerb("query", "histogram", "--api", addr, "--switch", "1", "--metric", "tx_utilization")
	if c != 0 || out != wantUtil || errs != "" {
		t.Errorf("query histogram --metric tx_utilization: exit %d %q\n%q", c, errs, out)
	}
	c, out, errs = runVerb("query", "histogram", "--api", addr, "--switch", "1", "--metric", "tx_util")
	if c != 0 || out != wantUtil || errs != "intake: --metric tx_util is deprecated: use tx_utilization, which means the same\n" {
		t.Errorf("query histogram --metric tx_util: exit %d %q\n%q", c, errs, out)
	}
	c, out, errs = runVerb("query", "flowcache-stats", "--api", addr)
	if c != 0 || !strings.HasPrefix(out, "flow cache  16 rows × 4 buckets × 5 hops: 2 of 64 flows (3.12%), ") ||
		!strings.Contains(out, "evictions   collision 0, idle 0\n") || !strings.Contains(out, "rings       4 × 4096: 0 records, 0 exported, 0 pending, 0 dropped\n") {
		t.Errorf("query flowcache-stats: exit %d %s\n%s", c, errs, out)
	}
	c, _, errs = runVerb("query", "histogram", "--api", addr, "--switch", "9")
	if c != 1 || !strings.Contains(errs, "404 Not Found: no histogram for switch 9") {
		t.Errorf("query histogram of an unknown switch: exit %d %q", c, errs)
	}
	c, _, errs = runVerb("query", "top", "--by", "jitter")
	if c != 2 || !strings.Contains(errs, `--by "jitter": must be latency or packets`) {
		t.Errorf("query top --by jitter: exit %d %q", c, errs)
	}
}
