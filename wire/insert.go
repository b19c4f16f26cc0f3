package wire

import (
	"fmt"

	"github.com/intake-int/intake/telemetry"
)

// This file does to a data packet what an INT source and its transit switches do to it:
// InsertINT puts a finished INT stack into an Ethernet frame, as an INT sink receives it.
// It is the inverse of what a sink does (package xdp's sink program), for tests, the
// generator's data mode (intake gen --data) and anyone trying a sink.

// Marking is how the INT source marks the packets that carry INT (docs/wire-formats.md):
// by DSCP (v2.x NPT 0, v1.0, v0.5, host-int) or, when Port is not 0, by UDP destination
// port (v2.x NPT 1 and 2, v0.5).
type Marking struct {
	// DSCP is the 6-bit DSCP a DSCP-marked packet gets; the original is saved in the shim
	// (v1.0, v2.x NPT 0) or the v0.5 tail, and ECN is kept.
	DSCP uint8
	// Port, when not 0, is the UDP destination port that marks INT instead: the original
	// port is saved in the shim (v2.x NPT 1) or the v0.5 tail, and v2.x NPT 2 gives the UDP
	// header it inserts this destination port.
	Port uint16
}

func errInsert(format string, args ...any) error {
	return fmt.Errorf("wire: insert int: "+format, args...)
}

// InsertINT appends to dst the Ethernet frame frame with r's INT inserted as an INT source
// would insert it, and returns the result. dst and frame must not overlap.
//
// frame is Ethernet with at most 2 VLAN tags, then IPv4 (options allowed, no fragment) or
// IPv6 without extension headers, then UDP or TCP (options allowed); any other frame is an
// error that says why. Bytes after the IP packet's end (Ethernet padding) are kept after it.
//
// What is inserted is exactly what the TCP/UDP shim encoder writes for r (appendShimL4):
// the shim, the INT header, the stack r.Hops[:r.NHops] (newest first, as decoders return
// it) and the v0.5 tail. The caller sets the hops and r.INT's version, bitmap, hop counts
// and flags; InsertINT fills r.INT.ShimType (1 unless set), ShimExtra, OrigProto and OrigPort
// from the frame, so that decoding the result gives r back. The format:
//   - v2.x: r.Inner.EncapArg is the shim's NPT. NPT 0 is DSCP-marked (the shim keeps the
//     original DSCP); NPT 1 (UDP only) saves the UDP destination port in the shim and sets
//     it to m.Port; NPT 2 (UDP only) inserts a UDP header to m.Port before the original L4
//     header, with the original source port as its source port (the flow's entropy for
//     ECMP stays where switches hash), sets the IP protocol to 17 and keeps the original
//     protocol in the shim. INT follows the inserted header. NPT 2 carries TCP too.
//   - v1.0: DSCP-marked; shim byte 3 keeps the original DSCP<<2.
//   - v0.5: the tail keeps the IP protocol, the destination port and the original TOS byte
//     (DSCP and ECN); DSCP-marked, or, with m.Port, port-marked (UDP only).
//   - host-int (v0.5 with r.INT.ShimType 3, or any v0.5 under the encoder's host_int quirk):
//     Intel host-int's Type 3 shim, the v0.5 header and stack, r.INT.SourceSeq, then the
//     tail; DSCP-marked.
//
// INT goes right after the UDP header, or after the TCP options; with
// tcp_shim_before_options, the host_int quirk or host-int's shim it goes after the first
// 20 bytes of TCP, before the options, and the TCP data offset stays as it was.
//
// Then the IPv4 total length and header checksum, or the IPv6 payload length, the UDP
// length and the L4 checksum are made right: the UDP checksum (an IPv4 UDP checksum of 0
// stays 0) and the TCP checksum are computed over the whole new segment, and NPT 2's new
// UDP header gets a checksum over INT and the original segment, whose own checksum stays.
// Stripping INT and restoring what the marking saved therefore gives the original frame
// byte for byte when its checksums were valid.
func (e *Encoder) InsertINT(dst, frame []byte, r *telemetry.Report, m Marking) ([]byte, error) {
	p, err := parseInsertFrame(frame)
	if err != nil {
		return dst, err
	}
	in := &r.INT
	hostINT := in.Version == telemetry.INT05 && (in.ShimType == 3 || e.cfg.Quirks.HostINT)
	npt := uint8(0)
	if in.Version == telemetry.INT2x {
		npt = uint8(r.Inner.EncapArg)
	}
	if err := p.checkMarking(in.Version, hostINT, npt, m); err != nil {
		return dst, err
	}
	if hostINT && in.Bitmap == 0 {
		return dst, errInsert("host-int's shim needs a non-empty instruction bitmap (its decoders recognise it by one)")
	}
	switch {
	case hostINT:
		in.ShimType, in.HasSourceSeq = 3, true
	case in.Version != telemetry.INT2x || in.ShimType == 0:
		in.ShimType = 1 // v0.5 and v1.0 have one shim type
	}
	in.ShimExtra, in.OrigProto, in.OrigPort = 0, 0, 0
	switch {
	case in.Version == telemetry.INT05:
		in.OrigProto, in.OrigPort, in.ShimExtra = p.proto, p.dport, p.tos
	case in.Version == telemetry.INT10:
		in.ShimExtra = p.tos &^ 3
	case npt == 0:
		in.ShimExtra = p.tos >> 2
	case npt == 1:
		in.OrigPort = p.dport
	case npt == 2:
		in.OrigProto = p.proto
	}

	at := p.pay // where INT goes
	switch {
	case npt == 2:
		at = p.l4
	case p.proto == protoTCP && (e.cfg.TCPShimBeforeOptions || e.cfg.Quirks.HostINT || hostINT):
		at = p.l4 + 20
	}
	start := len(dst)
	dst = append(dst, frame[:at]...)
	if npt == 2 {
		dst = put16(dst, p.sport)
		dst = put16(dst, m.Port)
		dst = append(dst, 0, 0, 0, 0) // length and checksum, below
	}
	if dst, err = e.appendShimL4(dst, r, r.Hops[:r.NHops]); err != nil {
		return dst[:start], err
	}
	added := len(dst) - start - at
	dst = append(dst, frame[at:]...)
	out := dst[start:]
	end := p.end + added // the IP packet's end in out
	if p.ipLen+added > 0xffff {
		return dst[:start], errInsert("the IP packet would be %d bytes, more than 65535", p.ipLen+added)
	}

	ip := out[p.ip:]
	if m.Port == 0 {
		setDSCP(ip, p.v6, m.DSCP)
	}
	proto := p.proto
	if npt == 2 {
		proto = protoUDP
	}
	if p.v6 {
		be.PutUint16(ip[4:], uint16(end-p.ip-40))
		ip[6] = proto
	} else {
		be.PutUint16(ip[2:], uint16(end-p.ip))
		ip[9] = proto
		h := ip[:p.l4-p.ip]
		be.PutUint16(h[10:], 0)
		be.PutUint16(h[10:], ipChecksum(h))
	}
	seg := out[p.l4:end]
	switch {
	case proto == protoUDP:
		if m.Port != 0 && npt != 2 {
			be.PutUint16(seg[2:], m.Port)
		}
		be.PutUint16(seg[4:], uint16(len(seg)))
		if p.v6 || npt == 2 || be.Uint16(seg[6:]) != 0 {
			be.PutUint16(seg[6:], 0)
			be.PutUint16(seg[6:], l4Checksum(ip, p.v6, protoUDP, seg))
		}
	default:
		be.PutUint16(seg[16:], 0)
		be.PutUint16(seg[16:], l4Checksum(ip, p.v6, protoTCP, seg))
	}
	return dst, nil
}

