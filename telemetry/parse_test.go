package telemetry

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestParseFlowKey(t *testing.T) {
	v4 := func(src, dst string, sp, dp uint16, p uint8) FlowKey {
		var k FlowKey
		k.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr(dst))
		k.SrcPort, k.DstPort, k.Proto = sp, dp, p
		return k
	}
	for _, c := range []struct {
		in   string
		want FlowKey
	}{
		{"10.0.0.1:1000 > 172.16.0.1:5201 udp", v4("10.0.0.1", "172.16.0.1", 1000, 5201, 17)},
		{"10.0.0.1:1000>172.16.0.1:5201 tcp", v4("10.0.0.1", "172.16.0.1", 1000, 5201, 6)},
		{"10.0.0.1:1 > 10.0.0.2:2 proto 47", v4("10.0.0.1", "10.0.0.2", 1, 2, 47)},
		{"10.0.0.1:1 > 10.0.0.2:2 132", v4("10.0.0.1", "10.0.0.2", 1, 2, 132)},
		{"[2001:db8::1]:1000 > [2001:db8::2]:80 UDP", v4("2001:db8::1", "2001:db8::2", 1000, 80, 17)},
		{"10.0.0.1,10.0.0.2,1,2,6", v4("10.0.0.1", "10.0.0.2", 1, 2, 6)},
		{"10.0.0.1, 10.0.0.2, 1, 2, udp", v4("10.0.0.1", "10.0.0.2", 1, 2, 17)},
		{"::ffff:10.0.0.1,10.0.0.2,1,2,17", v4("10.0.0.1", "10.0.0.2", 1, 2, 17)},
		// One notation: ">", "->" and the console's "→"; names and numbers in any case.
		{"10.0.0.1:1 -> 10.0.0.2:2 udp", v4("10.0.0.1", "10.0.0.2", 1, 2, 17)},
		{"10.0.0.1:1->10.0.0.2:2 TCP", v4("10.0.0.1", "10.0.0.2", 1, 2, 6)},
		{"10.0.0.1:1 → 10.0.0.2:2 icmp", v4("10.0.0.1", "10.0.0.2", 1, 2, 1)},
		{"[2001:db8::1]:1→[2001:db8::2]:2 ICMPv6", v4("2001:db8::1", "2001:db8::2", 1, 2, 58)},
		{"10.0.0.1:1 > 10.0.0.2:2 Sctp", v4("10.0.0.1", "10.0.0.2", 1, 2, 132)},
		{"10.0.0.1:1 > 10.0.0.2:2 PROTO 47", v4("10.0.0.1", "10.0.0.2", 1, 2, 47)},
		{"10.0.0.1:1 → 10.0.0.2:2 17", v4("10.0.0.1", "10.0.0.2", 1, 2, 17)},
	} {
		k, err := ParseFlowKey(c.in)
		if err != nil || k != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, k.String(), err, c.want.String())
		}
		// What String writes reads back the same.
		if k2, err := ParseFlowKey(k.String()); err != nil || k2 != k {
			t.Errorf("%q: String %q reads back as %v %v", c.in, k.String(), k2.String(), err)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.1:1000 > 172.16.0.1:5201":          errFlow.Error(),
		"10.0.0.1:1 >> 10.0.0.2:2 udp":             errFlow.Error(),
		"10.0.0.1:1 → 10.0.0.2:2 → 10.0.0.3:3 udp": errFlow.Error(),
		"10.0.0.1:1 → 10.0.0.2:2 NaN":              `protocol "NaN": want tcp, udp, icmp, icmpv6, sctp or a number 0-255`,
		"10.0.0.1 > 172.16.0.1 udp":                errFlow.Error(),
		"10.0.0.1:1 > [2001:db8::2]:80 udp":        errFlow.Error(),
		"10.0.0.1,10.0.0.2,1,70000,6":              errFlow.Error(),
		"10.0.0.1,10.0.0.2,1,2":                    errFlow.Error(),
		"10.0.0.1:1 > 10.0.0.2:2 gre":              `protocol "gre": want tcp, udp, icmp, icmpv6, sctp or a number 0-255`,
		"10.0.0.1,10.0.0.2,1,2,256":                `protocol "256": want tcp, udp, icmp, icmpv6, sctp or a number 0-255`,
		"[fe80::1%eth0]:1 > [fe80::2%eth0]:2 udp":  errFlow.Error(),
	} {
		if _, err := ParseFlowKey(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
}

// TestProtoNames: the flow notation's protocol names, written and read back, as the console
// writes them (protoNames in internal/console/assets/console.js).
func TestProtoNames(t *testing.T) {
	for p, want := range map[uint8]string{1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp", 0: "proto 0", 47: "proto 47", 255: "proto 255"} {
		if got := ProtoName(p); got != want {
			t.Errorf("ProtoName(%d) = %q, want %q", p, got, want)
		}
		if got, err := ParseProto(want); err != nil || got != p {
			t.Errorf("ParseProto(%q) = %d, %v, want %d", want, got, err, p)
		}
	}
	for in, want := range map[string]uint8{"UDP": 17, " tcp ": 6, "IcMp": 1, "ICMPV6": 58, "17": 17, "Proto 6": 6} {
		if got, err := ParseProto(in); err != nil || got != want {
			t.Errorf("ParseProto(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "gre", "256", "-1", "NaN", "udp6"} {
		want := fmt.Sprintf("protocol %q: want tcp, udp, icmp, icmpv6, sctp or a number 0-255", in)
		if _, err := ParseProto(in); err == nil || err.Error() != want {
			t.Errorf("ParseProto(%q): %v, want %s", in, err, want)
		}
	}
}

func FuzzParseFlowKey(f *testing.F) {
	for _, s := range []string{"10.0.0.1:1000 > 172.16.0.1:5201 udp", "[2001:db8::1]:1 > [2001:db8::2]:2 proto 47",
		"10.0.0.1,10.0.0.2,1,2,6", "a>b c", ",,,,", "10.0.0.1:1 → 10.0.0.2:2 icmp", "[::1]:1->[::2]:2 SCTP", "1.2.3.4:5>6.7.8.9:10 proto proto 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseFlowKey(s)
		if err != nil {
			return
		}
		if k2, err := ParseFlowKey(k.String()); err != nil || k2 != k {
			t.Fatalf("%q: %q reads back as %q, %v", s, k.String(), k2.String(), err)
		}
	})
}
