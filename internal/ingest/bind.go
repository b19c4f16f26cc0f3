package ingest

import (
	"net"
	"net/netip"
	"strconv"
)

// bindSpec returns the network and address to bind for a listener. An empty address binds
// every address of both families: Go's "udp" network with a wildcard address opens an IPv6
// socket with IPV6_V6ONLY off (IPv4 arrives IPv4-mapped), or an IPv4 socket on hosts without
// IPv6. An explicit address binds its own family only.
func bindSpec(address string, port int) (network, addr string) {
	p := strconv.Itoa(port)
	if address == "" {
		return "udp", ":" + p
	}
	a, err := netip.ParseAddr(address)
	if err != nil { // validated by config; keep net's error for anything else
		return "udp", net.JoinHostPort(address, p)
	}
	if a.Is4() {
		return "udp4", net.JoinHostPort(a.String(), p)
	}
	return "udp6", net.JoinHostPort(a.String(), p)
}
