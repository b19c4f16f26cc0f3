package wire

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// The property every encoder and decoder pair must keep: for any report the decoders can
// produce, decode(encode(r)) equals r. gen builds such reports at random, covering every
// report version, inner packet shape, INT version, encapsulation and field combination.

// roundtripConfig enables the encapsulations that have no default codepoint.
func roundtripConfig() Config {
	c := DefaultConfig()
	c.INTPort = 5555
	c.GREProtocol = 0x88b5
	return c
}

type gen struct {
	r   *rand.Rand
	cfg Config
}

func (g *gen) u32() uint32 { return g.r.Uint32() }
func (g *gen) n(k int) int { return g.r.IntN(k) }
func (g *gen) coin() bool  { return g.r.IntN(2) == 0 }

// notOnes returns a random value of the given width that is not all ones.
func (g *gen) notOnes(bits uint) uint64 {
	max := uint64(1)<<bits - 1
	if bits == 64 {
		max = ^uint64(0)
	}
	return g.r.Uint64N(max) // [0, max): never all ones
}

// hop fills the fields an INT bitmap of version v can carry; some are left absent, as a
// node that cannot provide a value writes all ones.
func (g *gen) hop(h *telemetry.Hop, v telemetry.INTVersion, bitmap uint16, quirk bool) {
	*h = telemetry.Hop{}
	tsBits := uint(32)
	if v == telemetry.INT2x {
		tsBits = 64
	}
	qid := uint16(g.notOnes(8))
	if quirk {
		qid = uint16(g.notOnes(16)) // INTCollector's queue id is 16 bits
	}
	present := func() bool { return g.n(8) != 0 }
	for bit := 0; bit < 16; bit++ {
		if bitmap&(0x8000>>bit) == 0 {
			continue
		}
		switch bit {
		case 0:
			if present() {
				h.NodeID, h.Fields = uint32(g.notOnes(32)), h.Fields|telemetry.FNodeID
			}
		case 1:
			if present() {
				h.IngressPort, h.Fields = uint32(g.notOnes(16)), h.Fields|telemetry.FIngressPort
			}
			if present() {
				h.EgressPort, h.Fields = uint32(g.notOnes(16)), h.Fields|telemetry.FEgressPort
			}
		case 2:
			if present() {
				h.HopLatency, h.Fields = uint32(g.notOnes(32)), h.Fields|telemetry.FHopLatency
			}
		case 3:
			if present() {
				h.QueueID, h.Fields = qid, h.Fields|telemetry.FQueueID
			}
			occBits := uint(24)
			if quirk {
				occBits = 16
			}
			if present() {
				h.QueueOccupancy, h.Fields = uint32(g.notOnes(occBits)), h.Fields|telemetry.FQueueOccupancy
			}
		case 4:
			if present() {
				h.IngressTS, h.Fields = g.notOnes(tsBits), h.Fields|telemetry.FIngressTS
			}
		case 5:
			if present() {
				h.EgressTS, h.Fields = g.notOnes(tsBits), h.Fields|telemetry.FEgressTS
			}
		case 6:
			if v == telemetry.INT05 {
				if bitmap&0x1000 == 0 && present() { // share the queue id with bit 3
					h.QueueID, h.Fields = qid, h.Fields|telemetry.FQueueID
				} else if h.Fields&telemetry.FQueueID == 0 && bitmap&0x1000 != 0 {
					// bit 3 left the queue id absent; bit 6 must agree
				}
				if present() {
					h.QueueCongestion, h.Fields = uint32(g.notOnes(24)), h.Fields|telemetry.FQueueCongestion
				}
				continue
			}
			w := uint(32)
			if quirk {
				w = 16
			}
			if present() {
				h.L2IngressPort, h.Fields = uint32(g.notOnes(w)), h.Fields|telemetry.FL2IngressPort
			}
			if present() {
				h.L2EgressPort, h.Fields = uint32(g.notOnes(w)), h.Fields|telemetry.FL2EgressPort
			}
		case 7:
			if present() {
				h.TxUtil, h.Fields = uint32(g.notOnes(32)), h.Fields|telemetry.FTxUtil
			}
		case 8:
			if v != telemetry.INT2x {
				continue
			}
			if present() {
				h.BufferID, h.Fields = uint8(g.notOnes(8)), h.Fields|telemetry.FBufferID
			}
			if present() {
				h.BufferOccupancy, h.Fields = uint32(g.notOnes(24)), h.Fields|telemetry.FBufferOccupancy
			}
		}
	}
}