// insertFrame is where InsertINT found a frame's headers.
type insertFrame struct {
	ip, l4, pay, end int // offsets: IP header, L4 header, L4 payload, the IP packet's end
	ipLen            int
	v6               bool
	proto            uint8
	tos              uint8 // the IPv4 TOS / IPv6 traffic class byte: DSCP<<2 | ECN
	sport, dport     uint16
}

func parseInsertFrame(b []byte) (insertFrame, error) {
	var p insertFrame
	if len(b) < 14 {
		return p, errInsert("frame of %d bytes: shorter than an Ethernet header", len(b))
	}
	off, et := 14, be.Uint16(b[12:])
	for n := 0; et == ether8021Q || et == ether8021A || et == etherQinQ; n++ {
		if n == 2 {
			return p, errInsert("more than 2 VLAN tags")
		}
		if len(b) < off+4 {
			return p, errInsert("frame truncated in a VLAN tag")
		}
		et, off = be.Uint16(b[off+2:]), off+4
	}
	p.ip = off
	ip := b[off:]
	switch et {
	case etherIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&0x0f < 5 {
			return p, errInsert("not a whole IPv4 header")
		}
		p.l4 = off + int(ip[0]&0x0f)*4
		p.ipLen = int(be.Uint16(ip[2:]))
		if frag := be.Uint16(ip[6:]); frag&0x3fff != 0 {
			return p, errInsert("an IPv4 fragment (flags/offset 0x%04x): INT goes into whole packets", frag)
		}
		p.tos, p.proto = ip[1], ip[9]
	case etherIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return p, errInsert("not a whole IPv6 header")
		}
		p.v6, p.l4 = true, off+40
		p.ipLen = 40 + int(be.Uint16(ip[4:]))
		p.tos, p.proto = (ip[0]&0x0f)<<4|ip[1]>>4, ip[6]
		switch p.proto {
		case 44:
			return p, errInsert("an IPv6 fragment header: INT goes into whole packets")
		case 0, 43, 50, 51, 60, 135, 139, 140:
			return p, errInsert("IPv6 extension header %d: only UDP or TCP right after the IPv6 header", p.proto)
		}
	default:
		return p, errInsert("EtherType 0x%04x is not IPv4 or IPv6", et)
	}
	p.end = off + p.ipLen
	if p.ipLen < p.l4-off || p.end > len(b) {
		return p, errInsert("IP length %d does not fit the %d bytes after the link header", p.ipLen, len(b)-off)
	}
	seg := b[p.l4:p.end]
	switch p.proto {
	case protoUDP:
		if len(seg) < 8 {
			return p, errInsert("UDP header truncated")
		}
		if n := int(be.Uint16(seg[4:])); n != len(seg) {
			return p, errInsert("UDP length %d is not the IP payload's %d", n, len(seg))
		}
		p.pay = p.l4 + 8
	case protoTCP:
		if len(seg) < 20 || int(seg[12]>>4)*4 < 20 || int(seg[12]>>4)*4 > len(seg) {
			return p, errInsert("TCP header truncated or its data offset wrong")
		}
		p.pay = p.l4 + int(seg[12]>>4)*4
	default:
		return p, errInsert("IP protocol %d is not UDP or TCP", p.proto)
	}
	p.sport, p.dport = be.Uint16(seg), be.Uint16(seg[2:])
	return p, nil
}

