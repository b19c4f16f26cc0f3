package telemetry

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// protoNames are the IP protocols written by name in the flow notation (ProtoName) and read
// by name (ParseProto): those the console names too (protoNames in console.js).
var protoNames = [...]struct {
	n    uint8
	name string
}{{1, "icmp"}, {6, "tcp"}, {17, "udp"}, {58, "icmpv6"}, {132, "sctp"}}

// errProto is what a protocol looks like, for ParseProto's errors.
const errProto = "want tcp, udp, icmp, icmpv6, sctp or a number 0-255"

// ParseProto reads an IP protocol as people write it: tcp, udp, icmp, icmpv6 or sctp
// (any case), "proto N" as ProtoName writes the others, or a number 0-255.
func ParseProto(s string) (uint8, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, p := range protoNames {
		if t == p.name {
			return p.n, nil
		}
	}
	n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(t, "proto")), 10, 8)
	if err != nil {
		return 0, fmt.Errorf("protocol %q: %s", s, errProto)
	}
	return uint8(n), nil
}

// ProtoName names an IP protocol as the flow notation writes it: icmp, tcp, udp, icmpv6 or
// sctp, otherwise "proto N"; ParseProto reads names and numbers back.
func ProtoName(p uint8) string {
	for _, q := range protoNames {
		if p == q.n {
			return q.name
		}
	}
	return "proto " + strconv.Itoa(int(p))
}

// FlowString writes a flow whose addresses are text, as the API's JSON has them, the way
// FlowKey.String writes a FlowKey and every verb writes flows: "10.0.0.1:1000 > 172.16.0.1:80
// udp" (IPv6 addresses in brackets).
func FlowString(src string, sport uint16, dst string, dport uint16, proto uint8) string {
	return hostPort(src, sport) + " > " + hostPort(dst, dport) + " " + ProtoName(proto)
}

// hostPort joins a host and a port as net.JoinHostPort does (brackets around a host with a
// colon: an IPv6 address).
func hostPort(host string, port uint16) string {
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// errFlow is what a 5-tuple looks like, for the errors of ParseFlowKey.
var errFlow = errors.New(`a 5-tuple is "SRC:SPORT > DST:DPORT PROTO" or src,dst,sport,dport,proto, with addresses of one family`)

// ParseFlowKey reads a 5-tuple in intake's one flow notation, as FlowKey.String writes it
// ("10.0.0.1:1000 > 10.0.0.2:80 udp", "[2001:db8::1]:1000 > [2001:db8::2]:80 tcp"; spaces
// around the arrow optional), with ">", "->" or "→" (the console's) between the ends, or as
// src,dst,sport,dport,proto. The protocol is a name or a number, in any case (ParseProto).
func ParseFlowKey(s string) (FlowKey, error) {
	var k FlowKey
	// Neither an address nor a port has '-' or '→' in it: the arrows are one.
	s = strings.ReplaceAll(strings.ReplaceAll(s, "→", ">"), "->", ">")
	var src, dst netip.Addr
	var sport, dport uint16
	var proto string
	if a, b, ok := strings.Cut(s, ">"); ok {
		b = strings.TrimSpace(b)
		i := strings.LastIndexByte(b, ' ')
		if i < 0 {
			return k, errFlow
		}
		// "proto N": the protocol is the last two words.
		if j := strings.LastIndexByte(strings.TrimSpace(b[:i]), ' '); j >= 0 && strings.EqualFold(strings.TrimSpace(b[j:i]), "proto") {
			i = j
		}
		sp, err1 := netip.ParseAddrPort(strings.TrimSpace(a))
		dp, err2 := netip.ParseAddrPort(strings.TrimSpace(b[:i]))
		if err1 != nil || err2 != nil {
			return k, errFlow
		}
		src, dst, sport, dport, proto = sp.Addr(), dp.Addr(), sp.Port(), dp.Port(), b[i+1:]
	} else {
		f := strings.Split(s, ",")
		if len(f) != 5 {
			return k, errFlow
		}
		var err [4]error
		src, err[0] = netip.ParseAddr(strings.TrimSpace(f[0]))
		dst, err[1] = netip.ParseAddr(strings.TrimSpace(f[1]))
		var sp, dp uint64
		sp, err[2] = strconv.ParseUint(strings.TrimSpace(f[2]), 10, 16)
		dp, err[3] = strconv.ParseUint(strings.TrimSpace(f[3]), 10, 16)
		if errors.Join(err[:]...) != nil {
			return k, errFlow
		}
		sport, dport, proto = uint16(sp), uint16(dp), f[4]
	}
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() != dst.Is4() || src.Zone() != "" || dst.Zone() != "" {
		return k, errFlow
	}
	p, err := ParseProto(proto)
	if err != nil {
		return k, err
	}
	k.SetAddrs(src, dst)
	k.SrcPort, k.DstPort, k.Proto = sport, dport, p
	return k, nil
}
