// Package frames builds the data packets the INT tests put INT into (wire.InsertINT) and
// an INT sink takes it out of (package xdp's sink program), and checks their lengths and
// checksums. Its checksum code is written apart from wire's and the sink's, so that each
// checks the others.
package frames

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

var b16 = binary.BigEndian

// Checksum is the Internet checksum (RFC 1071) of the concatenated chunks.
func Checksum(chunks ...[]byte) uint16 {
	var all []byte
	for _, c := range chunks {
		all = append(all, c...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var s uint64
	for i := 0; i < len(all); i += 2 {
		s += uint64(all[i])<<8 | uint64(all[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// Pseudo is the TCP/UDP pseudo-header of the IP header ip for a segment of n bytes.
func Pseudo(ip []byte, v6 bool, proto uint8, n int) []byte {
	if v6 {
		p := append([]byte(nil), ip[8:40]...)
		return append(p, byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0, 0, 0, proto)
	}
	p := append([]byte(nil), ip[12:20]...)
	return append(p, 0, proto, byte(n>>8), byte(n))
}

// SetL4Sum sets the checksum of the TCP/UDP segment seg under the IP header ip.
func SetL4Sum(ip []byte, v6 bool, proto uint8, seg []byte) {
	at := 6
	if proto == 6 {
		at = 16
	}
	seg[at], seg[at+1] = 0, 0
	c := Checksum(Pseudo(ip, v6, proto, len(seg)), seg)
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	b16.PutUint16(seg[at:], c)
}

// Frame describes a data packet to build.
type Frame struct {
	V6      bool
	Proto   uint8 // 6 or 17
	VLANs   int   // 0-2 tags
	IPOpts  int   // IPv4 option bytes (a multiple of 4)
	TCPOpts int   // a multiple of 4
	TOS     uint8 // DSCP and ECN
	NoUDP   bool  // IPv4 UDP checksum 0
	Sport   uint16
	Dport   uint16
	Payload []byte
}

// The frames' addresses: the client's and the server's of xdptest.Path.
var (
	Src4 = []byte{10, 203, 1, 2}
	Dst4 = []byte{10, 203, 2, 1}
	Src6 = netip.MustParseAddr("fd00:203:1::2").As16()
	Dst6 = netip.MustParseAddr("fd00:203:2::1").As16()
)

// Build writes the frame with valid lengths and checksums.
func (f Frame) Build() []byte {
	b := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
	for i := 0; i < f.VLANs; i++ {
		tpid := uint16(0x8100)
		if i == 0 && f.VLANs == 2 {
			tpid = 0x88a8
		}
		b = b16.AppendUint16(b, tpid)
		b = b16.AppendUint16(b, uint16(100+i))
	}
	var ip, l4 int
	if f.V6 {
		b = b16.AppendUint16(b, 0x86dd)
		ip = len(b)
		b = append(b, 0x60|f.TOS>>4, f.TOS<<4|0x0a, 0xbc, 0xde, 0, 0, f.Proto, 64)
		b = append(b, Src6[:]...)
		b = append(b, Dst6[:]...)
	} else {
		b = b16.AppendUint16(b, 0x0800)
		ip = len(b)
		b = append(b, 0x45+uint8(f.IPOpts/4), f.TOS, 0, 0, 0x12, 0x34, 0x40, 0, 64, f.Proto, 0, 0)
		b = append(b, Src4...)
		b = append(b, Dst4...)
		for i := 0; i < f.IPOpts; i++ {
			b = append(b, 1)
		}
	}
	l4 = len(b)
	b = b16.AppendUint16(b, f.Sport)
	b = b16.AppendUint16(b, f.Dport)
	if f.Proto == 17 {
		b = append(b, 0, 0, 0, 0)
	} else {
		b = append(b, 1, 2, 3, 4, 5, 6, 7, 8, uint8(5+f.TCPOpts/4)<<4, 0x18, 0x01, 0xf5, 0, 0, 0, 0)
		for i := 0; i < f.TCPOpts; i++ {
			b = append(b, []byte{1, 1, 8, 10}[i%4])
		}
	}
	b = append(b, f.Payload...)
	seg := b[l4:]
	if f.V6 {
		b16.PutUint16(b[ip+4:], uint16(len(seg)))
	} else {
		b16.PutUint16(b[ip+2:], uint16(len(b)-ip))
		b16.PutUint16(b[ip+10:], Checksum(b[ip:l4]))
	}
	if f.Proto == 17 {
		b16.PutUint16(seg[4:], uint16(len(seg)))
		if f.V6 || !f.NoUDP {
			SetL4Sum(b[ip:], f.V6, 17, seg)
		}
	} else {
		SetL4Sum(b[ip:], f.V6, 6, seg)
	}
	return b
}

// Headers finds the IP and L4 headers of frame.
func Headers(frame []byte) (ip, l4 int, v6 bool, proto uint8) {
	ip, et := 14, b16.Uint16(frame[12:])
	for et == 0x8100 || et == 0x88a8 || et == 0x9100 {
		et, ip = b16.Uint16(frame[ip+2:]), ip+4
	}
	if et == 0x86dd {
		return ip, ip + 40, true, frame[ip+6]
	}
	return ip, ip + int(frame[ip]&0x0f)*4, false, frame[ip+9]
}

// Check says what is wrong with frame's lengths and checksums (nil: nothing). frame is an
// IPv4 or IPv6 packet of TCP or UDP that ends where the IP packet ends.
func Check(frame []byte) error {
	ip, l4, v6, proto := Headers(frame)
	if v6 {
		if n := int(b16.Uint16(frame[ip+4:])); n != len(frame)-l4 {
			return fmt.Errorf("ipv6 payload length %d, want %d", n, len(frame)-l4)
		}
	} else {
		if n := int(b16.Uint16(frame[ip+2:])); n != len(frame)-ip {
			return fmt.Errorf("ipv4 total length %d, want %d", n, len(frame)-ip)
		}
		if c := Checksum(frame[ip:l4]); c != 0 {
			return fmt.Errorf("ipv4 header checksum does not verify (0x%04x)", c)
		}
	}
	seg := frame[l4:]
	if proto == 17 {
		if n := int(b16.Uint16(seg[4:])); n != len(seg) {
			return fmt.Errorf("udp length %d, want %d", n, len(seg))
		}
		if !v6 && b16.Uint16(seg[6:]) == 0 {
			return nil
		}
	}
	if c := Checksum(Pseudo(frame[ip:], v6, proto, len(seg)), seg); c != 0 {
		return fmt.Errorf("proto %d checksum does not verify (0x%04x)", proto, c)
	}
	return nil
}
