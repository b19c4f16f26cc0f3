package wire

import (
	"math/bits"

	"github.com/intake-int/intake/telemetry"
)

// This file decodes Telemetry Reports v0.5, v1.0 and v2.0 (docs/wire-formats.md). A report's
// own per-hop metadata becomes the reporting node's hop, first in the hop list; the INT stack
// in its inner packet follows (package telemetry, normal form).

// startReport tells the report version from the first nibble (docs/wire-formats.md, with the
// TR05Ver1 quirk of §4) and decodes the first report.
func (rd *Reader) startReport(r *telemetry.Report) error {
	b := rd.b
	rd.state = stDone
	if len(b) < 1 {
		return rd.fail(Truncated, "report", "ver", 0, 0)
	}
	switch ver := b[0] >> 4; ver {
	case 0:
		return rd.decodeTR05(r)
	case 1:
		q := &rd.d.cfg.Quirks
		if (q.TR05Ver1 || q.INTCollectorGen) && tr05Layout(b) {
			return rd.decodeTR05(r)
		}
		return rd.decodeTR10(r)
	case 2:
		if len(b) < 8 {
			return rd.fail(Truncated, "tr2.0 group header", "node_id", len(b), 0)
		}
		w := be.Uint32(b)
		rd.grpVer, rd.grpHW, rd.grpSeq = ver, uint8(w>>22)&0x3f, w&0x3fffff
		rd.grpNode = be.Uint32(b[4:])
		rd.off = 8
		rd.state = stTR20
		return rd.nextTR20(r)
	default:
		return rd.fail(UnknownVersion, "report", "ver", 0, uint64(ver))
	}
}

// tr05Layout reports whether a Ver=1 header reads as the v0.5 layout: a second nibble that
// is a v0.5 NProto (0-2), never a v1.0 Length (at least 4), and the v0.5 reserved bits (11-25)
// zero. INTCollector's generator sends such headers; its GEANT fork's v1.0 header with
// Length 1 has F in a bit v0.5 reserves, and is not one.
func tr05Layout(b []byte) bool {
	return len(b) >= 4 && b[0]&0x0f <= 2 && b[1]&0x1f == 0 && b[2] == 0 && b[3]&0xc0 == 0
}

// decodeTR05 decodes a TR v0.5 report: the 12-byte fixed header, an optional drop (NProto 1)
// or switch-local (NProto 2) header, then the Ethernet frame. NProto 4 (Intel host-int: a
// sink node id, then IPv4) is accepted too.
func (rd *Reader) decodeTR05(r *telemetry.Report) error {
	b := rd.b
	if len(b) < 12 {
		return rd.fail(Truncated, "tr0.5 fixed header", "ingress_ts", len(b), 0)
	}
	// A TR v0.5 header has little structure of its own: its reserved bits and the inner
	// frame's first headers are what tell a report from any other datagram sent to the port
	// (an INT data packet's payload reads as a drop report with a nonsense sequence number).
	if rsvd := be.Uint32(b) >> 6 & 0x7fff; rsvd != 0 {
		return rd.fail(BadValue, "tr0.5 fixed header", "reserved", 1, uint64(rsvd))
	}
	r.Format = telemetry.FormatTR05
	r.TR.Ver = b[0] >> 4
	r.TR.NProto = b[0] & 0x0f
	r.Flags = dqf(b[1] >> 5)
	r.HWID = b[3] & 0x3f
	r.Seq = be.Uint32(b[4:])
	r.IngressTS = uint64(be.Uint32(b[8:]))
	r.Has = telemetry.HasSeq | telemetry.HasIngressTS
	off := 12
	link := telemetry.LinkEthernet
	switch r.TR.NProto {
	case 0:
	case 1: // drop header: switch id 32 | in port 16 | out port 16 | queue id 8 | reason 8 | pad 16
		if len(b) < 24 {
			return rd.fail(Truncated, "tr0.5 drop header", "drop_reason", len(b), 0)
		}
		h := rd.reporterHop(r, be.Uint32(b[12:]))
		setPorts16(h, be.Uint32(b[16:]))
		if b[20] != ones8 {
			h.QueueID, h.Fields = uint16(b[20]), h.Fields|telemetry.FQueueID
		}
		r.DropReason = b[21]
		r.Has |= telemetry.HasDropReason
		if pad := be.Uint16(b[22:]); pad != 0 {
			return rd.fail(BadValue, "tr0.5 drop header", "pad", 22, uint64(pad))
		}
		off = 24
	case 2: // local header: switch id 32 | in 16 | out 16 | queue id 8 | occupancy 24 | egress ts 32
		if len(b) < 28 {
			return rd.fail(Truncated, "tr0.5 local header", "egress_ts", len(b), 0)
		}
		h := rd.reporterHop(r, be.Uint32(b[12:]))
		setPorts16(h, be.Uint32(b[16:]))
		setQueue(h, be.Uint32(b[20:]))
		setTS(h, telemetry.FEgressTS, &h.EgressTS, b[24:28])
		// The local header has no hop latency; the spec defines it as egress - ingress
		// timestamp mod 2^32, and every consumer wants it.
		if h.Fields&(telemetry.FIngressTS|telemetry.FEgressTS) == telemetry.FIngressTS|telemetry.FEgressTS {
			h.HopLatency = uint32(h.EgressTS) - uint32(h.IngressTS)
			h.Fields |= telemetry.FHopLatency
		}
		off = 28
	case 4:
		if len(b) < 16 {
			return rd.fail(Truncated, "tr0.5 sink header", "sink_node_id", len(b), 0)
		}
		r.TR.SinkNodeID = be.Uint32(b[12:])
		off, link = 16, telemetry.LinkIPv4
	case 3: // Intel host-int's drop summary
		return rd.fail(Unsupported, "tr0.5 fixed header", "nproto", 0, uint64(r.TR.NProto))
	default: // no specification or producer defines another
		return rd.fail(BadValue, "tr0.5 fixed header", "nproto", 0, uint64(r.TR.NProto))
	}
	return rd.inner(r, b[off:], off, link)
}