// bitmap picks instruction bits valid for version v.
func (g *gen) bitmap(v telemetry.INTVersion) uint16 {
	var valid uint16
	switch v {
	case telemetry.INT05:
		valid = 0xff00 | 0x00f0 // bits 0-7 defined, 8-11 reserved (4 bytes each)
	case telemetry.INT10:
		valid = 0xff00 | 0x0001 // bits 0-7 and the checksum complement
	default:
		valid = 0xff80 | 0x0001 // bits 0-8 and the checksum complement
	}
	return uint16(g.u32()) & valid
}

// intStack fills r.INT and appends nhops stack hops.
func (g *gen) intStack(r *telemetry.Report, v telemetry.INTVersion, maxBytes int, mx bool) {
	in := &r.INT
	in.Version = v
	in.Bitmap = g.bitmap(v)
	quirk := g.cfg.Quirks.INTCollector && v == telemetry.INT10
	var d Decoder
	d.cfg = g.cfg
	rd := Reader{d: &d}
	need := rd.hopPlan(v, in.Bitmap).size
	hs := need
	switch v {
	case telemetry.INT05:
		in.Flags = uint8(g.n(16))
		in.MaxHops = uint8(g.n(256))
	case telemetry.INT10:
		in.Flags = uint8(g.n(32))
		// v1.0 has no domain-specific metadata: HopML is exactly the bitmap's items.
		in.HopML = uint8(hs / 4)
		in.RemHops = uint8(g.n(256))
	case telemetry.INT2x:
		in.Flags = uint8(g.n(16))
		in.DSID, in.DSInstr, in.DSFlags = uint16(g.u32()), uint16(g.u32()), uint16(g.u32())
		if mx {
			in.MX = true
			in.SourceDS = uint8(g.n(4))
			return
		}
		hs += 4 * g.n(3)
		in.HopML = uint8(hs / 4)
		in.RemHops = uint8(g.n(256))
		if hs > 4 {
			in.SourceDS = uint8(g.n(hs / 4))
		}
	}
	if hs == 0 {
		if v == telemetry.INT2x {
			in.SourceDS = 0
		}
		return
	}
	room := telemetry.MaxHops - int(r.NHops)
	if byBytes := (maxBytes - 4*int(in.SourceDS)) / hs; byBytes < room {
		room = byBytes
	}
	n := g.n(room + 1)
	if v == telemetry.INT10 && hs > 4 && g.n(4) == 0 {
		in.Erratum = true
	}
	for i := 0; i < n; i++ {
		g.hop(r.AddHop(), v, in.Bitmap, quirk)
	}
}

func (g *gen) addr(k *telemetry.FlowKey, v6 bool) {
	k.IPv6 = v6
	if v6 {
		for i := range k.Src {
			k.Src[i], k.Dst[i] = byte(g.u32()), byte(g.u32())
		}
		k.Src[0], k.Dst[0] = 0x20, 0x20 // not IPv4-mapped
		return
	}
	k.SetIPv4([]byte{byte(g.u32()), byte(g.u32()), byte(g.u32()), 1}, []byte{10, byte(g.u32()), byte(g.u32()), 2})
}

// plainPorts returns a port that no encapsulation claims.
func (g *gen) plainPort() uint16 {
	for {
		p := uint16(g.u32())
		if p != g.cfg.GPEPort && p != g.cfg.GenevePort && p != g.cfg.INTPort {
			return p
		}
	}
}

