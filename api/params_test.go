package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/telemetry"
)

// TestParseFlowQuery: the one flow notation in flow=, and the five parameters with proto a
// name or a number, read to exact keys; a bad flow is a 400 naming the parameter.
func TestParseFlowQuery(t *testing.T) {
	key := func(src, dst string, sp, dp uint16, p uint8) telemetry.FlowKey {
		var k telemetry.FlowKey
		k.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr(dst))
		k.SrcPort, k.DstPort, k.Proto = sp, dp, p
		return k
	}
	udp := key("10.0.0.1", "10.0.0.2", 1000, 80, 17)
	for q, want := range map[string]telemetry.FlowKey{
		"src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=17":          udp,
		"src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=udp":         udp,
		"src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=UDP":         udp,
		"src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=tcp":         key("10.0.0.1", "10.0.0.2", 1000, 80, 6),
		"src=2001:db8::1&dst=2001:db8::2&sport=1&dport=2&proto=icmpv6":    key("2001:db8::1", "2001:db8::2", 1, 2, 58),
		"src=10.0.0.1&dst=10.0.0.2&sport=1&dport=2&proto=sctp":            key("10.0.0.1", "10.0.0.2", 1, 2, 132),
		"flow=" + url.QueryEscape("10.0.0.1:1000 > 10.0.0.2:80 udp"):      udp,
		"flow=" + url.QueryEscape("10.0.0.1:1000 -> 10.0.0.2:80 17"):      udp,
		"flow=" + url.QueryEscape("10.0.0.1:1000 → 10.0.0.2:80 UDP"):      udp,
		"flow=" + url.QueryEscape("10.0.0.1,10.0.0.2,1000,80,udp"):        udp,
		"flow=" + url.QueryEscape("[2001:db8::1]:1→[2001:db8::2]:2 icmp"): key("2001:db8::1", "2001:db8::2", 1, 2, 1),
	} {
		v, _ := url.ParseQuery(q)
		k, err := api.ParseFlowQuery(v)
		if err != nil || k != want {
			t.Errorf("%s: %s %v, want %s", q, k.String(), err, want.String())
		}
	}
	for q, want := range map[string]api.ErrorBody{
		"src=10.0.0.1&dst=10.0.0.2&sport=1&dport=2&proto=NaN": {Param: "proto", Value: "NaN",
			Error: `parameter proto: "NaN": must be tcp, udp, icmp, icmpv6, sctp or a number 0-255 (any case)`},
		"src=10.0.0.1&dst=10.0.0.2&sport=1&dport=2&proto=256": {Param: "proto", Value: "256",
			Error: `parameter proto: "256": must be tcp, udp, icmp, icmpv6, sctp or a number 0-255 (any case)`},
		"src=10.0.0.1&dst=10.0.0.2&sport=1&dport=2": {Param: "proto",
			Error: `parameter proto: "": must be tcp, udp, icmp, icmpv6, sctp or a number 0-255 (any case)`},
		"dst=10.0.0.2&sport=1&dport=2&proto=udp": {Param: "src",
			Error: `parameter src: "": must be an IPv4 or IPv6 address`},
		"src=10.0.0.1&dst=10.0.0.2&sport=x&dport=2&proto=udp": {Param: "sport", Value: "x",
			Error: `parameter sport: "x": must be an integer 0-65535`},
		"src=10.0.0.1&dst=10.0.0.2&sport=1&dport=65536&proto=udp": {Param: "dport", Value: "65536",
			Error: `parameter dport: "65536": must be an integer 0-65535`},
		"src=10.0.0.1&dst=2001:db8::2&sport=1&dport=2&proto=udp": {Param: "src", Value: "10.0.0.1,2001:db8::2",
			Error: `parameter src: "10.0.0.1,2001:db8::2": must be IPv4 or IPv6 addresses of one family for src and dst`},
		"flow=" + url.QueryEscape("10.0.0.1:1 > 10.0.0.2:2 gre"): {Param: "flow", Value: "10.0.0.1:1 > 10.0.0.2:2 gre",
			Error: `parameter flow: "10.0.0.1:1 > 10.0.0.2:2 gre": must be ` + api.AllowedFlow},
		"flow=10.0.0.1&proto=udp": {Param: "flow", Value: "10.0.0.1",
			Error: `parameter flow: "10.0.0.1": must be given alone, without src, dst, sport, dport, proto`},
	} {
		v, _ := url.ParseQuery(q)
		w := httptest.NewRecorder()
		_, ok := api.FlowParams(w, httptest.NewRequest(http.MethodGet, "/?"+v.Encode(), nil))
		var got api.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &got); ok || err != nil || w.Code != http.StatusBadRequest || got != want {
			t.Errorf("%s: %v %d %+v %v, want 400 %+v", q, ok, w.Code, got, err, want)
		}
	}
	if want := `a flow "SRC:SPORT > DST:DPORT PROTO" (">", "->" or "→"; PROTO tcp, udp, icmp, icmpv6, sctp or 0-255) or src,dst,sport,dport,proto`; api.AllowedFlow != want {
		t.Errorf("AllowedFlow %q", api.AllowedFlow)
	}
}
