package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/testutil/frames"
	"github.com/intake-int/intake/telemetry"
)

// The checksums and the reverse of InsertINT here are written apart from wire's own code
// (ipChecksum, l4Checksum), so that the two check each other.

var b16 = binary.BigEndian

// checkSums fails t unless frame's lengths and checksums are right.
func checkSums(t *testing.T, frame []byte) {
	t.Helper()
	if err := frames.Check(frame); err != nil {
		t.Error(err)
	}
}

// stripINT is the reverse of InsertINT, what a sink does: it removes INT (and the UDP
// header NPT 2 inserted), restores what the marking saved (DSCP or TOS, destination port,
// IP protocol), and fixes lengths and checksums. intPort marks INT by UDP port (0: none);
// before: INT sits after the first 20 bytes of TCP. ok is false when frame carries no INT
// this function recognises.
func stripINT(frame []byte, intPort uint16, before bool) (out []byte, ok bool) {
	ip, l4, v6, proto := frames.Headers(frame)
	at := 0
	switch {
	case proto == 17:
		at = l4 + 8
	case proto == 6 && before:
		at = l4 + 20
	case proto == 6:
		at = l4 + int(frame[l4+12]>>4)*4
	default:
		return nil, false
	}
	if len(frame) < at+4 {
		return nil, false
	}
	shim := frame[at:]
	dscp, tos, dport, nproto := -1, -1, -1, -1
	n := 0
	switch shim[0] {
	case 0x01, 0x03: // v0.5, v1.0, host-int: Length counts the shim
		n = int(shim[2]) * 4
		if len(shim) < n || n < 12 {
			return nil, false
		}
		if shim[0] == 0x03 || shim[4]>>4 == 0 { // the v0.5 tail: proto, port, TOS
			tail := shim[n-4 : n]
			tos, dport = int(tail[3]), int(b16.Uint16(tail[1:]))
		} else {
			dscp = int(shim[3] >> 2)
		}
	default: // v2.x: Length excludes the shim
		n = 4 + int(shim[1])*4
		switch shim[0] >> 2 & 3 {
		case 0:
			dscp = int(shim[3] >> 2)
		case 1:
			dport = int(b16.Uint16(shim[2:]))
		case 2:
			if proto != 17 || b16.Uint16(frame[l4+2:]) != intPort {
				return nil, false
			}
			nproto, at, n = int(shim[3]), l4, n+8
		default:
			return nil, false
		}
	}
	if len(frame) < at+n {
		return nil, false
	}
	out = append(append([]byte(nil), frame[:at]...), frame[at+n:]...)
	if nproto >= 0 {
		proto = uint8(nproto)
	}
	if dport >= 0 {
		b16.PutUint16(out[l4+2:], uint16(dport))
	}
	h := out[ip:]
	if v6 {
		tc := int(h[0]&0x0f)<<4 | int(h[1]>>4)
		if dscp >= 0 {
			tc = dscp<<2 | tc&3
		}
		if tos >= 0 {
			tc = tos
		}
		h[0], h[1] = 0x60|uint8(tc>>4), uint8(tc<<4)|h[1]&0x0f
		b16.PutUint16(h[4:], uint16(len(out)-l4))
		h[6] = proto
	} else {
		if dscp >= 0 {
			h[1] = uint8(dscp<<2) | h[1]&3
		}
		if tos >= 0 {
			h[1] = uint8(tos)
		}
		b16.PutUint16(h[2:], uint16(len(out)-ip))
		h[9] = proto
		h[10], h[11] = 0, 0
		b16.PutUint16(h[10:], frames.Checksum(h[:l4-ip]))
	}
	if nproto >= 0 {
		return out, true // the original L4 header and its checksum were never touched
	}
	seg := out[l4:]
	if proto == 17 {
		b16.PutUint16(seg[4:], uint16(len(seg)))
		if !v6 && b16.Uint16(seg[6:]) == 0 {
			return out, true
		}
	}
	frames.SetL4Sum(h, v6, proto, seg)
	return out, true
}

// insertCase is one shape of INT an InsertINT test inserts.
type insertCase struct {
	name    string
	v       telemetry.INTVersion
	npt     uint16
	hostINT bool
	port    bool // port-marked
	before  bool // tcp_shim_before_options
	tcp     bool // over TCP too (else UDP only)
}