// reporterHop starts the reporting node's hop: node id, and the report's ingress timestamp.
func (rd *Reader) reporterHop(r *telemetry.Report, node uint32) *telemetry.Hop {
	r.NodeID = node
	r.Has |= telemetry.HasNodeID
	r.ReporterHop = true
	h := r.AddHop()
	setU32(h, telemetry.FNodeID, &h.NodeID, node)
	if r.Has&telemetry.HasIngressTS != 0 && r.IngressTS != ones32 {
		h.IngressTS, h.Fields = r.IngressTS, h.Fields|telemetry.FIngressTS
	}
	return h
}

// dqf maps the D, Q, F bits (as the low three bits of v) to Flags.
func dqf(v uint8) telemetry.Flags {
	var f telemetry.Flags
	if v&4 != 0 {
		f |= telemetry.FlagDrop
	}
	if v&2 != 0 {
		f |= telemetry.FlagQueue
	}
	if v&1 != 0 {
		f |= telemetry.FlagFlow
	}
	return f
}

// inner decodes a report's inner packet; INT is looked for only in tracked-flow reports.
// A broken inner packet does not fail the report (Reader.InnerErr): the report keeps its
// own metadata and the inner packet's flow as far as it decoded, without INT. TR v0.5 and
// v1.0 are the exception where the packet's own first headers are broken (Ethernet, VLAN
// tags, the IP header; a plausible EtherType, an IPv4 total length that holds its header):
// their fixed headers have too little structure to vouch for themselves, so such a report
// is a decode error, not a report (docs/wire-formats.md, "Plausibility").
func (rd *Reader) inner(r *telemetry.Report, b []byte, base int, link telemetry.LinkType) error {
	if len(b) == 0 {
		return nil
	}
	nhops := r.NHops
	strict := r.Format != telemetry.FormatTR20
	if _, err := rd.parseInner(r, b, base, link, r.Flags&telemetry.FlagFlow != 0, strict); err != nil {
		if strict && r.Has&telemetry.HasFlow == 0 { // it failed before the L4 header
			return err
		}
		rd.innerErr, rd.hasInner = rd.err, true
		in := &r.Inner
		if in.Nested != telemetry.LinkNone { // the tunnel's endpoints are the flow again
			r.Flow, in.Tunnel, in.Nested = in.Tunnel, telemetry.FlowKey{}, telemetry.LinkNone
		}
		r.NHops, r.INT = nhops, telemetry.INTHeader{}
		in.Encap, in.EncapArg, in.Trailer = telemetry.EncapNone, 0, 0
	}
	return nil
}