// checkMarking says why m cannot mark INT of this version in this frame, or nil.
func (p *insertFrame) checkMarking(v telemetry.INTVersion, hostINT bool, npt uint8, m Marking) error {
	port := m.Port != 0
	switch {
	case m.DSCP > 0x3f:
		return errInsert("DSCP 0x%02x is more than 6 bits", m.DSCP)
	case v != telemetry.INT05 && v != telemetry.INT10 && v != telemetry.INT2x:
		return errInsert("INT version %d", v)
	case port && p.proto != protoUDP && npt != 2:
		return errInsert("port marking is for UDP (or v2.x NPT 2), and the packet is TCP")
	case port && (v == telemetry.INT10 || hostINT || v == telemetry.INT2x && npt == 0):
		return errInsert("%s is DSCP-marked: Marking.Port must be 0", insertFormat(v, hostINT, npt))
	case !port && v == telemetry.INT2x && npt != 0:
		return errInsert("%s is port-marked: Marking.Port must be set", insertFormat(v, hostINT, npt))
	case npt > 2:
		return errInsert("v2.x NPT %d", npt)
	}
	return nil
}

func insertFormat(v telemetry.INTVersion, hostINT bool, npt uint8) string {
	switch {
	case hostINT:
		return "host-int"
	case v == telemetry.INT2x:
		return fmt.Sprintf("v2.x NPT %d", npt)
	case v == telemetry.INT10:
		return "v1.0"
	}
	return "v0.5"
}

// setDSCP sets the DSCP of the IP header ip and keeps its ECN bits.
func setDSCP(ip []byte, v6 bool, dscp uint8) {
	if v6 {
		ip[0] = ip[0]&0xf0 | dscp>>2
		ip[1] = ip[1]&0x3f | dscp<<6
		return
	}
	ip[1] = dscp<<2 | ip[1]&3
}

// l4Checksum is the TCP or UDP checksum of segment seg (its checksum field 0) under the
// pseudo-header of the IP header ip. A UDP checksum that comes out 0 is sent as all ones.
func l4Checksum(ip []byte, v6 bool, proto uint8, seg []byte) uint16 {
	var s uint32
	if v6 {
		s = csumAdd(0, ip[8:40])
	} else {
		s = csumAdd(0, ip[12:20])
	}
	s += uint32(proto) + uint32(len(seg))>>16 + uint32(len(seg))&0xffff
	c := ^csumFold(csumAdd(s, seg))
	if c == 0 && proto == protoUDP {
		return 0xffff
	}
	return c
}

// csumAdd adds b to the one's complement sum s as big-endian 16-bit words, an odd last
// byte padded with zero.
func csumAdd(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(be.Uint16(b))
		b = b[2:]
		if s >= 0x80000000 {
			s = s>>16 + s&0xffff
		}
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func csumFold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
