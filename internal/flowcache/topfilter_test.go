package flowcache

import (
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"testing"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/telemetry"
)

// filterFixture is a cache of five flows (packets: sport 1 → 5, 2 → 4, 3 → 3, 4 → 2, 5 → 1):
//
//	sport 1  10.0.0.1 > 10.0.0.2:80 udp   over 1 > 2
//	sport 2  10.0.0.1 > 10.0.0.2:80 udp   over 1 > 3
//	sport 3  192.168.1.5 > 10.0.0.2:443 tcp over 4 > 3
//	sport 4  [2001:db8::1] > [2001:db8:1::2]:80 udp over 5
//	sport 5  10.0.0.1 > 10.0.0.2:80 udp   over 2
func filterFixture() *FlowCache {
	f := New(small(16, 4), Deps{})
	v4 := func(src string, sport, dport uint16, proto uint8) telemetry.FlowKey {
		var k telemetry.FlowKey
		k.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr("10.0.0.2"))
		k.SrcPort, k.DstPort, k.Proto = sport, dport, proto
		return k
	}
	var k6 telemetry.FlowKey
	k6.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:1::2"))
	k6.SrcPort, k6.DstPort, k6.Proto = 4, 80, 17
	for _, x := range []struct {
		k    telemetry.FlowKey
		n    int
		hops []hop
	}{
		{flow(1), 5, []hop{{1, 10, 0, 0}, {2, 10, 0, 0}}},
		{flow(2), 4, []hop{{1, 10, 0, 0}, {3, 10, 0, 0}}},
		{v4("192.168.1.5", 3, 443, 6), 3, []hop{{4, 10, 0, 0}, {3, 10, 0, 0}}},
		{k6, 2, []hop{{5, 10, 0, 0}}},
		{flow(5), 1, []hop{{2, 10, 0, 0}}},
	} {
		for i := range x.n {
			f.Process(0, report(x.k, int64(100+i), x.hops...))
		}
	}
	return f
}

// TestTopFilter: switch, prefix and port select flows before the limit, combined; the
// answers are exact.
func TestTopFilter(t *testing.T) {
	f := filterFixture()
	srv := api.New("127.0.0.1:0", nil)
	f.RegisterAPI(srv)
	top := func(q string) (int, []uint16, string) {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/v1/flowcache/top?"+q, nil))
		var body struct {
			Flows []FlowJSON `json:"flows"`
		}
		json.Unmarshal(rec.Body.Bytes(), &body)
		ps := []uint16{}
		for _, fl := range body.Flows {
			ps = append(ps, fl.Sport)
		}
		return rec.Code, ps, rec.Body.String()
	}
	for q, want := range map[string][]uint16{
		"":                      {1, 2, 3, 4, 5},
		"n=2":                   {1, 2},
		"switch=3":              {2, 3},
		"switch=3&n=1":          {2}, // filtered before the limit
		"switch=2":              {1, 5},
		"switch=9":              {},
		"prefix=192.168.0.0/16": {3},
		"prefix=10.0.0.2/32":    {1, 2, 3, 5}, // the destination
		"prefix=10.0.0.2":       {1, 2, 3, 5},
		"prefix=" + url.QueryEscape("::ffff:192.168.1.0/120"): {3},
		"prefix=2001:db8:1::/48":                              {4},
		"prefix=2001:db8::/32":                                {4},
		"prefix=0.0.0.0/0":                                    {1, 2, 3, 5}, // an IPv4 prefix: IPv4 flows
		"port=443":                                            {3},
		"port=80":                                             {1, 2, 4, 5},
		"port=4":                                              {4}, // a source port
		"switch=1&port=80":                                    {1, 2},
		"switch=3&prefix=192.168.1.5&port=3":                  {3},
		"switch=3&prefix=192.168.1.5&port=80":                 {},
		"by=latency&switch=1&n=1":                             {1}, // equal latency: most recent first
	} {
		code, got, body := top(q)
		if code != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d %v, want %v\n%s", q, code, got, want, body)
		}
	}
	for q, want := range map[string]string{
		"switch=x":           `{"error":"parameter switch: \"x\": must be a switch id 0-4294967295","param":"switch","value":"x"}`,
		"prefix=10.0.0.0/33": `{"error":"parameter prefix: \"10.0.0.0/33\": must be an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2001:db8::/32, or an address","param":"prefix","value":"10.0.0.0/33"}`,
		"port=65536":         `{"error":"parameter port: \"65536\": must be an integer 0-65535","param":"port","value":"65536"}`,
		"sport=1":            `{"error":"unknown parameter sport (allowed: by, n, switch, prefix, port)","param":"sport","value":"1"}`,
	} {
		code, _, body := top(q)
		var v any
		json.Unmarshal([]byte(body), &v)
		got, _ := json.Marshal(v)
		if code != 400 || string(got) != want {
			t.Errorf("%s: %d %s, want 400 %s", q, code, got, want)
		}
	}
}

// TestTopFilterAllocs: the walk allocates nothing per flow, filtered or not: only a flow
// that enters the n best is decoded (a few times over 400 flows in row order).
func TestTopFilterAllocs(t *testing.T) {
	f := New(small(64, 8), Deps{})
	for i := range 400 {
		f.Process(0, report(flow(uint16(i)), int64(i), hop{uint32(i % 7), 10, 0, 0}, hop{9, 10, 0, 0}))
	}
	for _, w := range []TopFilter{{}, {Switch: 3, HasSwitch: true}, {Port: 80, HasPort: true},
		{Prefix: netip.MustParsePrefix("10.0.0.0/8")}} {
		// 400 flows: an allocation per flow would show as hundreds.
		if n := testing.AllocsPerRun(20, func() { f.TopWhere("packets", 1, w) }); n > 40 {
			t.Errorf("%+v: %v allocs per TopWhere over 400 flows", w, n)
		}
	}
}