// inner fills r.Inner and r.Flow for a packet starting at link, with INT when withINT.
func (g *gen) inner(r *telemetry.Report, link telemetry.LinkType, withINT bool) {
	in := &r.Inner
	in.Link = link
	if link == telemetry.LinkEthernet {
		in.NVLANs = uint8(g.n(3))
		for i := 0; i < int(in.NVLANs); i++ {
			in.VLANs[i] = uint16(g.u32())
		}
		if g.n(10) == 0 { // not IP at all
			in.Trailer = uint16(g.n(40))
			return
		}
	}
	v6 := link == telemetry.LinkIPv6 || link == telemetry.LinkEthernet && g.coin()
	r.Has |= telemetry.HasFlow
	k := &r.Flow
	g.addr(k, v6)
	if v6 {
		in.IPOptLen = uint16(8 * g.n(4))
	} else {
		in.IPOptLen = uint16(4 * g.n(11))
	}
	in.Trailer = uint16(g.n(48))
	if !withINT {
		switch g.n(3) {
		case 0:
			k.Proto = protoTCP
			in.TCPOpts = uint8(4 * g.n(11))
		case 1:
			k.Proto = protoUDP
		default:
			k.Proto = 1 // ICMP: no ports
		}
		if k.Proto != 1 {
			k.SrcPort, k.DstPort = g.plainPort(), g.plainPort()
		}
		in.DSCP = uint8(g.n(32)) << 1 // even: no default DSCP match, so nothing commits
		return
	}
	versions := []telemetry.INTVersion{telemetry.INT05, telemetry.INT10, telemetry.INT2x}
	switch g.n(6) {
	case 0, 1: // TCP/UDP shim
		v := versions[g.n(3)]
		if g.coin() {
			k.Proto = protoTCP
			in.Encap = telemetry.EncapTCP
			in.TCPOpts = uint8(4 * g.n(6))
		} else {
			k.Proto = protoUDP
			in.Encap = telemetry.EncapUDP
		}
		k.SrcPort, k.DstPort = g.plainPort(), g.plainPort()
		in.DSCP = 0x17
		if g.coin() {
			in.DSCP = uint8(g.n(32)) << 1 // not marked: found by probing the shim
		}
		mx := v == telemetry.INT2x && g.n(4) == 0
		r.INT.ShimType = 1
		if mx {
			r.INT.ShimType = 3
		}
		switch v {
		case telemetry.INT05:
			r.INT.OrigProto, r.INT.OrigPort, r.INT.ShimExtra = uint8(g.u32()), uint16(g.u32()), uint8(g.u32())
		case telemetry.INT10:
			r.INT.ShimExtra = uint8(g.u32())
		default:
			r.INT.ShimExtra = uint8(g.n(64))
		}
		g.intStack(r, v, 900, mx)
	case 2: // v2.x UDP INT port, NPT 1 or 2
		in.Encap = telemetry.EncapUDPPort
		in.EncapArg = uint16(1 + g.n(2))
		in.DSCP = uint8(g.n(64))
		r.INT.ShimType = 1
		if in.EncapArg == 1 {
			k.Proto = protoUDP
			k.SrcPort, k.DstPort = uint16(g.u32()), uint16(g.u32())
			r.INT.OrigPort = k.DstPort
		} else {
			k.Proto = []uint8{protoTCP, protoUDP}[g.n(2)]
			k.SrcPort, k.DstPort = uint16(g.u32()), uint16(g.u32())
			r.INT.OrigProto = k.Proto
		}
		g.intStack(r, telemetry.INT2x, 900, false)
	default: // tunnels
		in.DSCP = uint8(g.n(64))
		var v telemetry.INTVersion
		maxBytes := 900
		switch g.n(3) {
		case 0:
			in.Encap = telemetry.EncapGPE
			in.EncapArg = uint16(g.cfg.GPENextProtocols[g.n(len(g.cfg.GPENextProtocols))])
			v = versions[g.n(3)]
			if v == telemetry.INT2x {
				r.INT.ShimExtra = uint8(g.n(2))
			}
			r.INT.ShimType = 1
		case 1:
			in.Encap = telemetry.EncapGeneve
			in.EncapArg = 0x0103
			v = versions[1+g.n(2)]
			maxBytes = 124 - 12
			r.INT.ShimType = 1
		default:
			in.Encap = telemetry.EncapGRE
			in.EncapArg = uint16(1 + g.n(4))
			v = telemetry.INT2x
			r.INT.ShimExtra = uint8(g.n(2))
			r.INT.ShimType = 1
		}
		mx := v == telemetry.INT2x && g.n(4) == 0
		if mx {
			r.INT.ShimType = 3
		}
		g.intStack(r, v, maxBytes, mx)
		outer := telemetry.FlowKey{}
		g.addr(&outer, v6)
		if in.Encap == telemetry.EncapGRE {
			outer.Proto = protoGRE
		} else {
			outer.Proto, outer.SrcPort = protoUDP, uint16(g.u32())
			outer.DstPort = g.cfg.GPEPort
			if in.Encap == telemetry.EncapGeneve {
				outer.DstPort = g.cfg.GenevePort
			}
		}
		nested := telemetry.LinkType(g.n(4))
		if nested == telemetry.LinkNone {
			*k = outer
			in.Trailer = 0
			return
		}
		in.Nested = nested
		in.Tunnel = outer
		g.addr(k, nested == telemetry.LinkIPv6 || nested == telemetry.LinkEthernet && g.coin())
		k.Proto = []uint8{protoTCP, protoUDP}[g.n(2)]
		k.SrcPort, k.DstPort = uint16(g.u32()), uint16(g.u32())
	}
}

