package collector_test

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
)

// flowCacheCluster starts three members with the flow cache alone (small, as
// collectortest.StartFlowCache's).
func flowCacheCluster(t *testing.T, mod func(i int, cfg *config.Config)) []*collector.Collector {
	return collectortest.StartCluster(t, 3, func(i int, cfg *config.Config) {
		cfg.Detect.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = false, false, false
		cfg.FlowCache.Rows, cfg.FlowCache.Buckets = 16, 4
		if mod != nil {
			mod(i, cfg)
		}
	})
}

// memberReport is a report of flow src:sport > 10.0.9.9:dport udp at time t over hops
// (switch, hop latency, queue occupancy, tx utilization), source first.
func memberReport(src string, sport, dport uint16, t int64, hops ...collectortest.FlowHop) *telemetry.Report {
	r := collectortest.FlowReport(sport, t, hops...)
	r.Flow.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr("10.0.9.9"))
	r.Flow.DstPort = dport
	return r
}

// TestClusterTopFilter: the filters of GET /api/v1/flowcache/top reach every member, which
// filters before its limit, and the merged answer is the single collector's: the n best of
// the matching flows of all members.
func TestClusterTopFilter(t *testing.T) {
	cs := flowCacheCluster(t, nil)
	// m0: 10.0.0.1:1 (3 packets, over 1 > 2), m1: 10.0.1.1:2 (2, over 1 > 3) and
	// 192.168.0.1:3 (5, over 4 > 3, dport 443), m2: 10.0.2.1:4 (1, over 2).
	feed := []struct {
		m     int
		src   string
		sport uint16
		dport uint16
		n     int
		hops  []collectortest.FlowHop
	}{
		{0, "10.0.0.1", 1, 80, 3, []collectortest.FlowHop{{1, 10, 0, 0}, {2, 10, 0, 0}}},
		{1, "10.0.1.1", 2, 80, 2, []collectortest.FlowHop{{1, 10, 0, 0}, {3, 10, 0, 0}}},
		{1, "192.168.0.1", 3, 443, 5, []collectortest.FlowHop{{4, 10, 0, 0}, {3, 10, 0, 0}}},
		{2, "10.0.2.1", 4, 80, 1, []collectortest.FlowHop{{2, 10, 0, 0}}},
	}
	for _, f := range feed {
		for i := range f.n {
			cs[f.m].FlowCache.Process(0, memberReport(f.src, f.sport, f.dport, int64(1000+i), f.hops...))
		}
		cs[f.m].FlowCache.Flush(0)
	}
	for q, want := range map[string][]string{
		"":                       {"m1:3", "m0:1", "m1:2", "m2:4"},
		"n=2":                    {"m1:3", "m0:1"},
		"switch=3":               {"m1:3", "m1:2"},
		"switch=1&n=1":           {"m0:1"},
		"switch=2":               {"m0:1", "m2:4"},
		"prefix=10.0.0.0/23":     {"m0:1", "m1:2"},
		"prefix=10.0.9.9":        {"m1:3", "m0:1", "m1:2", "m2:4"},
		"port=443":               {"m1:3"},
		"port=80&switch=3":       {"m1:2"},
		"prefix=10.0.2.0/24&n=1": {"m2:4"},
	} {
		for _, c := range cs { // any member answers the same
			code, body := get(t, c.API.Addr(), "/api/v1/flowcache/top?"+q)
			var v struct {
				Flows []struct {
					Sport  uint16 `json:"sport"`
					Member string `json:"member"`
				} `json:"flows"`
				Partial bool `json:"partial"`
			}
			json.Unmarshal([]byte(body), &v)
			got := []string{}
			for _, f := range v.Flows {
				got = append(got, f.Member+":"+string(rune('0'+f.Sport)))
			}
			if code != 200 || v.Partial || !reflect.DeepEqual(got, want) {
				t.Errorf("%s via %s: %d %v, want %v\n%s", q, c.Config.Cluster.Self, code, got, want, body)
			}
		}
	}
}
