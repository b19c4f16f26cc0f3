package xdp

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// frame builds an Ethernet frame from hex parts (spaces ignored).
func frame(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	ethV4   = "020000000001 020000000002 0800"
	ethV6   = "020000000001 020000000002 86dd"
	ethVLAN = "020000000001 020000000002 8100 0064 0800"
	// IPv4, 20-byte header, UDP, 10.0.0.2 -> 10.0.0.1 (lengths are not checked by Parse:
	// the UDP length is).
	ipv4     = "4500 0024 0000 0000 4011 0000 0a000002 0a000001"
	ipv4Opts = "4600 0028 0000 0000 4011 0000 0a000002 0a000001 01010101"
	ipv4Frag = "4500 0024 0000 2000 4011 0000 0a000002 0a000001"
	ipv6     = "60000000 0010 11 40 fd000000000000000000000000000002 fd000000000000000000000000000001"
	udp12    = "9c40 9c68 0010 0000" // 40000 -> 40040, length 16: 8 bytes of payload
	payload  = "0102030405060708"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name  string
		f     []byte
		ok    bool
		v4    bool
		src   string
		wantP string
	}{
		{"ipv4", frame(t, ethV4, ipv4, udp12, payload), true, true, "0a000002", payload},
		{"ipv4 trailing padding", frame(t, ethV4, ipv4, udp12, payload, "0000"), true, true, "0a000002", payload},
		{"ipv4 options", frame(t, ethV4, ipv4Opts, udp12, payload), true, true, "0a000002", payload},
		{"vlan", frame(t, ethVLAN, ipv4, udp12, payload), true, true, "0a000002", payload},
		{"ipv6", frame(t, ethV6, ipv6, udp12, payload), true, false, "fd000000000000000000000000000002", payload},
		{"empty payload", frame(t, ethV4, ipv4, "9c40 9c68 0008 0000"), true, true, "0a000002", ""},
		{"fragment", frame(t, ethV4, ipv4Frag, udp12, payload), false, false, "", ""},
		{"udp length beyond the frame", frame(t, ethV4, ipv4, "9c40 9c68 0020 0000", payload), false, false, "", ""},
		{"udp length below the header", frame(t, ethV4, ipv4, "9c40 9c68 0004 0000", payload), false, false, "", ""},
		{"short ethernet", frame(t, "0200000000010200"), false, false, "", ""},
		{"short vlan", frame(t, "020000000001 020000000002 8100 00"), false, false, "", ""},
		{"short ipv4", frame(t, ethV4, "4500"), false, false, "", ""},
		{"ihl below 5", frame(t, ethV4, "4400 0024 0000 0000 4011 0000 0a000002 0a000001", udp12, payload), false, false, "", ""},
		{"ihl beyond the frame", frame(t, ethV4, "4f00 0024 0000 0000 4011 0000 0a000002 0a000001", udp12), false, false, "", ""},
		{"ipv4 version 6", frame(t, ethV4, "6500 0024 0000 0000 4011 0000 0a000002 0a000001", udp12, payload), false, false, "", ""},
		{"tcp", frame(t, ethV4, "4500 0024 0000 0000 4006 0000 0a000002 0a000001", udp12, payload), false, false, "", ""},
		{"short udp", frame(t, ethV4, ipv4, "9c40 9c68"), false, false, "", ""},
		{"ipv6 extension header", frame(t, ethV6, "60000000 0010 00 40 fd000000000000000000000000000002 fd000000000000000000000000000001", udp12, payload), false, false, "", ""},
		{"short ipv6", frame(t, ethV6, "60000000 0010 11 40"), false, false, "", ""},
		{"arp", frame(t, "ffffffffffff 020000000002 0806", "0001080006040001"), false, false, "", ""},
	}
	for _, c := range cases {
		var d Datagram
		ok := Parse(c.f, &d)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		src := d.Src[:]
		if d.V4 {
			src = d.Src[:4]
		}
		if d.V4 != c.v4 || hex.EncodeToString(src) != c.src || hex.EncodeToString(d.Payload) != c.wantP {
			t.Errorf("%s: v4 %v src %x payload %x; want %v %s %s", c.name, d.V4, src, d.Payload, c.v4, c.src, c.wantP)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(frame(f, ethV4, ipv4, udp12, payload))
	f.Add(frame(f, ethV4, ipv4Opts, udp12, payload))
	f.Add(frame(f, ethVLAN, ipv4, udp12, payload))
	f.Add(frame(f, ethV6, ipv6, udp12, payload))
	f.Add(frame(f, ethV4, ipv4Frag, udp12, payload))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Datagram
		if !Parse(b, &d) {
			return
		}
		// The payload is a part of the frame (a subslice: its offset is what its capacity
		// lacks), after at least Ethernet, IPv4 and UDP headers, and the UDP header before it
		// gives its length.
		off := cap(b) - cap(d.Payload)
		if off < 14+20+8 || off+len(d.Payload) > len(b) {
			t.Fatalf("payload at %d+%d in a %d-byte frame", off, len(d.Payload), len(b))
		}
		if ul := int(binary.BigEndian.Uint16(b[off-4:])); ul != len(d.Payload)+8 {
			t.Fatalf("UDP length %d, payload %d bytes", ul, len(d.Payload))
		}
	})
}

func BenchmarkParse(b *testing.B) {
	f := frame(b, ethV4, ipv4, udp12, payload)
	var d Datagram
	b.ReportAllocs()
	for b.Loop() {
		if !Parse(f, &d) {
			b.Fatal("not parsed")
		}
	}
}
