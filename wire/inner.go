package wire

import "github.com/intake-int/intake/telemetry"

// This file walks the data packet inside a report (or a raw INT-MD packet): Ethernet with
// VLAN/QinQ, IPv4 with options, IPv6 with extension headers, TCP with options, UDP; finds
// the flow 5-tuple; and finds INT by the rules of docs/wire-formats.md: a DSCP match commits
// the decoder, a shim that validates at the L4 payload is accepted, the v2.x UDP INT port,
// VXLAN-GPE next protocols, Geneve option classes and a GRE protocol.

const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherTEB   = 0x6558 // transparent Ethernet bridging (Geneve/GRE carrying Ethernet)
	ether8021Q = 0x8100
	ether8021A = 0x88a8
	etherQinQ  = 0x9100

	protoTCP = 6
	protoUDP = 17
	protoGRE = 47
)

// ipInfo is what the IP walk learns beyond the 5-tuple.
type ipInfo struct {
	proto  uint8
	dscp   uint8
	optLen uint16
	frag   bool // not the first fragment: no L4 header
}

// parseIP parses an IPv4 or IPv6 header at b[off:], filling fk's addresses and protocol. It
// returns the offset of the L4 header.
func (rd *Reader) parseIP(b []byte, off, base int, v6 bool, fk *telemetry.FlowKey, info *ipInfo) (int, error) {
	p := b[off:]
	if !v6 {
		if len(p) < 20 {
			return 0, rd.fail(Truncated, "ipv4", "header", base+off, 0)
		}
		if p[0]>>4 != 4 {
			return 0, rd.fail(BadValue, "ipv4", "version", base+off, uint64(p[0]>>4))
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 {
			return 0, rd.fail(BadLength, "ipv4", "ihl", base+off, uint64(ihl/4))
		}
		if ihl > len(p) {
			return 0, rd.fail(Truncated, "ipv4", "options", base+off+20, 0)
		}
		info.dscp = p[1] >> 2
		info.proto = p[9]
		info.optLen = uint16(ihl - 20)
		info.frag = be.Uint16(p[6:])&0x1fff != 0
		fk.SetIPv4(p[12:16], p[16:20])
		fk.Proto = info.proto
		return off + ihl, nil
	}
	if len(p) < 40 {
		return 0, rd.fail(Truncated, "ipv6", "header", base+off, 0)
	}
	if p[0]>>4 != 6 {
		return 0, rd.fail(BadValue, "ipv6", "version", base+off, uint64(p[0]>>4))
	}
	info.dscp = (p[0]&0x0f)<<2 | p[1]>>6
	fk.IPv6 = true
	copy(fk.Src[:], p[8:24])
	copy(fk.Dst[:], p[24:40])
	next := p[6]
	pos := off + 40
	// Extension headers: each names the next; a bounded walk so a loop of them cannot spin.
	for i := 0; i < 8; i++ {
		var n int
		switch next {
		case 0, 43, 60, 135, 139, 140: // hop-by-hop, routing, destination, mobility, HIP, shim6
			if len(b) < pos+2 {
				return 0, rd.fail(Truncated, "ipv6 extension header", "length", base+pos, 0)
			}
			n = (int(b[pos+1]) + 1) * 8
		case 51: // AH: length in 4-byte units, minus 2
			if len(b) < pos+2 {
				return 0, rd.fail(Truncated, "ipv6 extension header", "length", base+pos, 0)
			}
			n = (int(b[pos+1]) + 2) * 4
		case 44: // fragment
			n = 8
			if len(b) >= pos+8 && be.Uint16(b[pos+2:])&0xfff8 != 0 {
				info.frag = true
			}
		default:
			info.proto = next
			fk.Proto = next
			info.optLen = uint16(pos - off - 40)
			return pos, nil
		}
		if len(b) < pos+n {
			return 0, rd.fail(Truncated, "ipv6 extension header", "length", base+pos, uint64(n))
		}
		next = b[pos]
		pos += n
	}
	return 0, rd.fail(TooMany, "ipv6 extension header", "next_header", base+pos, uint64(next))
}

// parseL4 parses a TCP or UDP header at b[off:] and returns the offset of its payload and
// the TCP options' length. Other protocols have no ports: it returns off.
func (rd *Reader) parseL4(b []byte, off, base int, proto uint8, fk *telemetry.FlowKey) (int, int, error) {
	p := b[off:]
	switch proto {
	case protoTCP:
		if len(p) < 20 {
			if len(p) >= 4 { // the ports are there: keep them for a report's flow
				fk.SrcPort, fk.DstPort = be.Uint16(p), be.Uint16(p[2:])
			}
			return 0, 0, rd.fail(Truncated, "tcp", "header", base+off, 0)
		}
		doff := int(p[12]>>4) * 4
		if doff < 20 {
			return 0, 0, rd.fail(BadLength, "tcp", "data_offset", base+off+12, uint64(doff/4))
		}
		if doff > len(p) {
			return 0, 0, rd.fail(Truncated, "tcp", "options", base+off+20, 0)
		}
		fk.SrcPort, fk.DstPort = be.Uint16(p), be.Uint16(p[2:])
		return off + doff, doff - 20, nil
	case protoUDP:
		if len(p) < 8 {
			return 0, 0, rd.fail(Truncated, "udp", "header", base+off, 0)
		}
		fk.SrcPort, fk.DstPort = be.Uint16(p), be.Uint16(p[2:])
		return off + 8, 0, nil
	}
	return off, 0, nil
}

// parseInner walks the packet b (starting at link layer link; base is its offset in the
// datagram) into r.Flow and r.Inner. With findINT it looks for INT and decodes it into r's
// hop list and r.INT. It reports whether INT was found. strict adds the checks of a packet
// that must be one (TR v0.5/v1.0, Reader.inner): an EtherType that is one, an IPv4 total
// length that holds the header.
func (rd *Reader) parseInner(r *telemetry.Report, b []byte, base int, link telemetry.LinkType, findINT, strict bool) (bool, error) {
	in := &r.Inner
	in.Link = link
	off := 0
	v6 := link == telemetry.LinkIPv6
	if link == telemetry.LinkEthernet {
		if len(b) < 14 {
			return false, rd.fail(Truncated, "ethernet", "ethertype", base+len(b), 0)
		}
		et := be.Uint16(b[12:])
		off = 14
		for et == ether8021Q || et == ether8021A || et == etherQinQ {
			if len(b) < off+4 {
				return false, rd.fail(Truncated, "vlan", "tci", base+off, 0)
			}
			if in.NVLANs == 2 {
				return false, rd.fail(TooMany, "vlan", "tci", base+off, 3)
			}
			in.VLANs[in.NVLANs] = be.Uint16(b[off:])
			in.NVLANs++
			et = be.Uint16(b[off+2:])
			off += 4
		}
		switch et {
		case etherIPv4:
		case etherIPv6:
			v6 = true
		default: // not IP (ARP, MPLS, ...): an inner packet without a flow
			// Below 0x0600 the field is an IEEE 802.3 length, of at least an LLC header
			// (3 bytes) and at most 1500; 0x05DD-0x05FF are neither length nor type.
			if strict && et < 0x0600 && (et < 3 || et > 1500) {
				return false, rd.fail(BadValue, "ethernet", "ethertype", base+off-2, uint64(et))
			}
			in.Trailer = trailer(len(b) - off)
			return false, nil
		}
	}
	var info ipInfo
	l4, err := rd.parseIP(b, off, base, v6, &r.Flow, &info)
	if err != nil {
		return false, err
	}
	if strict && !v6 {
		if tl := int(be.Uint16(b[off+2:])); tl < l4-off {
			return false, rd.fail(BadLength, "ipv4", "total_length", base+off+2, uint64(tl))
		}
	}
	r.Has |= telemetry.HasFlow
	in.DSCP, in.IPOptLen = info.dscp, info.optLen
	if info.frag {
		in.Trailer = trailer(len(b) - l4)
		return false, nil
	}
	pay, topts, err := rd.parseL4(b, l4, base, info.proto, &r.Flow)
	if err != nil {
		return false, err
	}
	in.TCPOpts = uint8(topts)
	if !findINT {
		in.Trailer = trailer(len(b) - pay)
		return false, nil
	}
	end, found, err := rd.findINT(r, b, base, l4, pay, info.proto)
	if err != nil || !found {
		in.Trailer = trailer(len(b) - pay)
		return false, err
	}
	in.Trailer = trailer(len(b) - end)
	return true, nil
}

// findINT looks for INT in a packet whose L4 header starts at l4 and payload at pay. It
// returns the offset just past the INT data (and past any packet nested in a tunnel).
func (rd *Reader) findINT(r *telemetry.Report, b []byte, base, l4, pay int, proto uint8) (int, bool, error) {
	d := rd.d
	in := &r.Inner
	switch proto {
	case protoUDP:
		switch dport := r.Flow.DstPort; {
		case d.gpePort != 0 && dport == d.gpePort:
			return rd.findGPE(r, b, base, pay)
		case d.genPort != 0 && dport == d.genPort:
			return rd.findGeneve(r, b, base, pay)
		case d.intPort != 0 && dport == d.intPort:
			in.Encap = telemetry.EncapUDPPort
			n, err := rd.parseShimL4(r, b[pay:], base+pay)
			if err != nil {
				return 0, false, err
			}
			end, err := rd.restoreNPT(r, b, base, pay, pay+n, proto)
			if err != nil {
				return 0, false, err
			}
			return end, true, nil
		}
	case protoGRE:
		if d.greProto != 0 {
			return rd.findGRE(r, b, base, l4)
		}
		return 0, false, nil
	case protoTCP:
		if d.cfg.TCPShimBeforeOptions || d.cfg.Quirks.HostINT {
			pay = l4 + 20
		}
	default:
		return 0, false, nil
	}
	committed := false
	for i := 0; i < d.dscpN; i++ {
		if m := d.dscp[i]; in.DSCP&m.Mask == m.Value&m.Mask {
			committed = true
			break
		}
	}
	if !committed && !d.probeShim {
		return 0, false, nil
	}
	nhops := r.NHops
	n, err := rd.parseShimL4(r, b[pay:], base+pay)
	end := pay + n
	if err == nil && in.EncapArg != 0 {
		end, err = rd.restoreNPT(r, b, base, pay, end, proto)
	}
	if err != nil {
		if proto == protoTCP && pay > l4+20 && rd.err.Setting == "" {
			rd.shimBeforeOptions(r, b[l4+20:], base+l4+20, committed)
			r.NHops, r.INT, in.EncapArg = nhops, telemetry.INTHeader{}, 0
		}
		// A deviation the decoder recognises is an error even when only probing: a quirk
		// decodes it, and without one it must not pass as a packet without INT. The
		// generators' deviations have weaker signatures (a shim Length of 0, a Ver of 0)
		// and only ever occur inside their reports: elsewhere (raw INT-MD input) a payload
		// that happens to look like one, e.g. a WireGuard handshake, is no INT.
		if committed || rd.err.Setting != "" && (rd.in == InputReport || rd.err.Setting != "quirks.intcollector_gen") {
			return 0, false, err
		}
		// The probe failed: this payload is not INT. Undo what the attempt wrote.
		r.NHops, r.INT, in.EncapArg = nhops, telemetry.INTHeader{}, 0
		return 0, false, nil
	}
	if proto == protoTCP {
		in.Encap = telemetry.EncapTCP
	} else {
		in.Encap = telemetry.EncapUDP
	}
	return end, true, nil
}

// shimBeforeOptions names the setting that decodes a TCP packet whose INT did not parse after
// the TCP options, when INT sits before them (b starts right after the 20-byte TCP header):
// Intel host-int's shim there (quirks.host_int, whose signature is strict enough to name
// even where the decoder only probes), or, in a packet whose DSCP committed the decoder, a
// shim of the specifications that decodes there whole (tcp_shim_before_options, which v1.0
// and later allow). Otherwise the error stays the one at the options' end. What the attempt
// writes into r is the caller's to undo.
func (rd *Reader) shimBeforeOptions(r *telemetry.Report, b []byte, base int, committed bool) {
	orig := rd.err
	_, err := rd.parseShimL4(r, b, base)
	switch {
	case err != nil && rd.err.Setting == "quirks.host_int":
	case err == nil && committed && r.Inner.EncapArg == 0:
		rd.err = orig
		rd.err.Setting = "tcp_shim_before_options: true"
	default:
		rd.err = orig
	}
}

// restoreNPT undoes what a v2.x source did to the flow when its shim's NPT says it (the
// shim's n bytes at pay end at end): NPT 1 kept the original UDP destination port in the
// shim, NPT 2 inserted a UDP header before the original L4 header, which follows INT; and
// what a v0.5 source that marks INT by UDP port did: its tail keeps the original port. Both
// apply to UDP only; the v0.5/v1.0 shims leave NPT 0. On failure the flow is as it was, for
// a probe to undo its attempt.
func (rd *Reader) restoreNPT(r *telemetry.Report, b []byte, base, pay, end int, proto uint8) (int, error) {
	npt := r.Inner.EncapArg
	if r.INT.Version == telemetry.INT05 && r.Inner.Encap == telemetry.EncapUDPPort && r.INT.OrigPort != 0 {
		// A v0.5 source that marks INT by port keeps the original one in the tail.
		r.Flow.DstPort = r.INT.OrigPort
		return end, nil
	}
	if npt == 0 || r.INT.Version != telemetry.INT2x {
		return end, nil
	}
	if proto != protoUDP {
		return 0, rd.fail(BadValue, "int shim", "npt", base+pay, uint64(npt))
	}
	switch npt {
	case 1:
		r.Flow.DstPort = r.INT.OrigPort
	case 2: // a UDP header was inserted: the original L4 header follows INT
		fk := r.Flow
		r.Flow.Proto = r.INT.OrigProto
		r.Flow.SrcPort, r.Flow.DstPort = 0, 0
		e, _, err := rd.parseL4(b, end, base, r.INT.OrigProto, &r.Flow)
		if err != nil {
			r.Flow = fk
			return 0, err
		}
		end = e
	}
	return end, nil
}

// findGPE decodes VXLAN-GPE at b[off:] when its next protocol is an INT codepoint.
func (rd *Reader) findGPE(r *telemetry.Report, b []byte, base, off int) (int, bool, error) {
	p := b[off:]
	if len(p) < 8 {
		return 0, false, rd.fail(Truncated, "vxlan-gpe", "header", base+off, 0)
	}
	if p[0]&0x04 == 0 || !rd.d.gpeNP[p[3]] { // no P bit, or not INT: plain VXLAN(-GPE)
		return 0, false, nil
	}
	r.Inner.Encap = telemetry.EncapGPE
	r.Inner.EncapArg = uint16(p[3])
	n, next, err := rd.parseShimGPE(r, p[8:], base+off+8)
	if err != nil {
		return 0, false, err
	}
	end := off + 8 + n
	var link telemetry.LinkType
	switch next {
	case 0x01:
		link = telemetry.LinkIPv4
	case 0x02:
		link = telemetry.LinkIPv6
	case 0x03:
		link = telemetry.LinkEthernet
	default:
		if rd.d.gpeNP[next] {
			return 0, false, rd.fail(Unsupported, "int gpe shim", "next_protocol", base+off+11, uint64(next))
		}
		return end, true, nil
	}
	return rd.nested(r, b, base, end, link)
}

// findGeneve decodes Geneve at b[off:] and its INT option, when one of the configured
// classes is present.
func (rd *Reader) findGeneve(r *telemetry.Report, b []byte, base, off int) (int, bool, error) {
	p := b[off:]
	if len(p) < 8 {
		return 0, false, rd.fail(Truncated, "geneve", "header", base+off, 0)
	}
	if p[0]>>6 != 0 {
		return 0, false, nil // unknown Geneve version: not ours to judge
	}
	optLen := int(p[0]&0x3f) * 4
	if len(p) < 8+optLen {
		return 0, false, rd.fail(Truncated, "geneve", "options", base+off+8, uint64(optLen))
	}
	etype := be.Uint16(p[2:])
	opts := p[8 : 8+optLen]
	found := false
	for pos := 0; pos+4 <= len(opts); {
		class, typ, n := be.Uint16(opts[pos:]), opts[pos+2]&0x7f, int(opts[pos+3]&0x1f)*4
		if pos+4+n > len(opts) {
			return 0, false, rd.fail(BadLength, "geneve option", "length", base+off+8+pos+3, uint64(n/4))
		}
		if !found && rd.geneveClass(class) {
			found = true
			r.Inner.Encap = telemetry.EncapGeneve
			r.INT.ShimType = typ
			r.Inner.EncapArg = class
			md := opts[pos+4 : pos+4+n]
			want := telemetry.INT05
			if len(md) > 0 && md[0]>>4 >= 2 {
				want = telemetry.INT2x
			}
			if typ != 1 && typ != 3 {
				return 0, false, rd.fail(Unsupported, "geneve option", "type", base+off+8+pos+2, uint64(typ))
			}
			if err := rd.parseMD(r, md, base+off+8+pos+4, want, typ == 3); err != nil {
				return 0, false, err
			}
		}
		pos += 4 + n
	}
	if !found {
		return 0, false, nil
	}
	end := off + 8 + optLen
	switch etype {
	case etherTEB:
		return rd.nested(r, b, base, end, telemetry.LinkEthernet)
	case etherIPv4:
		return rd.nested(r, b, base, end, telemetry.LinkIPv4)
	case etherIPv6:
		return rd.nested(r, b, base, end, telemetry.LinkIPv6)
	}
	return end, true, nil
}

func (rd *Reader) geneveClass(c uint16) bool {
	for i := 0; i < rd.d.genevesN; i++ {
		if rd.d.geneves[i] == c {
			return true
		}
	}
	return false
}

// findGRE decodes a GRE header at b[off:] whose protocol is the configured INT protocol.
func (rd *Reader) findGRE(r *telemetry.Report, b []byte, base, off int) (int, bool, error) {
	p := b[off:]
	if len(p) < 4 {
		return 0, false, rd.fail(Truncated, "gre", "header", base+off, 0)
	}
	flags := be.Uint16(p)
	if flags&0x0007 != 0 || be.Uint16(p[2:]) != rd.d.greProto {
		return 0, false, nil
	}
	n := 4
	for _, bit := range [3]uint16{0x8000, 0x2000, 0x1000} { // checksum, key, sequence
		if flags&bit != 0 {
			n += 4
		}
	}
	if len(p) < n {
		return 0, false, rd.fail(Truncated, "gre", "options", base+off+4, 0)
	}
	r.Inner.Encap = telemetry.EncapGRE
	r.Inner.EncapArg = uint16(n / 4)
	sn, etype, err := rd.parseShimGRE(r, p[n:], base+off+n)
	if err != nil {
		return 0, false, err
	}
	end := off + n + sn
	switch etype {
	case etherTEB:
		return rd.nested(r, b, base, end, telemetry.LinkEthernet)
	case etherIPv4:
		return rd.nested(r, b, base, end, telemetry.LinkIPv4)
	case etherIPv6:
		return rd.nested(r, b, base, end, telemetry.LinkIPv6)
	}
	return end, true, nil
}

// nested parses the packet a tunnel carries after its INT: the outer 5-tuple becomes the
// tunnel's, and the nested packet's 5-tuple becomes the flow. A report truncated right after
// the INT data keeps the outer 5-tuple as the flow.
func (rd *Reader) nested(r *telemetry.Report, b []byte, base, off int, link telemetry.LinkType) (int, bool, error) {
	if off >= len(b) {
		return off, true, nil
	}
	r.Inner.Tunnel = r.Flow
	r.Inner.Nested = link
	r.Flow = telemetry.FlowKey{}
	v6 := link == telemetry.LinkIPv6
	if link == telemetry.LinkEthernet {
		if len(b) < off+14 {
			return 0, false, rd.fail(Truncated, "ethernet", "ethertype", base+off, 0)
		}
		switch be.Uint16(b[off+12:]) {
		case etherIPv4:
		case etherIPv6:
			v6 = true
		default:
			return off + 14, true, nil
		}
		off += 14
	}
	var info ipInfo
	l4, err := rd.parseIP(b, off, base, v6, &r.Flow, &info)
	if err != nil {
		return 0, false, err
	}
	if info.frag {
		return l4, true, nil
	}
	end, _, err := rd.parseL4(b, l4, base, info.proto, &r.Flow)
	if err != nil {
		return 0, false, err
	}
	return end, true, nil
}

func trailer(n int) uint16 {
	if n > 0xffff {
		return 0xffff
	}
	if n < 0 {
		return 0
	}
	return uint16(n)
}

// decodeINTFrame decodes a raw INT-MD data packet (an Ethernet frame) as an INT sink sees it.
func (rd *Reader) decodeINTFrame(r *telemetry.Report) error {
	r.Format = telemetry.FormatINTMD
	found, err := rd.parseInner(r, rd.b, 0, telemetry.LinkEthernet, true, false)
	if err != nil {
		return err
	}
	if !found {
		return rd.fail(NotTelemetry, "int-md", "", 0, 0)
	}
	return nil
}
