package pcap

import (
	"encoding/binary"
	"net/netip"
)

// Datagram is a UDP datagram found in a frame. Payload aliases the frame.
type Datagram struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Payload          []byte // bounded by the UDP length field, so Ethernet padding is not in it
}

// EtherTypes the walk follows.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherVLAN  = 0x8100 // 802.1Q
	etherQinQ  = 0x88a8 // 802.1ad
	etherQinQ1 = 0x9100 // pre-standard QinQ
	etherMPLS  = 0x8847
	etherMPLSm = 0x8848
)

// Limits on how many stacked headers the walk follows: enough for any sane frame, and a
// bound on work for hostile ones.
const (
	maxTags   = 4
	maxLabels = 8
	maxExt    = 8
)

// UDP walks frame, whose first header is given by link, down to a UDP datagram. It follows
// Ethernet with 802.1Q/802.1ad tags and MPLS labels, Linux cooked headers, IPv4 with options
// and IPv6 with extension headers. It returns false for anything that is not one whole UDP
// datagram: other protocols, IPv4 and IPv6 fragments (a first fragment does not hold the
// whole datagram either), lengths that disagree with the captured bytes, and frames cut short
// by the capture's snapshot length. It does not allocate.
func UDP(frame []byte, link LinkType) (Datagram, bool) {
	b := frame
	var etype uint16
	switch link {
	case LinkEthernet:
		if len(b) < 14 {
			return Datagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[12:]), b[14:]
	case LinkLinuxSLL:
		if len(b) < 16 {
			return Datagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[14:]), b[16:]
	case LinkLinuxSLL2:
		if len(b) < 20 {
			return Datagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[0:]), b[20:]
	case LinkNull, LinkLoop:
		if len(b) < 4 {
			return Datagram{}, false
		}
		// The address family is in the capturing host's order for LinkNull; AF_INET is 2
		// everywhere, AF_INET6 differs between systems (10, 24, 28, 30), so look at the
		// IP version instead.
		return ipUDP(b[4:])
	case LinkRaw:
		return ipUDP(b)
	case LinkIPv4:
		return ipv4UDP(b)
	case LinkIPv6:
		return ipv6UDP(b)
	default:
		return Datagram{}, false
	}
	for range maxTags {
		if etype != etherVLAN && etype != etherQinQ && etype != etherQinQ1 {
			break
		}
		if len(b) < 4 {
			return Datagram{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[2:]), b[4:]
	}
	switch etype {
	case etherIPv4:
		return ipv4UDP(b)
	case etherIPv6:
		return ipv6UDP(b)
	case etherMPLS, etherMPLSm:
		// Reports may reach the collector MPLS-encapsulated (fabric-tna); the label stack
		// does not say what it carries, so after the bottom label look at the IP version.
		for range maxLabels {
			if len(b) < 4 {
				return Datagram{}, false
			}
			bos := b[2]&1 != 0
			b = b[4:]
			if bos {
				return ipUDP(b)
			}
		}
	}
	return Datagram{}, false
}

func ipUDP(b []byte) (Datagram, bool) {
	if len(b) == 0 {
		return Datagram{}, false
	}
	switch b[0] >> 4 {
	case 4:
		return ipv4UDP(b)
	case 6:
		return ipv6UDP(b)
	}
	return Datagram{}, false
}

func ipv4UDP(b []byte) (Datagram, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return Datagram{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < 20 || total < ihl || total > len(b) {
		return Datagram{}, false
	}
	// Fragment offset non-zero (a later fragment) or more-fragments set (a first fragment,
	// which lacks the datagram's tail).
	if binary.BigEndian.Uint16(b[6:])&0x3fff != 0 || b[9] != 17 {
		return Datagram{}, false
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	return udp(b[ihl:total], src, dst)
}

func ipv6UDP(b []byte) (Datagram, bool) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return Datagram{}, false
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	if plen == 0 || 40+plen > len(b) { // 0: a jumbogram, which intake does not expect
		return Datagram{}, false
	}
	src := netip.AddrFrom16([16]byte(b[8:24]))
	dst := netip.AddrFrom16([16]byte(b[24:40]))
	next, p := b[6], b[40:40+plen]
	for range maxExt {
		switch next {
		case 17:
			return udp(p, src, dst)
		case 0, 43, 60, 135, 139, 140: // hop-by-hop, routing, destination, mobility, HIP, shim6
			if len(p) < 8 {
				return Datagram{}, false
			}
			n := (int(p[1]) + 1) * 8
			if n > len(p) {
				return Datagram{}, false
			}
			next, p = p[0], p[n:]
		case 44: // fragment: only an atomic fragment (offset 0, M clear) holds the datagram
			if len(p) < 8 || binary.BigEndian.Uint16(p[2:])&0xfff9 != 0 {
				return Datagram{}, false
			}
			next, p = p[0], p[8:]
		case 51: // authentication header: length in 4-byte units, minus 2
			if len(p) < 8 {
				return Datagram{}, false
			}
			n := (int(p[1]) + 2) * 4
			if n > len(p) {
				return Datagram{}, false
			}
			next, p = p[0], p[n:]
		default: // ESP, no next header, TCP, ...
			return Datagram{}, false
		}
	}
	return Datagram{}, false
}

func udp(b []byte, src, dst netip.Addr) (Datagram, bool) {
	if len(b) < 8 {
		return Datagram{}, false
	}
	n := int(binary.BigEndian.Uint16(b[4:]))
	if n < 8 || n > len(b) {
		return Datagram{}, false
	}
	return Datagram{
		Src: src, Dst: dst,
		SrcPort: binary.BigEndian.Uint16(b[0:]), DstPort: binary.BigEndian.Uint16(b[2:]),
		Payload: b[8:n],
	}, true
}

// UDPFrame describes the Ethernet, IP and UDP headers AppendUDPFrame puts around a payload.
// Src and Dst must both be IPv4 or both IPv6.
type UDPFrame struct {
	SrcMAC, DstMAC [6]byte
	Src, Dst       netip.AddrPort
	TTL            uint8  // 0 means 64
	ID             uint16 // IPv4 identification
	DSCP           uint8
}

// AppendUDPFrame appends an Ethernet/IPv4/UDP or Ethernet/IPv6/UDP frame carrying payload
// to dst. The IPv4 header checksum and the UDP checksum are computed; the IPv4 header has DF
// set, as the Telemetry Report specs ask of report packets.
func AppendUDPFrame(dst []byte, f *UDPFrame, payload []byte) []byte {
	v6 := f.Src.Addr().Is6() && !f.Src.Addr().Is4In6()
	dst = append(dst, f.DstMAC[:]...)
	dst = append(dst, f.SrcMAC[:]...)
	ttl := f.TTL
	if ttl == 0 {
		ttl = 64
	}
	ulen := 8 + len(payload)
	var ip int
	if v6 {
		dst = binary.BigEndian.AppendUint16(dst, etherIPv6)
		ip = len(dst)
		dst = binary.BigEndian.AppendUint32(dst, 6<<28|uint32(f.DSCP)<<22)
		dst = binary.BigEndian.AppendUint16(dst, uint16(ulen))
		dst = append(dst, 17, ttl)
		s, d := f.Src.Addr().As16(), f.Dst.Addr().As16()
		dst = append(dst, s[:]...)
		dst = append(dst, d[:]...)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, etherIPv4)
		ip = len(dst)
		dst = append(dst, 0x45, f.DSCP<<2)
		dst = binary.BigEndian.AppendUint16(dst, uint16(20+ulen))
		dst = binary.BigEndian.AppendUint16(dst, f.ID)
		dst = append(dst, 0x40, 0, ttl, 17, 0, 0)
		s, d := f.Src.Addr().Unmap().As4(), f.Dst.Addr().Unmap().As4()
		dst = append(dst, s[:]...)
		dst = append(dst, d[:]...)
		binary.BigEndian.PutUint16(dst[ip+10:], ^fold(sum(0, dst[ip:ip+20])))
	}
	u := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, f.Src.Port())
	dst = binary.BigEndian.AppendUint16(dst, f.Dst.Port())
	dst = binary.BigEndian.AppendUint16(dst, uint16(ulen))
	dst = append(dst, 0, 0)
	dst = append(dst, payload...)

	// Pseudo-header: addresses, protocol, UDP length.
	var acc uint32
	if v6 {
		acc = sum(acc, dst[ip+8:ip+40])
	} else {
		acc = sum(acc, dst[ip+12:ip+20])
	}
	acc += 17 + uint32(ulen)
	c := ^fold(sum(acc, dst[u:]))
	if c == 0 {
		c = 0xffff // 0 means "no checksum" in UDP
	}
	binary.BigEndian.PutUint16(dst[u+6:], c)
	return dst
}

// sum adds b to a ones'-complement accumulator as big-endian 16-bit words.
func sum(acc uint32, b []byte) uint32 {
	for len(b) >= 2 {
		acc += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}