var insertCases = []insertCase{
	{name: "v2.x npt0", v: telemetry.INT2x, tcp: true},
	{name: "v2.x npt0 before options", v: telemetry.INT2x, before: true, tcp: true},
	{name: "v2.x npt1", v: telemetry.INT2x, npt: 1, port: true},
	{name: "v2.x npt2", v: telemetry.INT2x, npt: 2, port: true, tcp: true},
	{name: "v1.0", v: telemetry.INT10, tcp: true},
	{name: "v0.5 dscp", v: telemetry.INT05, tcp: true},
	{name: "v0.5 port", v: telemetry.INT05, port: true},
	{name: "host-int", v: telemetry.INT05, hostINT: true, tcp: true},
}

const (
	insertMarkDSCP = 0x17
	insertMarkPort = 5555
)

func (c insertCase) config() Config {
	cfg := DefaultConfig()
	cfg.INTPort = insertMarkPort
	cfg.TCPShimBeforeOptions = c.before
	cfg.Quirks.HostINT = c.hostINT
	return cfg
}

// TestInsertINT inserts INT of every version, NPT and marking into UDP and TCP (with and
// without options) over IPv4 (with and without options) and IPv6, behind 0-2 VLAN tags. The
// result's checksums verify, a Decoder reads back exactly the hops, the INT header and the
// original 5-tuple, and stripping INT again gives the original frame byte for byte.
func TestInsertINT(t *testing.T) {
	for _, c := range insertCases {
		e, err := NewEncoder(c.config())
		if err != nil {
			t.Fatal(err)
		}
		d := mustDecoder(t, c.config())
		g := &gen{r: rand.New(rand.NewPCG(29, uint64(len(c.name)))), cfg: c.config()}
		for _, v6 := range []bool{false, true} {
			for _, l4 := range []string{"udp", "tcp", "tcp+opts"} {
				if l4 != "udp" && !c.tcp {
					continue
				}
				for vlans := 0; vlans <= 2; vlans++ {
					name := fmt.Sprintf("%s/v6=%v/%s/vlans=%d", c.name, v6, l4, vlans)
					t.Run(name, func(t *testing.T) {
						for i := 0; i < 6; i++ {
							f := frames.Frame{V6: v6, Proto: 17, VLANs: vlans, TOS: uint8(g.n(256)),
								Sport: uint16(1024 + g.n(60000)), Dport: uint16(1024 + g.n(4000)),
								Payload: make([]byte, g.n(120))}
							for j := range f.Payload {
								f.Payload[j] = byte(g.u32())
							}
							if l4 != "udp" {
								f.Proto = 6
							}
							if l4 == "tcp+opts" {
								f.TCPOpts = 4 * (1 + g.n(10))
							}
							if !v6 && i%2 == 1 {
								f.IPOpts = 4 * (1 + g.n(10))
							}
							f.NoUDP = !v6 && i%3 == 2
							insertOne(t, e, d, c, f, g)
						}
					})
				}
			}
		}
	}
}

func insertOne(t *testing.T, e *Encoder, d *Decoder, c insertCase, f frames.Frame, g *gen) {
	t.Helper()
	orig := f.Build()
	frame := append([]byte(nil), orig...)
	var r telemetry.Report
	g.intStack(&r, c.v, 300, false)
	r.Inner.EncapArg = c.npt
	if c.hostINT {
		r.INT.ShimType, r.INT.SourceSeq = 3, g.u32()
	}
	m := Marking{DSCP: insertMarkDSCP}
	if c.port {
		m = Marking{Port: insertMarkPort}
	}
	out, err := e.InsertINT([]byte("keep"), frame, &r, m)
	if err != nil {
		t.Fatalf("%+v: %v", f, err)
	}
	if !bytes.Equal(frame, orig) {
		t.Fatal("InsertINT changed its input")
	}
	if string(out[:4]) != "keep" {
		t.Fatal("InsertINT did not append to dst")
	}
	out = out[4:]
	checkSums(t, out)

	ip, _, _, _ := frames.Headers(out)
	tos := out[ip+1]
	if f.V6 {
		tos = out[ip]<<4 | out[ip+1]>>4
	}
	wantTOS := insertMarkDSCP<<2 | f.TOS&3
	if c.port {
		wantTOS = f.TOS
	}
	if tos != wantTOS {
		t.Errorf("TOS 0x%02x, want 0x%02x", tos, wantTOS)
	}

	rs, errs := d.DecodeAll(InputINTMD, out)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("%+v: decoded %d reports, errors %v\n% x", f, len(rs), errs, out)
	}
	got := &rs[0]
	if got.INT != r.INT {
		t.Errorf("INT header\n got %+v\nwant %+v", got.INT, r.INT)
	}
	if got.NHops != r.NHops || !slices.Equal(got.HopList(), r.HopList()) {
		t.Errorf("hops\n got %+v\nwant %+v", got.HopList(), r.HopList())
	}
	want := telemetry.FlowKey{IPv6: f.V6, Proto: f.Proto, SrcPort: f.Sport, DstPort: f.Dport}
	if f.V6 {
		want.Src, want.Dst = frames.Src6, frames.Dst6
	} else {
		want.SetIPv4(frames.Src4, frames.Dst4)
	}
	if c.port && c.v == telemetry.INT05 && got.INT.OrigPort != f.Dport {
		t.Errorf("v0.5 tail port %d, want %d", got.INT.OrigPort, f.Dport)
	}
	if got.Flow != want {
		t.Errorf("flow\n got %+v\nwant %+v", got.Flow, want)
	}

	back, ok := stripINT(out, insertMarkPort, c.before || c.hostINT)
	if !ok || !bytes.Equal(back, orig) {
		t.Errorf("strip(insert(frame)) differs from frame\n got % x\nwant % x", back, orig)
	}
}