// decodeTR10 decodes a TR v1.0 report: one 16+4n byte header (RepMdBits selects the optional
// words), then an Ethernet, IPv4 or IPv6 packet as NProt says.
func (rd *Reader) decodeTR10(r *telemetry.Report) error {
	b := rd.b
	if len(b) < 16 {
		return rd.fail(Truncated, "tr1.0 header", "ingress_ts", len(b), 0)
	}
	if rsvd := b[2] >> 1 & 0x3f; rsvd != 0 {
		return rd.fail(BadValue, "tr1.0 header", "reserved", 2, uint64(rsvd))
	}
	r.Format = telemetry.FormatTR10
	r.TR.Ver = 1
	words := int(b[0] & 0x0f)
	r.TR.NProto = b[1] >> 5
	md := uint16(b[1]&0x1f)<<1 | uint16(b[2]>>7)
	r.TR.MDBits = md
	r.Flags = dqf((b[2]&1)<<2 | b[3]>>6)
	r.HWID = b[3] & 0x3f
	if words < 4 || words != 4+bits.OnesCount16(md) {
		// Known deviations: INTCollector's GEANT fork generates Length 1 (any value below
		// 4 is its bug, not a length), and INTCollector's own generator the v0.5 layout.
		switch {
		case words < 4 && rd.d.cfg.Quirks.INTCollectorGen:
			words = 4 + bits.OnesCount16(md)
		case words < 4 && tr05Layout(b):
			return rd.failSet(BadLength, "tr1.0 header", "length", 0, uint64(words), "quirks.tr05_ver1")
		case words < 4:
			return rd.failSet(BadLength, "tr1.0 header", "length", 0, uint64(words), "quirks.intcollector_gen")
		default:
			return rd.fail(BadLength, "tr1.0 header", "length", 0, uint64(words))
		}
	}
	if len(b) < words*4 {
		return rd.fail(Truncated, "tr1.0 header", "metadata", len(b), uint64(words))
	}
	r.NodeID = be.Uint32(b[4:])
	r.Seq = be.Uint32(b[8:])
	r.IngressTS = uint64(be.Uint32(b[12:]))
	r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasIngressTS
	if md != 0 {
		h := rd.reporterHop(r, r.NodeID)
		off := 16
		for m := md; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
			x := be.Uint32(b[off:])
			switch bits.LeadingZeros16(m) - 10 { // bit 0 is the MSB of the 6-bit field
			case 0:
				setPorts16(h, x)
			case 1:
				setU32(h, telemetry.FHopLatency, &h.HopLatency, x)
			case 2:
				setQueue(h, x)
			case 3:
				setTS(h, telemetry.FEgressTS, &h.EgressTS, b[off:off+4])
			case 4: // queue id 8 | drop reason 8 | pad 16
				if x>>24 != ones8 {
					h.QueueID, h.Fields = uint16(x>>24), h.Fields|telemetry.FQueueID
				}
				r.DropReason = uint8(x >> 16)
				r.Has |= telemetry.HasDropReason
			case 5:
				setU32(h, telemetry.FTxUtil, &h.TxUtil, x)
			}
			off += 4
		}
	}
	var link telemetry.LinkType
	switch r.TR.NProto {
	case 0:
		link = telemetry.LinkEthernet
	case 1:
		link = telemetry.LinkIPv4
	case 2:
		link = telemetry.LinkIPv6
	default:
		return rd.fail(BadValue, "tr1.0 header", "nprot", 1, uint64(r.TR.NProto))
	}
	return rd.inner(r, b[words*4:], words*4, link)
}

// nextTR20 decodes the individual report at rd.off of a TR v2.0 packet. Reports are packed
// back to back; Report Length 0xFF runs to the end of the payload and ends the packet.
func (rd *Reader) nextTR20(r *telemetry.Report) error {
	b := rd.b
	off := rd.off
	if off >= len(b) {
		rd.state = stDone
		return Done
	}
	if len(b)-off < 4 {
		rd.state = stDone
		return rd.fail(Truncated, "tr2.0 individual report", "header", off, 0)
	}
	w := be.Uint32(b[off:])
	repType, inType := uint8(w>>28), uint8(w>>24)&0x0f
	repLen, mdLen := int(w>>16)&0xff, int(w>>8)&0xff
	end := len(b)
	if repLen == 0xff {
		rd.state = stDone
	} else {
		end = off + 4 + repLen*4
		if end > len(b) {
			rd.state = stDone
			return rd.fail(Truncated, "tr2.0 individual report", "report_length", off+1, uint64(repLen))
		}
		rd.off = end
	}
	r.Format = telemetry.FormatTR20
	r.TR.Ver = rd.grpVer
	r.TR.RepType, r.TR.NProto = repType, inType
	r.HWID, r.Seq, r.NodeID = rd.grpHW, rd.grpSeq, rd.grpNode
	r.Has = telemetry.HasNodeID | telemetry.HasSeq
	r.Flags = dqf(uint8(w>>5) & 7)
	if w&0x10 != 0 {
		r.Flags |= telemetry.FlagIntermediate
	}
	pos := off + 4
	switch repType {
	case 0: // inner only
	case 1:
		if end-pos < 8+mdLen*4 {
			return rd.fail(BadLength, "tr2.0 individual report", "md_length", off+2, uint64(mdLen))
		}
		if err := rd.tr20Metadata(r, b[pos:pos+8+mdLen*4], pos); err != nil {
			return err
		}
		pos += 8 + mdLen*4
	default:
		return rd.fail(Unsupported, "tr2.0 individual report", "rep_type", off, uint64(repType))
	}
	return rd.tr20Inner(r, b[pos:end], pos, inType)
}

