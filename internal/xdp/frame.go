package xdp

import "encoding/binary"

// Datagram is the UDP datagram Parse finds in an Ethernet frame.
type Datagram struct {
	Payload []byte   // the UDP payload, as long as the UDP header says (within the frame)
	V4      bool     // IPv4: Src[:4] is the source address
	Src     [16]byte // the source address (IPv4 in the first 4 bytes)
}

// Parse finds the UDP datagram in an Ethernet frame (at most one VLAN tag, IPv4 without
// fragmentation or IPv6 without extension headers), as the XDP program matched it. The
// frame came from the wire: Parse checks every length and reports false for anything the
// program should not have redirected. It does not allocate.
func Parse(f []byte, d *Datagram) bool {
	if len(f) < 14 {
		return false
	}
	et := binary.BigEndian.Uint16(f[12:])
	p := f[14:]
	if et == 0x8100 || et == 0x88a8 {
		if len(p) < 4 {
			return false
		}
		et = binary.BigEndian.Uint16(p[2:])
		p = p[4:]
	}
	switch et {
	case 0x0800:
		if len(p) < 20 || p[0]>>4 != 4 || p[9] != 17 {
			return false
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || len(p) < ihl || binary.BigEndian.Uint16(p[6:])&0x3fff != 0 {
			return false
		}
		d.V4 = true
		d.Src = [16]byte{}
		copy(d.Src[:4], p[12:16])
		p = p[ihl:]
	case 0x86dd:
		if len(p) < 40 || p[6] != 17 {
			return false
		}
		d.V4 = false
		copy(d.Src[:], p[8:24])
		p = p[40:]
	default:
		return false
	}
	if len(p) < 8 {
		return false
	}
	ul := int(binary.BigEndian.Uint16(p[4:]))
	if ul < 8 || ul > len(p) {
		return false
	}
	d.Payload = p[8:ul]
	return true
}