// TestInsertINTErrors: frames InsertINT cannot put INT into, and markings that do not fit
// the format, are errors that say why; dst is returned as it was.
func TestInsertINTErrors(t *testing.T) {
	udp4 := frames.Frame{Proto: 17, Sport: 1, Dport: 2, Payload: []byte("x")}
	udp6 := udp4
	udp6.V6 = true
	tcp4 := udp4
	tcp4.Proto = 6
	ipv6 := func(next uint8) []byte {
		b := udp6.Build()
		b[14+6] = next
		return b
	}
	v2 := func(npt uint16) *telemetry.Report {
		r := &telemetry.Report{INT: telemetry.INTHeader{Version: telemetry.INT2x, HopML: 1, Bitmap: 0x8000}}
		r.Inner.EncapArg = npt
		return r
	}
	frag := udp4.Build()
	frag[14+6] = 0x20 // more fragments
	icmp := udp4.Build()
	icmp[14+9] = 1
	arp := udp4.Build()
	arp[12], arp[13] = 0x08, 0x06
	vlan3 := append(append([]byte(nil), udp4.Build()[:12]...), 0x81, 0, 0, 1, 0x81, 0, 0, 2, 0x81, 0, 0, 3, 0x08, 0)
	short := udp4.Build()
	short = short[:len(short)-1]
	udpLen := udp4.Build()
	udpLen[14+20+5] = 8
	for _, tc := range []struct {
		name  string
		frame []byte
		r     *telemetry.Report
		m     Marking
		want  string
	}{
		{"ipv6 hop-by-hop", ipv6(0), v2(0), Marking{DSCP: 0x17}, "IPv6 extension header 0"},
		{"ipv6 routing", ipv6(43), v2(0), Marking{DSCP: 0x17}, "IPv6 extension header 43"},
		{"ipv6 fragment", ipv6(44), v2(0), Marking{DSCP: 0x17}, "IPv6 fragment header"},
		{"ipv4 fragment", frag, v2(0), Marking{DSCP: 0x17}, "an IPv4 fragment"},
		{"icmp", icmp, v2(0), Marking{DSCP: 0x17}, "IP protocol 1 is not UDP or TCP"},
		{"arp", arp, v2(0), Marking{DSCP: 0x17}, "EtherType 0x0806 is not IPv4 or IPv6"},
		{"three vlans", vlan3, v2(0), Marking{DSCP: 0x17}, "more than 2 VLAN tags"},
		{"truncated", short, v2(0), Marking{DSCP: 0x17}, "IP length 29 does not fit the 28 bytes"},
		{"udp length", udpLen, v2(0), Marking{DSCP: 0x17}, "UDP length 8 is not the IP payload's 9"},
		{"npt1 over tcp", tcp4.Build(), v2(1), Marking{Port: 5555}, "port marking is for UDP"},
		{"npt0 with a port", udp4.Build(), v2(0), Marking{Port: 5555}, "v2.x NPT 0 is DSCP-marked"},
		{"npt1 without a port", udp4.Build(), v2(1), Marking{DSCP: 0x17}, "v2.x NPT 1 is port-marked"},
		{"npt3", udp4.Build(), v2(3), Marking{Port: 5555}, "v2.x NPT 3"},
		{"v1.0 with a port", udp4.Build(), &telemetry.Report{INT: telemetry.INTHeader{Version: telemetry.INT10}}, Marking{Port: 5555}, "v1.0 is DSCP-marked"},
		{"host-int without instructions", udp4.Build(), &telemetry.Report{INT: telemetry.INTHeader{Version: telemetry.INT05, ShimType: 3}}, Marking{DSCP: 0x17}, "host-int's shim needs a non-empty instruction bitmap"},
		{"dscp of 7 bits", udp4.Build(), v2(0), Marking{DSCP: 0x40}, "DSCP 0x40 is more than 6 bits"},
	} {
		e, _ := NewEncoder(DefaultConfig())
		dst, err := e.InsertINT([]byte("dst"), tc.frame, tc.r, tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "wire: insert int: ") {
			t.Errorf("%s: error %v, want one that says %q", tc.name, err, tc.want)
		}
		if string(dst) != "dst" {
			t.Errorf("%s: dst %q, want it as it was", tc.name, dst)
		}
	}
}