// report builds a random report of format f.
func (g *gen) report(f telemetry.Format) telemetry.Report {
	var r telemetry.Report
	r.Format = f
	switch f {
	case telemetry.FormatTR05:
		r.TR.NProto = []uint8{0, 1, 2, 4}[g.n(4)]
		r.Flags = telemetry.Flags(g.n(8))
		r.HWID, r.Seq, r.IngressTS = uint8(g.n(64)), g.u32(), g.notOnes(32)
		r.Has = telemetry.HasSeq | telemetry.HasIngressTS
		link := telemetry.LinkEthernet
		if r.TR.NProto == 1 || r.TR.NProto == 2 {
			r.NodeID = uint32(g.notOnes(32))
			r.Has |= telemetry.HasNodeID
			r.ReporterHop = true
			h := r.AddHop()
			h.NodeID, h.IngressTS = r.NodeID, r.IngressTS
			h.Fields = telemetry.FNodeID | telemetry.FIngressTS
			if g.coin() {
				h.IngressPort, h.Fields = uint32(g.notOnes(16)), h.Fields|telemetry.FIngressPort
			}
			if g.coin() {
				h.EgressPort, h.Fields = uint32(g.notOnes(16)), h.Fields|telemetry.FEgressPort
			}
			if g.coin() {
				h.QueueID, h.Fields = uint16(g.notOnes(8)), h.Fields|telemetry.FQueueID
			}
			if r.TR.NProto == 1 {
				r.DropReason = uint8(g.u32())
				r.Has |= telemetry.HasDropReason
			} else {
				if g.coin() {
					h.QueueOccupancy, h.Fields = uint32(g.notOnes(24)), h.Fields|telemetry.FQueueOccupancy
				}
				if g.coin() {
					h.EgressTS, h.Fields = g.notOnes(32), h.Fields|telemetry.FEgressTS
					h.HopLatency, h.Fields = uint32(h.EgressTS)-uint32(h.IngressTS), h.Fields|telemetry.FHopLatency
				}
			}
		}
		if r.TR.NProto == 4 {
			r.TR.SinkNodeID = g.u32()
			link = telemetry.LinkIPv4
		}
		if g.n(8) != 0 {
			g.inner(&r, link, r.Flags&telemetry.FlagFlow != 0 && g.coin())
		}
	case telemetry.FormatTR10:
		r.TR.Ver = 1
		r.TR.NProto = uint8(g.n(3))
		r.TR.MDBits = uint16(g.n(64))
		r.Flags = telemetry.Flags(g.n(8))
		r.HWID, r.Seq, r.IngressTS, r.NodeID = uint8(g.n(64)), g.u32(), g.notOnes(32), uint32(g.notOnes(32))
		r.Has = telemetry.HasSeq | telemetry.HasIngressTS | telemetry.HasNodeID
		if md := r.TR.MDBits; md != 0 {
			r.ReporterHop = true
			h := r.AddHop()
			h.NodeID, h.IngressTS = r.NodeID, r.IngressTS
			h.Fields = telemetry.FNodeID | telemetry.FIngressTS
			qid := uint16(g.notOnes(8))
			if md&0x20 != 0 {
				h.IngressPort, h.EgressPort = uint32(g.notOnes(16)), uint32(g.notOnes(16))
				h.Fields |= telemetry.FIngressPort | telemetry.FEgressPort
			}
			if md&0x10 != 0 {
				h.HopLatency, h.Fields = g.u32()>>1, h.Fields|telemetry.FHopLatency
			}
			if md&0x08 != 0 {
				h.QueueID, h.QueueOccupancy = qid, uint32(g.notOnes(24))
				h.Fields |= telemetry.FQueueID | telemetry.FQueueOccupancy
			}
			if md&0x04 != 0 {
				h.EgressTS, h.Fields = g.notOnes(32), h.Fields|telemetry.FEgressTS
			}
			if md&0x02 != 0 {
				h.QueueID, h.Fields = qid, h.Fields|telemetry.FQueueID
				r.DropReason = uint8(g.u32())
				r.Has |= telemetry.HasDropReason
			}
			if md&0x01 != 0 {
				h.TxUtil, h.Fields = g.u32()>>1, h.Fields|telemetry.FTxUtil
			}
		}
		if g.n(8) != 0 {
			g.inner(&r, telemetry.LinkType(1+r.TR.NProto), r.Flags&telemetry.FlagFlow != 0 && g.coin())
		}
	case telemetry.FormatTR20:
		r.TR.Ver = 2
		r.HWID, r.Seq, r.NodeID = uint8(g.n(64)), g.u32()&0x3fffff, g.u32()
		r.Has = telemetry.HasSeq | telemetry.HasNodeID
		r.Flags = telemetry.Flags(g.n(16))
		r.TR.RepType = uint8(g.n(2))
		if r.TR.RepType == 1 {
			r.TR.MDBits = uint16(g.u32())
			r.TR.DSID, r.TR.DSMdBits, r.TR.DSMdStatus = uint16(g.u32()), uint16(g.u32()), uint16(g.u32())
			r.TR.DSMdLen = uint8(g.n(4))
			if r.TR.MDBits&^0x8000 != 0 {
				r.ReporterHop = true
				h := r.AddHop()
				g.hop(h, telemetry.INT2x, r.TR.MDBits&0x7f80|0x8000, false)
				h.NodeID, h.Fields = r.NodeID, h.Fields|telemetry.FNodeID
				if r.TR.MDBits&0x0001 != 0 {
					if r.TR.MDBits&0x1000 == 0 || h.Fields&telemetry.FQueueID == 0 {
						h.Fields |= telemetry.FQueueID // bit 15 always writes the queue id
						if r.TR.MDBits&0x1000 == 0 {
							h.QueueID = uint16(g.notOnes(8))
						}
					}
					r.DropReason = uint8(g.u32())
					r.Has |= telemetry.HasDropReason
				}
			}
		}
		r.TR.NProto = []uint8{0, 1, 3, 4, 5}[g.n(5)]
		var link telemetry.LinkType
		switch r.TR.NProto {
		case 1:
			link = telemetry.LinkType(1 + g.n(3))
		case 3, 4, 5:
			link = telemetry.LinkType(r.TR.NProto - 2)
		}
		if link != telemetry.LinkNone {
			g.inner(&r, link, r.Flags&telemetry.FlagFlow != 0 && g.coin())
		}
	case telemetry.FormatINTMD:
		g.inner(&r, telemetry.LinkEthernet, true)
		if r.Has&telemetry.HasFlow == 0 || r.Inner.Encap == telemetry.EncapNone {
			return g.report(f) // a raw INT-MD packet must carry INT
		}
	}
	return r
}

