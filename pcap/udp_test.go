package pcap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

var benchFrame = UDPFrame{
	SrcMAC: [6]byte{0, 0, 0, 0, 3, 4}, DstMAC: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
	Src: netip.MustParseAddrPort("10.0.3.5:0"), Dst: netip.MustParseAddrPort("10.0.2.4:32766"),
}

// Header pieces, hand-written.
var (
	ethHdr   = mustHex("aabbccddeeff 000000000304 0800")
	ethV6Hdr = mustHex("aabbccddeeff 000000000304 86dd")
	// IPv4, IHL 5, total length 32 (20 + UDP 8 + 4 payload), DF, TTL 64, UDP,
	// 10.0.3.5 -> 10.0.2.4, checksum 0 (the walker does not check it).
	ipv4Hdr = mustHex("45000020 00004000 40110000 0a000305 0a000204")
	// UDP 1000 -> 32766, length 12.
	udpHdr  = mustHex("03e8 7ffe 000c 0000")
	payload = []byte("tele")
	v6Src   = mustHex("20010db8000000000000000000000001")
	v6Dst   = mustHex("20010db8000000000000000000000002")
)

func ipv6Hdr(next byte, plen int) []byte {
	b := mustHex("60000000")
	b = binary.BigEndian.AppendUint16(b, uint16(plen))
	b = append(b, next, 64)
	return cat(b, v6Src, v6Dst)
}

func TestUDP(t *testing.T) {
	v4 := cat(ipv4Hdr, udpHdr, payload)
	v6 := func(ext []byte, next byte) []byte {
		return cat(ipv6Hdr(next, len(ext)+12), ext, udpHdr, payload)
	}
	src4, dst4 := netip.MustParseAddr("10.0.3.5"), netip.MustParseAddr("10.0.2.4")
	src6, dst6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	ipv4Opts := cat(mustHex("47000028 00004000 40110000 0a000305 0a000204"), mustHex("94040000 01010100"), udpHdr, payload)

	for _, tc := range []struct {
		name  string
		link  LinkType
		frame []byte
		ok    bool
		v6    bool
	}{
		{"ethernet ipv4", LinkEthernet, cat(ethHdr, v4), true, false},
		{"ethernet padding ignored", LinkEthernet, cat(ethHdr, v4, make([]byte, 14)), true, false},
		{"802.1Q", LinkEthernet, cat(ethHdr[:12], mustHex("8100 0064 0800"), v4), true, false},
		{"QinQ", LinkEthernet, cat(ethHdr[:12], mustHex("88a8 00c8 8100 0064 0800"), v4), true, false},
		{"MPLS two labels", LinkEthernet, cat(ethHdr[:12], mustHex("8847 00001040 000021ff"), v4), true, false},
		{"ipv4 options", LinkEthernet, cat(ethHdr, ipv4Opts), true, false},
		{"raw", LinkRaw, v4, true, false},
		{"raw ipv6", LinkRaw, v6(nil, 17), true, true},
		{"ipv4 link", LinkIPv4, v4, true, false},
		{"ipv6 link", LinkIPv6, v6(nil, 17), true, true},
		{"linux sll", LinkLinuxSLL, cat(mustHex("0000 0001 0006 000000000304 0000 0800"), v4), true, false},
		{"linux sll2", LinkLinuxSLL2, cat(mustHex("0800 0000 00000002 0001 00 06 000000000304 0000"), v4), true, false},
		{"null loopback", LinkNull, cat(mustHex("02000000"), v4), true, false},
		{"ethernet ipv6", LinkEthernet, cat(ethV6Hdr, v6(nil, 17)), true, true},
		{"ipv6 hop-by-hop + destination options", LinkEthernet,
			cat(ethV6Hdr, v6(cat(mustHex("3c00 010400000000"), mustHex("1101 0000000000000000 000000000000")), 0)), true, true},
		{"ipv6 atomic fragment", LinkIPv6, v6(mustHex("11000000 12345678"), 44), true, true},
		{"ipv6 authentication header", LinkIPv6, v6(mustHex("1102 0000 00000001 00000001 00000000"), 51), true, true},
		{"ipv6 padding after payload", LinkIPv6, append(v6(nil, 17), 0, 0), true, true},

		{"empty", LinkEthernet, nil, false, false},
		{"unknown link", 147, cat(ethHdr, v4), false, false},
		{"arp", LinkEthernet, cat(ethHdr[:12], mustHex("0806"), make([]byte, 28)), false, false},
		{"802.3 length", LinkEthernet, cat(ethHdr[:12], mustHex("0040"), v4), false, false},
		{"truncated vlan", LinkEthernet, cat(ethHdr[:12], mustHex("8100 00")), false, false},
		{"too many tags", LinkEthernet, cat(ethHdr[:12], bytes.Repeat(mustHex("8100 0001"), 5), mustHex("0800"), v4), false, false},
		{"mpls without bottom", LinkEthernet, cat(ethHdr[:12], mustHex("8847"), bytes.Repeat(mustHex("00001040"), 9)), false, false},
		{"tcp", LinkRaw, cat(mustHex("45000020 00004000 40060000 0a000305 0a000204"), udpHdr, payload), false, false},
		{"ipv4 version wrong", LinkIPv4, cat(mustHex("65"), v4[1:]), false, false},
		{"ipv4 ihl < 5", LinkRaw, cat(mustHex("44"), v4[1:]), false, false},
		{"ipv4 total length past capture", LinkRaw, v4[:len(v4)-1], false, false},
		{"ipv4 total length < ihl", LinkRaw, cat(mustHex("45000010"), v4[4:]), false, false},
		{"ipv4 options past total", LinkRaw, cat(mustHex("4f000020"), v4[4:]), false, false},
		{"ipv4 later fragment", LinkRaw, cat(v4[:6], mustHex("0001"), v4[8:]), false, false},
		{"ipv4 first fragment", LinkRaw, cat(v4[:6], mustHex("2000"), v4[8:]), false, false},
		{"udp length past ip", LinkRaw, cat(v4[:24], mustHex("000d"), v4[26:]), false, false},
		{"udp length < 8", LinkRaw, cat(v4[:24], mustHex("0007"), v4[26:]), false, false},
		{"udp header cut", LinkRaw, cat(mustHex("45000018"), v4[4:24]), false, false},
		{"ipv6 later fragment", LinkIPv6, v6(mustHex("11000008 12345678"), 44), false, true},
		{"ipv6 first fragment", LinkIPv6, v6(mustHex("11000001 12345678"), 44), false, true},
		{"ipv6 esp", LinkIPv6, v6(nil, 50), false, true},
		{"ipv6 no next header", LinkIPv6, v6(nil, 59), false, true},
		{"ipv6 ext header overruns", LinkIPv6, v6(mustHex("11ff 000000000000"), 0), false, true},
		{"ipv6 ext header cut", LinkIPv6, v6(mustHex("1100 0000"), 0), false, true},
		{"ipv6 too many ext headers", LinkIPv6, v6(bytes.Repeat(mustHex("3c00 000000000000"), 9), 60), false, true},
		{"ipv6 payload length past capture", LinkIPv6, v6(nil, 17)[:50], false, true},
		{"ipv6 jumbo", LinkIPv6, cat(ipv6Hdr(17, 0), udpHdr, payload), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := UDP(tc.frame, tc.link)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, d)
			}
			if !ok {
				return
			}
			src, dst := src4, dst4
			if tc.v6 {
				src, dst = src6, dst6
			}
			if d.Src != src || d.Dst != dst || d.SrcPort != 1000 || d.DstPort != 32766 || string(d.Payload) != "tele" {
				t.Errorf("got %v:%d > %v:%d %q", d.Src, d.SrcPort, d.Dst, d.DstPort, d.Payload)
			}
		})
	}
}