// tr20Metadata decodes the RepType 1 main contents: RepMdBits, the domain-specific words
// (skipped by MD Length) and the baseline metadata, which is the reporting node's hop.
func (rd *Reader) tr20Metadata(r *telemetry.Report, p []byte, base int) error {
	md := be.Uint16(p)
	r.TR.MDBits = md
	r.TR.DSID, r.TR.DSMdBits, r.TR.DSMdStatus = be.Uint16(p[2:]), be.Uint16(p[4:]), be.Uint16(p[6:])
	baseline := md &^ 0x8000 // bit 0 is reserved: the node id is in the group header
	need := 0
	for m := baseline; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		switch bits.LeadingZeros16(m) {
		case 4, 5, 6:
			need += 8
		default:
			need += 4
		}
	}
	if need > len(p)-8 {
		return rd.fail(BadLength, "tr2.0 individual report", "md_length", base-2, uint64((len(p)-8)/4))
	}
	r.TR.DSMdLen = uint8((len(p) - 8 - need) / 4)
	if baseline == 0 {
		return nil
	}
	h := rd.reporterHop(r, r.NodeID)
	off := 8
	for m := baseline; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		bit := bits.LeadingZeros16(m)
		x := be.Uint32(p[off:])
		switch bit {
		case 1:
			setPorts16(h, x)
		case 2:
			setU32(h, telemetry.FHopLatency, &h.HopLatency, x)
		case 3:
			setQueue(h, x)
		case 4:
			setTS(h, telemetry.FIngressTS, &h.IngressTS, p[off:off+8])
		case 5:
			setTS(h, telemetry.FEgressTS, &h.EgressTS, p[off:off+8])
		case 6:
			setU32(h, telemetry.FL2IngressPort, &h.L2IngressPort, x)
			setU32(h, telemetry.FL2EgressPort, &h.L2EgressPort, be.Uint32(p[off+4:]))
		case 7:
			setU32(h, telemetry.FTxUtil, &h.TxUtil, x)
		case 8:
			setBuffer(h, x)
		case 15: // queue id 8 | drop reason 8 | pad 16
			if x>>24 != ones8 {
				h.QueueID, h.Fields = uint16(x>>24), h.Fields|telemetry.FQueueID
			}
			r.DropReason = uint8(x >> 16)
			r.Has |= telemetry.HasDropReason
		}
		if bit >= 4 && bit <= 6 {
			off += 8
		} else {
			off += 4
		}
	}
	return nil
}

// tr20Inner decodes the inner contents by InType: a packet (Ethernet, IPv4, IPv6), a TLV
// list (whose packet TLVs are decoded; the rest skipped by length), or nothing.
func (rd *Reader) tr20Inner(r *telemetry.Report, p []byte, base int, inType uint8) error {
	switch inType {
	case 0, 2: // none; domain-specific extension data (skipped)
		return nil
	case 3:
		return rd.inner(r, p, base, telemetry.LinkEthernet)
	case 4:
		return rd.inner(r, p, base, telemetry.LinkIPv4)
	case 5:
		return rd.inner(r, p, base, telemetry.LinkIPv6)
	case 1:
		for pos := 0; pos < len(p); {
			if len(p)-pos < 4 {
				return rd.fail(Truncated, "tr2.0 tlv", "header", base+pos, 0)
			}
			typ, n := p[pos]>>4, int(p[pos+1])*4
			if pos+4+n > len(p) {
				return rd.fail(BadLength, "tr2.0 tlv", "length", base+pos+1, uint64(n/4))
			}
			v := p[pos+4 : pos+4+n]
			var link telemetry.LinkType
			switch typ { // TLV types are InType - 2 for packets (docs/wire-formats.md)
			case 1:
				link = telemetry.LinkEthernet
			case 2:
				link = telemetry.LinkIPv4
			case 3:
				link = telemetry.LinkIPv6
			}
			if link != telemetry.LinkNone && r.Inner.Link == telemetry.LinkNone {
				if err := rd.inner(r, v, base+pos+4, link); err != nil {
					return err
				}
			}
			pos += 4 + n
		}
		return nil
	}
	return rd.fail(Unsupported, "tr2.0 individual report", "in_type", base, uint64(inType))
}