// align pads a TR v2.0 report's inner packet to whole words, as the format requires: the
// pad bytes come back from the decoder as trailer bytes.
func align(t *testing.T, e *Encoder, r *telemetry.Report) {
	if r.Format != telemetry.FormatTR20 || r.Inner.Link == telemetry.LinkNone {
		return
	}
	b, err := e.appendInner(nil, r, stack(r))
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	r.Inner.Trailer += uint16((4 - len(b)%4) % 4)
	if r.TR.NProto == 1 && len(b)+3 > 255*4 { // a TLV holds at most 255 words
		r.TR.NProto = uint8(r.Inner.Link) + 2
	}
}

// diff names the fields in which two reports differ, for readable failures.
func diff(a, b *telemetry.Report) string {
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := 0; i < va.NumField(); i++ {
		name := va.Type().Field(i).Name
		switch name {
		case "Hops", "Labels", "RecvTime":
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s: got %+v want %+v", name, va.Field(i), vb.Field(i)))
		}
	}
	for i := 0; i < int(min(a.NHops, b.NHops)); i++ {
		if a.Hops[i] != b.Hops[i] {
			out = append(out, fmt.Sprintf("hop %d: got %+v\n        want %+v", i, a.Hops[i], b.Hops[i]))
		}
	}
	return strings.Join(out, "\n")
}

