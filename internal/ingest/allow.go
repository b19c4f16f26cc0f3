package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// allowList is a listener's `allow`: the source prefixes whose datagrams it accepts. It is
// checked for every datagram, so it is flat words compared under masks, without netip's
// method calls: an IPv4 source is one 32-bit compare per prefix, an IPv6 one two 64-bit
// compares. IPv4-mapped IPv6 sources (a dual-stack socket's IPv4 senders) are checked as
// IPv4, and a 4-in-6 prefix as its IPv4 prefix, so that `10.0.0.0/8` means the same on
// every socket.
type allowList struct {
	v4 []v4Prefix
	v6 []v6Prefix
}

type v4Prefix struct{ net, mask uint32 }

type v6Prefix struct{ hi, lo, mhi, mlo uint64 }

var errZone = errors.New("zone")

// ParseAllow parses allow entries: CIDR prefixes or single addresses (a /32 or /128).
func ParseAllow(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for _, e := range entries {
		e = strings.TrimSpace(e)
		var p netip.Prefix
		var err error
		if strings.Contains(e, "/") {
			p, err = netip.ParsePrefix(e)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(e)
			if a.Zone() != "" {
				err = errZone
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if err != nil || !p.IsValid() {
			return nil, fmt.Errorf("%q: must be an IPv4 or IPv6 prefix (10.0.0.0/8, 2001:db8::/32) or address", e)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// newAllowList builds the list of prefixes; nil (accept everything) when there are none.
func newAllowList(ps []netip.Prefix) *allowList {
	if len(ps) == 0 {
		return nil
	}
	a := &allowList{}
	for _, p := range ps {
		addr, bits := p.Addr(), p.Bits()
		if addr.Is4In6() && bits >= 96 {
			addr, bits = addr.Unmap(), bits-96
		}
		if addr.Is4() {
			b := addr.As4()
			mask := uint32(0)
			if bits > 0 {
				mask = ^uint32(0) << (32 - bits)
			}
			a.v4 = append(a.v4, v4Prefix{binary.BigEndian.Uint32(b[:]) & mask, mask})
			continue
		}
		b := addr.As16()
		mhi, mlo := mask64(bits), mask64(bits-64)
		a.v6 = append(a.v6, v6Prefix{binary.BigEndian.Uint64(b[:8]) & mhi, binary.BigEndian.Uint64(b[8:]) & mlo, mhi, mlo})
	}
	return a
}

// mask64 is a mask of the top bits bits of a word (0 to 64, clamped).
func mask64(bits int) uint64 {
	switch {
	case bits <= 0:
		return 0
	case bits >= 64:
		return ^uint64(0)
	}
	return ^uint64(0) << (64 - bits)
}

// allow4 reports whether IPv4 source ip (host order) is allowed.
func (a *allowList) allow4(ip uint32) bool {
	for _, p := range a.v4 {
		if ip&p.mask == p.net {
			return true
		}
	}
	return false
}

// allow16 reports whether the IPv6 source (16 bytes, network order) is allowed.
func (a *allowList) allow16(b *[16]byte) bool {
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	if hi == 0 && lo>>32 == 0xffff { // ::ffff:a.b.c.d
		return a.allow4(uint32(lo))
	}
	for _, p := range a.v6 {
		if hi&p.mhi == p.hi && lo&p.mlo == p.lo {
			return true
		}
	}
	return false
}

// allowAddr reports whether a source address is allowed (the capture path).
func (a *allowList) allowAddr(ip netip.Addr) bool {
	if ip.Is4() {
		b := ip.As4()
		return a.allow4(binary.BigEndian.Uint32(b[:]))
	}
	b := ip.As16()
	return a.allow16(&b)
}
