package collector_test

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
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

// canonical decodes a JSON answer and drops the merge's own keys (partial, missing),
// encoded again with sorted keys.
func canonical(t *testing.T, body string, drop ...string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, k := range append(drop, "partial", "missing") {
		delete(v, k)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestClusterTopology: GET /api/v1/topology through any member is the union of the
// members' topologies, exactly what one collector with all their flows answers: three
// members, each with a part of the paths.
func TestClusterTopology(t *testing.T) {
	cs := flowCacheCluster(t, nil)
	one, oneAddr := collectortest.StartFlowCache(t, func(cfg *config.Config) { cfg.History.Enabled = false })
	type fl struct {
		m     int
		sport uint16
		hops  []collectortest.FlowHop
	}
	for _, f := range []fl{
		{0, 1, []collectortest.FlowHop{{1, 100, 1, 10}, {2, 200, 2, 20}, {3, 300, 3, 30}}},
		{1, 2, []collectortest.FlowHop{{4, 400, 4, 40}, {2, 220, 6, 60}, {3, 330, 9, 90}}},
		{2, 3, []collectortest.FlowHop{{2, 260, 5, 50}, {5, 500, 5, 50}}},
		{2, 4, []collectortest.FlowHop{{3, 30, 1, 1}}},
	} {
		for _, c := range []*collector.Collector{cs[f.m], one} {
			c.FlowCache.Process(0, collectortest.FlowReport(f.sport, 1000, f.hops...))
			c.FlowCache.Flush(0)
		}
	}
	_, want := get(t, oneAddr, "/api/v1/topology")
	for _, c := range cs {
		code, got := get(t, c.API.Addr(), "/api/v1/topology")
		if code != 200 || canonical(t, got) != canonical(t, want) {
			t.Errorf("via %s: %d\n%s\nwant (one collector)\n%s", c.Config.Cluster.Self, code, canonical(t, got), canonical(t, want))
		}
	}
	// Switch 2, spelt out: three flows (one per member), one of which starts there.
	var topo struct {
		Flows    int `json:"flows"`
		Switches []struct {
			ID     uint32         `json:"id"`
			Flows  int            `json:"flows"`
			Depth  int            `json:"depth"`
			First  int            `json:"first"`
			Latest map[string]any `json:"latest"`
		} `json:"switches"`
		Links []struct {
			From, To uint32
			Flows    int `json:"flows"`
		} `json:"links"`
	}
	_, body := get(t, cs[1].API.Addr(), "/api/v1/topology")
	json.Unmarshal([]byte(body), &topo)
	s2 := topo.Switches[1]
	if topo.Flows != 4 || len(topo.Switches) != 5 || len(topo.Links) != 4 || s2.ID != 2 || s2.Flows != 3 || s2.Depth != 0 || s2.First != 1 ||
		!reflect.DeepEqual(s2.Latest["hop_latency"], map[string]any{"mean": 680.0 / 3, "max": 260.0, "n": 3.0}) {
		t.Errorf("merged topology: %s", body)
	}
	// limit applies to the union.
	_, body = get(t, cs[0].API.Addr(), "/api/v1/topology?limit=2")
	json.Unmarshal([]byte(body), &topo)
	if len(topo.Switches) != 2 || topo.Switches[1].ID != 2 || len(topo.Links) != 2 || !strings.Contains(body, `"truncated": true`) {
		t.Errorf("limit=2: %s", body)
	}
}

// TestClusterHistory: GET /api/v1/history through any member merges the members' points,
// switches by id and flows by 5-tuple: what one collector with all their flows answers.
func TestClusterHistory(t *testing.T) {
	mod := func(cfg *config.Config) {
		historyConfig(cfg)
		cfg.Detect.Enabled = false
	}
	cs := flowCacheCluster(t, func(_ int, cfg *config.Config) { mod(cfg) })
	one := collectortest.Start(t, mod)
	all := append([]*collector.Collector{one}, cs...)
	hc := newHistoryClock()
	feed := func(m int, rs ...*telemetry.Report) {
		for _, c := range []*collector.Collector{cs[m], one} {
			hc.feed(c, rs...)
		}
	}
	hc.next(all...)
	// Switch 2 is on the paths of flows of every member; flow 1000's and 2000's members
	// differ.
	feed(0, collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 10, 1, 1}, collectortest.FlowHop{2, 20, 2, 2}),
		collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 30, 1, 1}, collectortest.FlowHop{2, 40, 2, 2}))
	feed(1, collectortest.FlowReport(2000, 0, collectortest.FlowHop{2, 100, 7, 3}))
	feed(2, collectortest.FlowReport(3000, 0, collectortest.FlowHop{3, 5, 0, 0}, collectortest.FlowHop{2, 61, 3, 9}))
	ta := hc.next(all...)
	feed(1, collectortest.FlowReport(2000, 0, collectortest.FlowHop{2, 300, 1, 1}))
	feed(0, collectortest.FlowReport(1000, 0, collectortest.FlowHop{1, 30, 1, 1}, collectortest.FlowHop{2, 40, 2, 2}))
	tb := hc.next(all...)
	q := "/api/v1/history?from=0&to=" + strconv.FormatInt(tb, 10)
	_, want := get(t, one.API.Addr(), q)
	if !strings.Contains(want, `"t_ns": `+strconv.FormatInt(ta, 10)) || !strings.Contains(want, `"hop_latency_mean_ns": 67`) {
		t.Fatalf("one collector's history lacks period %d's points:\n%s", ta, want)
	}
	// flows=1: each member keeps its one, the merge the one with the most reports.
	for _, q := range []string{q, q + "&flows=1"} {
		_, want := get(t, one.API.Addr(), q)
		for _, c := range cs {
			code, got := get(t, c.API.Addr(), q)
			if code != 200 || canonical(t, got, "to_ns") != canonical(t, want, "to_ns") {
				t.Errorf("%s via %s: %d\n%s\nwant (one collector)\n%s", q, c.Config.Cluster.Self, code, canonical(t, got), canonical(t, want))
			}
		}
	}
}