func TestRoundTrip(t *testing.T) {
	seen := map[string]int{}
	for _, quirk := range []bool{false, true} {
		cfg := roundtripConfig()
		cfg.Quirks.INTCollector = quirk
		dec := mustDecoder(t, cfg)
		enc, err := NewEncoder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		g := &gen{r: rand.New(rand.NewPCG(1, uint64(len(fmt.Sprint(quirk))))), cfg: cfg}
		var rd Reader
		var got telemetry.Report
		for _, f := range []telemetry.Format{telemetry.FormatTR05, telemetry.FormatTR10, telemetry.FormatTR20, telemetry.FormatINTMD} {
			for i := 0; i < 3000; i++ {
				want := g.report(f)
				align(t, enc, &want)
				b, err := enc.Append(nil, &want)
				if err != nil {
					t.Fatalf("%v #%d: encode: %v\n%+v", f, i, err, want.INT)
				}
				in := InputReport
				if f == telemetry.FormatINTMD {
					in = InputINTMD
				}
				rd.Reset(dec, in, b)
				if err := rd.Next(&got); err != nil {
					t.Fatalf("%v #%d (quirk %v): decode: %v\nbytes %x\nwant inner %+v\nint %+v", f, i, quirk, err, b, want.Inner, want.INT)
				}
				if !got.Equal(&want) {
					t.Fatalf("%v #%d (quirk %v): round trip differs\nbytes %x\n%s", f, i, quirk, b, diff(&got, &want))
				}
				if err := rd.Next(&got); err != Done {
					t.Fatalf("%v #%d: a second report: %v", f, i, err)
				}
				seen[fmt.Sprintf("%v/%v/%v/mx=%v", f, want.Inner.Encap, want.INT.Version, want.INT.MX)]++
			}
		}
	}
	// The generator must reach every encapsulation with every INT version it allows.
	for _, f := range []string{"tr0.5", "tr1.0", "tr2.0", "int-md"} {
		for _, c := range []string{"tcp/0.5", "udp/1.0", "tcp/2.x", "udp-port/2.x", "vxlan-gpe/0.5", "vxlan-gpe/1.0", "vxlan-gpe/2.x", "geneve/1.0", "geneve/2.x", "gre/2.x"} {
			if seen[f+"/"+c+"/mx=false"] == 0 {
				t.Errorf("no %s report with %s INT was generated", f, c)
			}
		}
		if seen[f+"/tcp/2.x/mx=true"]+seen[f+"/udp/2.x/mx=true"] == 0 {
			t.Errorf("no %s report with INT-MX was generated", f)
		}
	}
}

// TestRoundTripCoalesced packs several TR v2.0 reports into one datagram.
func TestRoundTripCoalesced(t *testing.T) {
	cfg := roundtripConfig()
	dec := mustDecoder(t, cfg)
	enc, _ := NewEncoder(cfg)
	g := &gen{r: rand.New(rand.NewPCG(7, 7)), cfg: cfg}
	var rd Reader
	var got telemetry.Report
	for i := 0; i < 500; i++ {
		n := 1 + g.n(16)
		rs := make([]telemetry.Report, n)
		for j := 0; j < len(rs); j++ {
			rs[j] = g.report(telemetry.FormatTR20)
			if b, _ := enc.Append(nil, &rs[j]); j < len(rs)-1 && len(b) > 8+4+254*4 {
				j-- // only the last report may run to the end with Report Length 0xFF
				continue
			}
			rs[j].HWID, rs[j].Seq, rs[j].NodeID = rs[0].HWID, rs[0].Seq, rs[0].NodeID
			if rs[j].ReporterHop {
				rs[j].Hops[0].NodeID = rs[0].NodeID
			}
			align(t, enc, &rs[j])
		}
		b, err := enc.AppendBatch(nil, rs)
		if err != nil {
			t.Fatal(err)
		}
		rd.Reset(dec, InputReport, b)
		for j := range rs {
			if err := rd.Next(&got); err != nil {
				t.Fatalf("#%d report %d: %v", i, j, err)
			}
			if !got.Equal(&rs[j]) {
				t.Fatalf("#%d report %d differs\n%s", i, j, diff(&got, &rs[j]))
			}
		}
		if err := rd.Next(&got); err != Done {
			t.Fatalf("#%d: extra report: %v", i, err)
		}
	}
}