// FuzzInsertINT inserts INT into arbitrary frames: InsertINT never panics, and what it
// accepts has lengths and checksums that verify, decodes to the INT header and hops it was
// given, and strips back to the frame with only its checksums made valid.
func FuzzInsertINT(f *testing.F) {
	g := &gen{r: rand.New(rand.NewPCG(29, 29)), cfg: DefaultConfig()}
	for i := 0; i < 48; i++ {
		tf := frames.Frame{V6: i%2 == 1, Proto: []uint8{17, 6}[i/2%2], VLANs: i % 3, TOS: uint8(g.u32()),
			Sport: uint16(g.u32()), Dport: uint16(1024 + g.n(3000)), TCPOpts: 4 * (i / 4 % 3), Payload: make([]byte, i)}
		if !tf.V6 {
			tf.IPOpts = 4 * (i / 8 % 2)
		}
		f.Add(tf.Build(), uint8(i), uint32(i))
	}
	f.Fuzz(func(t *testing.T, frame []byte, shape uint8, seed uint32) {
		c := insertCases[int(shape)%len(insertCases)]
		e, _ := NewEncoder(c.config())
		g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 1)), cfg: c.config()}
		var r telemetry.Report
		g.intStack(&r, c.v, 300, false)
		r.Inner.EncapArg = c.npt
		if c.hostINT {
			r.INT.ShimType = 3
		}
		m := Marking{DSCP: insertMarkDSCP}
		if c.port {
			m = Marking{Port: insertMarkPort}
		}
		out, err := e.InsertINT(nil, frame, &r, m)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "wire: insert int: ") && !strings.HasPrefix(err.Error(), "wire: encode: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		// What follows the IP packet (Ethernet padding) is kept after it.
		ip, l4, v6, proto := frames.Headers(out)
		end := ip + int(b16.Uint16(out[ip+2:]))
		if v6 {
			end = l4 + int(b16.Uint16(out[ip+4:]))
		}
		n := len(frame) - (len(out) - end) // the original IP packet's end
		if end > len(out) || n < 0 || !bytes.Equal(out[end:], frame[n:]) {
			t.Fatalf("the packet's end %d in %d bytes: what follows it is not the frame's", end, len(out))
		}
		checkSums(t, out[:end])
		if proto == 17 {
			if p := b16.Uint16(out[l4+2:]); p == 4790 || p == 6081 || !c.port && p == insertMarkPort {
				return // a tunnel's port (or the INT port) that the decoder reads as such
			}
		}
		rs, errs := mustDecoder(t, c.config()).DecodeAll(InputINTMD, out)
		if len(errs) != 0 || len(rs) != 1 || rs[0].INT != r.INT || !slices.Equal(rs[0].HopList(), r.HopList()) {
			t.Fatalf("decoded %d reports (errors %v), INT %+v; want %+v", len(rs), errs, rs, r.INT)
		}
		back, ok := stripINT(out[:end], insertMarkPort, c.before || c.hostINT)
		if !ok || len(back) != n {
			t.Fatalf("strip: %v, %d bytes; want %d", ok, len(back), n)
		}
		// Only the checksums may differ: InsertINT computes them anew.
		sums := map[int]bool{}
		ipB, l4B, v6B, protoB := frames.Headers(back)
		if !v6B {
			sums[ipB+10], sums[ipB+11] = true, true
		}
		at := map[uint8]int{6: 16, 17: 6}[protoB]
		sums[l4B+at], sums[l4B+at+1] = true, true
		for i := range back {
			if back[i] != frame[i] && !sums[i] {
				t.Fatalf("strip(insert(frame)) differs at byte %d: % x, want % x", i, back, frame[:n])
			}
		}
	})
}