func TestAppendUDPFrame(t *testing.T) {
	// The ONOS capture's outer headers (testdata/onos-bmv2-int.pcap) with a correct IPv4 checksum and DF,
	// and TTL 255 as BMv2 sent it.
	f := UDPFrame{
		SrcMAC: [6]byte{0, 0, 0, 0, 3, 4}, DstMAC: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
		Src: netip.MustParseAddrPort("10.0.3.5:0"), Dst: netip.MustParseAddrPort("10.0.2.4:1234"),
		TTL: 255,
	}
	got := AppendUDPFrame([]byte{0xee}, &f, []byte{1, 2, 3})
	want := cat([]byte{0xee}, mustHex("aabbccddeeff 000000000304 0800"),
		mustHex("4500001f 00004000 ff11"), checksum(mustHex("4500001f 00004000 ff110000 0a000305 0a000204")),
		mustHex("0a000305 0a000204"), mustHex("0000 04d2 000b"))
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("headers\n got %x\nwant %x", got[:len(want)], want)
	}
	// A header whose checksum is right sums to 0xffff; so does a UDP datagram with its
	// pseudo-header.
	if s := fold(sum(0, got[15:35])); s != 0xffff {
		t.Errorf("IPv4 header sums to %#04x", s)
	}
	if s := fold(sum(sum(17+11, got[27:35]), got[35:])); s != 0xffff {
		t.Errorf("UDP datagram sums to %#04x", s)
	}
	d, ok := UDP(got[1:], LinkEthernet)
	if !ok || d.DstPort != 1234 || !bytes.Equal(d.Payload, []byte{1, 2, 3}) {
		t.Errorf("walk: %v %+v", ok, d)
	}

	f6 := UDPFrame{Src: netip.MustParseAddrPort("[2001:db8::1]:5"), Dst: netip.MustParseAddrPort("[2001:db8::2]:6"), DSCP: 0x17}
	got = AppendUDPFrame(nil, &f6, []byte("odd"))
	if s := fold(sum(sum(17+11, got[22:54]), got[54:])); s != 0xffff {
		t.Errorf("IPv6 UDP datagram sums to %#04x", s)
	}
	if got[14] != 0x65 || got[15] != 0xc0 {
		t.Errorf("IPv6 traffic class bytes %x", got[14:16])
	}
	d, ok = UDP(got, LinkEthernet)
	if !ok || d.Src != f6.Src.Addr() || d.DstPort != 6 || string(d.Payload) != "odd" {
		t.Errorf("walk: %v %+v", ok, d)
	}
}

// checksum computes an Internet checksum independently of sum/fold, for the test.
func checksum(b []byte) []byte {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return binary.BigEndian.AppendUint16(nil, ^uint16(s))
}

func BenchmarkUDP(b *testing.B) {
	frames := [][]byte{
		AppendUDPFrame(nil, &benchFrame, make([]byte, 100)),
		cat(ethHdr[:12], mustHex("88a8 00c8 8100 0064 86dd"), ipv6Hdr(0, 8+12), mustHex("1100 000000000000"), udpHdr, payload),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range frames {
			if _, ok := UDP(f, LinkEthernet); !ok {
				b.Fatal("not UDP")
			}
		}
	}
}
