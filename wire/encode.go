package wire

import (
	"math/bits"

	"github.com/intake-int/intake/telemetry"
)

// This file encodes Telemetry Reports and data packets with embedded INT, the inverse of
// tr.go, inner.go and int.go: decode(encode(r)) equals r for every report the decoders can
// produce. Values a hop lacks are written as all ones ("unavailable").

// lengthFix remembers a length field to fill in once the packet's end is known. Every
// length in a data packet runs to its end, since the headers nest.
type lengthFix struct {
	at   int // offset of the header that owns the field
	kind uint8
}

const (
	fixIPv4 uint8 = iota
	fixIPv6
	fixUDP
)

type packetWriter struct {
	b     []byte
	fixes [6]lengthFix
	n     int
}

func (w *packetWriter) fix(kind uint8) {
	if w.n < len(w.fixes) {
		w.fixes[w.n] = lengthFix{at: len(w.b), kind: kind}
		w.n++
	}
}

// finish fills in the lengths and IPv4 header checksums.
func (w *packetWriter) finish() {
	end := len(w.b)
	for i := 0; i < w.n; i++ {
		f := w.fixes[i]
		switch f.kind {
		case fixIPv4:
			be.PutUint16(w.b[f.at+2:], uint16(end-f.at))
		case fixIPv6:
			be.PutUint16(w.b[f.at+4:], uint16(end-f.at-40))
		case fixUDP:
			be.PutUint16(w.b[f.at+4:], uint16(end-f.at))
		}
	}
	for i := 0; i < w.n; i++ {
		if f := w.fixes[i]; f.kind == fixIPv4 {
			h := w.b[f.at : f.at+int(w.b[f.at]&0x0f)*4]
			be.PutUint16(h[10:], 0)
			be.PutUint16(h[10:], ipChecksum(h))
		}
	}
}

func ipChecksum(h []byte) uint16 {
	return ^csumFold(csumAdd(0, h))
}

var (
	macDst = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	macSrc = [6]byte{0x02, 0, 0, 0, 0, 0x01}
)

func (w *packetWriter) ethernet(etype uint16, vlans []uint16) {
	w.b = append(w.b, macDst[:]...)
	w.b = append(w.b, macSrc[:]...)
	for i, tci := range vlans {
		tpid := uint16(ether8021Q)
		if i == 0 && len(vlans) == 2 {
			tpid = ether8021A
		}
		w.b = put16(w.b, tpid)
		w.b = put16(w.b, tci)
	}
	w.b = put16(w.b, etype)
}

// ip writes an IPv4 or IPv6 header with optLen bytes of options/extension headers.
func (w *packetWriter) ip(k *telemetry.FlowKey, proto, dscp uint8, optLen int) {
	if !k.IPv6 {
		w.fix(fixIPv4)
		w.b = append(w.b, 0x45+uint8(optLen/4), dscp<<2, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0)
		w.b = append(w.b, k.Src[12:]...)
		w.b = append(w.b, k.Dst[12:]...)
		for i := 0; i < optLen; i++ {
			w.b = append(w.b, 0x01) // NOP
		}
		return
	}
	w.fix(fixIPv6)
	next := proto
	if optLen > 0 {
		next = 0 // hop-by-hop options, each 8 bytes of PadN
	}
	w.b = append(w.b, 0x60|dscp>>2, dscp<<6, 0, 0, 0, 0, next, 64)
	w.b = append(w.b, k.Src[:]...)
	w.b = append(w.b, k.Dst[:]...)
	for i := 0; i < optLen/8; i++ {
		nh := uint8(0)
		if i == optLen/8-1 {
			nh = proto
		}
		w.b = append(w.b, nh, 0, 1, 4, 0, 0, 0, 0)
	}
}

func (w *packetWriter) udp(sport, dport uint16) {
	w.fix(fixUDP)
	w.b = put16(w.b, sport)
	w.b = put16(w.b, dport)
	w.b = append(w.b, 0, 0, 0, 0)
}

func (w *packetWriter) tcp(sport, dport uint16, opts int, optsAfter bool) {
	w.b = put16(w.b, sport)
	w.b = put16(w.b, dport)
	w.b = append(w.b, 0, 0, 0, 1, 0, 0, 0, 0, uint8(5+opts/4)<<4, 0x18, 0xff, 0xff, 0, 0, 0, 0)
	if optsAfter {
		w.tcpOpts(opts)
	}
}

func (w *packetWriter) tcpOpts(n int) {
	for i := 0; i < n; i++ {
		w.b = append(w.b, 0x01) // NOP
	}
}

// l4 writes the L4 header the flow names (TCP, UDP, or nothing for other protocols).
func (w *packetWriter) l4(k *telemetry.FlowKey, tcpOpts int) {
	switch k.Proto {
	case protoTCP:
		w.tcp(k.SrcPort, k.DstPort, tcpOpts, true)
	case protoUDP:
		w.udp(k.SrcPort, k.DstPort)
	}
}

func linkEther(l telemetry.LinkType, v6 bool) uint16 {
	if v6 {
		return etherIPv6
	}
	return etherIPv4
}

// appendInner encodes r's inner packet with the INT stack of hops.
func (e *Encoder) appendInner(dst []byte, r *telemetry.Report, hops []telemetry.Hop) ([]byte, error) {
	in := &r.Inner
	if in.Link == telemetry.LinkNone {
		return dst, nil
	}
	w := packetWriter{b: dst}
	tunnel := in.Encap == telemetry.EncapGPE || in.Encap == telemetry.EncapGeneve || in.Encap == telemetry.EncapGRE
	outer := &r.Flow
	if tunnel && in.Nested != telemetry.LinkNone {
		outer = &in.Tunnel
	}
	if in.Link == telemetry.LinkEthernet {
		if r.Has&telemetry.HasFlow == 0 {
			w.ethernet(0x0806, in.VLANs[:in.NVLANs])
			w.b = append(w.b, make([]byte, in.Trailer)...)
			return w.b, nil
		}
		w.ethernet(linkEther(in.Link, outer.IPv6), in.VLANs[:in.NVLANs])
	}
	proto := outer.Proto
	switch in.Encap {
	case telemetry.EncapUDPPort:
		proto = protoUDP
	case telemetry.EncapGPE, telemetry.EncapGeneve:
		proto = protoUDP
	case telemetry.EncapGRE:
		proto = protoGRE
	}
	w.ip(outer, proto, in.DSCP, int(in.IPOptLen))
	var err error
	switch in.Encap {
	case telemetry.EncapNone:
		w.l4(outer, int(in.TCPOpts))
	case telemetry.EncapTCP:
		before := e.cfg.TCPShimBeforeOptions
		w.tcp(outer.SrcPort, outer.DstPort, int(in.TCPOpts), !before)
		w.b, err = e.appendShimL4(w.b, r, hops)
		if before {
			w.tcpOpts(int(in.TCPOpts))
		}
	case telemetry.EncapUDP:
		w.udp(outer.SrcPort, outer.DstPort)
		w.b, err = e.appendShimL4(w.b, r, hops)
	case telemetry.EncapUDPPort:
		switch in.EncapArg {
		case 1:
			w.udp(outer.SrcPort, e.cfg.INTPort)
			w.b, err = e.appendShimL4(w.b, r, hops)
		case 2:
			w.udp(0, e.cfg.INTPort)
			w.b, err = e.appendShimL4(w.b, r, hops)
			w.l4(outer, int(in.TCPOpts))
		default:
			return dst, errEncode("udp-port encapsulation needs NPT 1 or 2, not %d", in.EncapArg)
		}
	case telemetry.EncapGPE:
		w.udp(outer.SrcPort, e.cfg.GPEPort)
		w.b = append(w.b, 0x0c, 0, 0, uint8(in.EncapArg), 0, 0, 1, 0) // I and P flags, VNI 1
		w.b, err = e.appendShimGPE(w.b, r, hops)
	case telemetry.EncapGeneve:
		w.udp(outer.SrcPort, e.cfg.GenevePort)
		md, merr := e.appendMD(nil, r, hops)
		if merr != nil {
			return dst, merr
		}
		if len(md) > 124 {
			return dst, errEncode("geneve option too long: %d bytes", len(md))
		}
		etype := uint16(0) // nothing follows: the report was truncated after INT
		switch in.Nested {
		case telemetry.LinkEthernet:
			etype = etherTEB
		case telemetry.LinkIPv4:
			etype = etherIPv4
		case telemetry.LinkIPv6:
			etype = etherIPv6
		}
		w.b = append(w.b, uint8(1+len(md)/4), 0)
		w.b = put16(w.b, etype)
		w.b = append(w.b, 0, 0, 1, 0)
		w.b = put16(w.b, in.EncapArg)
		w.b = append(w.b, r.INT.ShimType, uint8(len(md)/4))
		w.b = append(w.b, md...)
	case telemetry.EncapGRE:
		words := int(in.EncapArg)
		if words < 1 || words > 4 {
			return dst, errEncode("gre header of %d words", words)
		}
		flags := [4]uint16{0, 0x2000, 0x3000, 0xb000}[words-1]
		w.b = put16(w.b, flags)
		w.b = put16(w.b, e.cfg.GREProtocol)
		w.b = append(w.b, make([]byte, 4*(words-1))...)
		w.b, err = e.appendShimGRE(w.b, r, hops)
	default:
		return dst, errEncode("encapsulation %v", in.Encap)
	}
	if err != nil {
		return dst, err
	}
	if tunnel && in.Nested != telemetry.LinkNone {
		if in.Nested == telemetry.LinkEthernet {
			w.ethernet(linkEther(in.Nested, r.Flow.IPv6), nil)
		}
		w.ip(&r.Flow, r.Flow.Proto, 0, 0)
		w.l4(&r.Flow, 0)
	}
	for i := 0; i < int(in.Trailer); i++ {
		w.b = append(w.b, 0)
	}
	w.finish()
	return w.b, nil
}

// appendItems writes one hop's items in bitmap order, all ones where a value is absent.
func (e *Encoder) appendItems(dst []byte, v telemetry.INTVersion, bitmap uint16, h *telemetry.Hop) []byte {
	quirk := e.cfg.Quirks.INTCollector && v == telemetry.INT10
	for m := bitmap; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		bit := bits.LeadingZeros16(m)
		switch bit {
		case 0:
			dst = put32(dst, val32(h, telemetry.FNodeID, h.NodeID, ones32))
		case 1:
			dst = put32(dst, ports16(h))
		case 2:
			dst = put32(dst, val32(h, telemetry.FHopLatency, h.HopLatency, ones32))
		case 3:
			if quirk {
				dst = put32(dst, val32(h, telemetry.FQueueID, uint32(h.QueueID), ones16)<<16|
					val32(h, telemetry.FQueueOccupancy, h.QueueOccupancy, ones16))
				continue
			}
			dst = put32(dst, queueWord(h))
		case 4, 5:
			f, ts := telemetry.FIngressTS, h.IngressTS
			if bit == 5 {
				f, ts = telemetry.FEgressTS, h.EgressTS
			}
			if v == telemetry.INT2x {
				if h.Fields&f == 0 {
					ts = ones64
				}
				dst = put64(dst, ts)
			} else {
				dst = put32(dst, val32(h, f, uint32(ts), ones32))
			}
		case 6:
			switch {
			case v == telemetry.INT05:
				dst = put32(dst, val32(h, telemetry.FQueueID, uint32(h.QueueID), ones8)<<24|
					val32(h, telemetry.FQueueCongestion, h.QueueCongestion, ones24))
			case quirk:
				dst = put32(dst, val32(h, telemetry.FL2IngressPort, h.L2IngressPort, ones16)<<16|
					val32(h, telemetry.FL2EgressPort, h.L2EgressPort, ones16))
			default:
				dst = put32(dst, val32(h, telemetry.FL2IngressPort, h.L2IngressPort, ones32))
				dst = put32(dst, val32(h, telemetry.FL2EgressPort, h.L2EgressPort, ones32))
			}
		case 7:
			dst = put32(dst, val32(h, telemetry.FTxUtil, h.TxUtil, ones32))
		case 8:
			if v == telemetry.INT2x {
				dst = put32(dst, bufferWord(h))
			} else {
				dst = put32(dst, ones32)
			}
		case 15:
			dst = put32(dst, 0) // checksum complement: intake does not maintain L4 checksums
		default:
			dst = put32(dst, ones32) // reserved
		}
	}
	return dst
}

func val32(h *telemetry.Hop, f telemetry.Field, v, absent uint32) uint32 {
	if h.Fields&f == 0 {
		return absent
	}
	return v
}

func ports16(h *telemetry.Hop) uint32 {
	return val32(h, telemetry.FIngressPort, h.IngressPort, ones16)<<16 | val32(h, telemetry.FEgressPort, h.EgressPort, ones16)
}

func queueWord(h *telemetry.Hop) uint32 {
	return val32(h, telemetry.FQueueID, uint32(h.QueueID), ones8)<<24 | val32(h, telemetry.FQueueOccupancy, h.QueueOccupancy, ones24)
}

func bufferWord(h *telemetry.Hop) uint32 {
	return val32(h, telemetry.FBufferID, uint32(h.BufferID), ones8)<<24 | val32(h, telemetry.FBufferOccupancy, h.BufferOccupancy, ones24)
}

// hopBytes is the size of one hop block as the header declares it.
func (e *Encoder) hopBytes(in *telemetry.INTHeader) int {
	if in.Version == telemetry.INT05 {
		return bits.OnesCount16(in.Bitmap) * 4
	}
	return int(in.HopML) * 4
}

// appendMD writes the INT metadata header and the stack (no shim, no tail).
func (e *Encoder) appendMD(dst []byte, r *telemetry.Report, hops []telemetry.Hop) ([]byte, error) {
	in := &r.INT
	switch in.Version {
	case telemetry.INT05:
		dst = append(dst, in.Flags&0x0f, uint8(bits.OnesCount16(in.Bitmap)), in.MaxHops, uint8(len(hops)))
		dst = put16(dst, in.Bitmap)
		dst = append(dst, 0, 0)
	case telemetry.INT10:
		dst = append(dst, 0x10|(in.Flags>>1)&0x0f, (in.Flags&1)<<7, in.HopML&0x1f, in.RemHops)
		dst = put16(dst, in.Bitmap)
		dst = append(dst, 0, 0)
	case telemetry.INT2x:
		dst = append(dst, 0x20|in.Flags&0x0f, 0, in.HopML&0x1f, in.RemHops)
		if in.MX {
			dst[len(dst)-2], dst[len(dst)-1] = 0, 0
		}
		dst = put16(dst, in.Bitmap)
		dst = put16(dst, in.DSID)
		dst = put16(dst, in.DSInstr)
		dst = put16(dst, in.DSFlags)
		if in.MX {
			return append(dst, make([]byte, 4*int(in.SourceDS))...), nil
		}
	default:
		return dst, errEncode("int version %d", in.Version)
	}
	hs := e.hopBytes(in)
	for i := range hops {
		start := len(dst)
		dst = e.appendItems(dst, in.Version, in.Bitmap, &hops[i])
		if n := len(dst) - start; n > hs {
			return dst, errEncode("hop of %d bytes exceeds HopML %d words", n, in.HopML)
		}
		for len(dst)-start < hs {
			dst = append(dst, 0) // domain-specific metadata, then the checksum complement
		}
	}
	if in.Version == telemetry.INT2x {
		dst = append(dst, make([]byte, 4*int(in.SourceDS))...)
	}
	if in.Erratum {
		dst = append(dst, 0, 0, 0, 0)
	}
	return dst, nil
}

// appendShimL4 writes the TCP/UDP shim, the INT header and stack, and the v0.5 tail
// (host-int's shim Type 3: the stack, then its flow sequence number, then the tail).
func (e *Encoder) appendShimL4(dst []byte, r *telemetry.Report, hops []telemetry.Hop) ([]byte, error) {
	in := &r.INT
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := e.appendMD(dst, r, hops)
	if err != nil {
		return dst, err
	}
	switch in.Version {
	case telemetry.INT05:
		typ := uint8(0x01)
		if in.ShimType == 3 { // Intel host-int: the flow's sequence number before the tail
			typ = 0x03
			dst = put32(dst, in.SourceSeq)
		}
		dst = append(dst, in.OrigProto)
		dst = put16(dst, in.OrigPort)
		dst = append(dst, in.ShimExtra)
		dst[start], dst[start+2] = typ, uint8((len(dst)-start)/4)
	case telemetry.INT10:
		dst[start], dst[start+2], dst[start+3] = 0x01, uint8((len(dst)-start)/4), in.ShimExtra
	default:
		npt := uint8(r.Inner.EncapArg) & 3
		dst[start] = in.ShimType<<4 | npt<<2
		dst[start+1] = uint8((len(dst) - start - 4) / 4)
		switch npt {
		case 0:
			dst[start+3] = in.ShimExtra << 2
		case 1:
			be.PutUint16(dst[start+2:], in.OrigPort)
		case 2:
			dst[start+3] = in.OrigProto
		}
	}
	return dst, nil
}

// nextProtoGPE is the GPE next protocol after the INT shim, for the nested packet.
func nextProtoGPE(l telemetry.LinkType) uint8 {
	switch l {
	case telemetry.LinkIPv4:
		return 0x01
	case telemetry.LinkIPv6:
		return 0x02
	case telemetry.LinkEthernet:
		return 0x03
	}
	return 0
}

func (e *Encoder) appendShimGPE(dst []byte, r *telemetry.Report, hops []telemetry.Hop) ([]byte, error) {
	in := &r.INT
	start := len(dst)
	dst = append(dst, 0, 0, 0, nextProtoGPE(r.Inner.Nested))
	dst, err := e.appendMD(dst, r, hops)
	if err != nil {
		return dst, err
	}
	if in.Version == telemetry.INT2x {
		dst[start] = in.ShimType << 4
		dst[start+1] = uint8((len(dst) - start - 4) / 4)
		dst[start+2] = in.ShimExtra << 7
	} else {
		dst[start], dst[start+2] = 0x01, uint8((len(dst)-start)/4)
	}
	return dst, nil
}

func (e *Encoder) appendShimGRE(dst []byte, r *telemetry.Report, hops []telemetry.Hop) ([]byte, error) {
	in := &r.INT
	if in.Version != telemetry.INT2x {
		return dst, errEncode("INT over GRE is defined from v2.0")
	}
	start := len(dst)
	etype := uint16(0)
	switch r.Inner.Nested {
	case telemetry.LinkIPv4:
		etype = etherIPv4
	case telemetry.LinkIPv6:
		etype = etherIPv6
	case telemetry.LinkEthernet:
		etype = etherTEB
	}
	dst = append(dst, in.ShimType<<4|(in.ShimExtra&1)<<3, 0)
	dst = put16(dst, etype)
	dst, err := e.appendMD(dst, r, hops)
	if err != nil {
		return dst, err
	}
	dst[start+1] = uint8((len(dst) - start - 4) / 4)
	return dst, nil
}

// stack returns the hops of r's embedded INT stack (those after the reporter's own hop).
func stack(r *telemetry.Report) []telemetry.Hop {
	if r.ReporterHop && r.NHops > 0 {
		return r.Hops[1:r.NHops]
	}
	return r.Hops[:r.NHops]
}

// fieldsFit refuses a report with a value wider than the field it would be written to,
// rather than cut it: a queue id of more than 8 bits (everywhere but the INT v1.0 stack under
// quirks.intcollector, whose queue word gives 16), an ingress or egress port of more than 16
// bits (every format writes them as one 16|16 word).
func (e *Encoder) fieldsFit(r *telemetry.Report) error {
	wide := e.cfg.Quirks.INTCollector && r.INT.Version == telemetry.INT10
	hops := r.HopList()
	for i := range hops {
		h := &hops[i]
		if h.Fields&telemetry.FIngressPort != 0 && h.IngressPort > ones16 {
			return errEncode("hop %d: ingress port %d does not fit a 16-bit port field", i, h.IngressPort)
		}
		if h.Fields&telemetry.FEgressPort != 0 && h.EgressPort > ones16 {
			return errEncode("hop %d: egress port %d does not fit a 16-bit port field", i, h.EgressPort)
		}
		if h.QueueID <= ones8 || h.Fields&telemetry.FQueueID == 0 || wide && !(i == 0 && r.ReporterHop) {
			continue
		}
		return errEncode("hop %d: queue id %d does not fit an 8-bit queue id field", i, h.QueueID)
	}
	return nil
}

// reporter returns the reporting node's hop, or an empty one.
func reporter(r *telemetry.Report) *telemetry.Hop {
	if r.ReporterHop && r.NHops > 0 {
		return &r.Hops[0]
	}
	return &telemetry.Hop{}
}

func flagBits(f telemetry.Flags) uint8 { // D, Q, F as three bits
	var v uint8
	if f&telemetry.FlagDrop != 0 {
		v |= 4
	}
	if f&telemetry.FlagQueue != 0 {
		v |= 2
	}
	if f&telemetry.FlagFlow != 0 {
		v |= 1
	}
	return v
}

func (e *Encoder) appendTR05(dst []byte, r *telemetry.Report) ([]byte, error) {
	ver := r.TR.Ver
	dst = append(dst, ver<<4|r.TR.NProto&0x0f, flagBits(r.Flags)<<5, 0, r.HWID&0x3f)
	dst = put32(dst, r.Seq)
	dst = put32(dst, uint32(r.IngressTS))
	h := reporter(r)
	switch r.TR.NProto {
	case 0:
	case 1:
		dst = put32(dst, r.NodeID)
		dst = put32(dst, ports16(h))
		dst = append(dst, uint8(val32(h, telemetry.FQueueID, uint32(h.QueueID), ones8)), r.DropReason, 0, 0)
	case 2:
		dst = put32(dst, r.NodeID)
		dst = put32(dst, ports16(h))
		dst = put32(dst, queueWord(h))
		dst = put32(dst, val32(h, telemetry.FEgressTS, uint32(h.EgressTS), ones32))
	case 4:
		dst = put32(dst, r.TR.SinkNodeID)
	default:
		return dst, errEncode("tr0.5 nproto %d", r.TR.NProto)
	}
	return e.appendInner(dst, r, stack(r))
}

func (e *Encoder) appendTR10(dst []byte, r *telemetry.Report) ([]byte, error) {
	md := r.TR.MDBits & 0x3f
	words := 4 + bits.OnesCount16(md)
	fb := flagBits(r.Flags)
	dst = append(dst, 0x10|uint8(words), r.TR.NProto<<5|uint8(md>>1), uint8(md&1)<<7|fb>>2, (fb&3)<<6|r.HWID&0x3f)
	dst = put32(dst, r.NodeID)
	dst = put32(dst, r.Seq)
	dst = put32(dst, uint32(r.IngressTS))
	h := reporter(r)
	for m := md; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		switch bits.LeadingZeros16(m) - 10 {
		case 0:
			dst = put32(dst, ports16(h))
		case 1:
			dst = put32(dst, val32(h, telemetry.FHopLatency, h.HopLatency, ones32))
		case 2:
			dst = put32(dst, queueWord(h))
		case 3:
			dst = put32(dst, val32(h, telemetry.FEgressTS, uint32(h.EgressTS), ones32))
		case 4:
			dst = put32(dst, val32(h, telemetry.FQueueID, uint32(h.QueueID), ones8)<<24|uint32(r.DropReason)<<16)
		case 5:
			dst = put32(dst, val32(h, telemetry.FTxUtil, h.TxUtil, ones32))
		}
	}
	return e.appendInner(dst, r, stack(r))
}

// appendTR20 writes a group header from rs[0] and one individual report per element.
func (e *Encoder) appendTR20(dst []byte, rs []telemetry.Report) ([]byte, error) {
	g := &rs[0]
	ver := g.TR.Ver
	if ver == 0 {
		ver = 2
	}
	dst = put32(dst, uint32(ver)<<28|uint32(g.HWID&0x3f)<<22|g.Seq&0x3fffff)
	dst = put32(dst, g.NodeID)
	for i := range rs {
		var err error
		if dst, err = e.appendIndividual(dst, &rs[i], i == len(rs)-1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (e *Encoder) appendIndividual(dst []byte, r *telemetry.Report, last bool) ([]byte, error) {
	start := len(dst)
	fb := flagBits(r.Flags) << 1
	if r.Flags&telemetry.FlagIntermediate != 0 {
		fb |= 1
	}
	dst = append(dst, r.TR.RepType<<4|r.TR.NProto&0x0f, 0, 0, fb<<4)
	if r.TR.RepType == 1 {
		md := r.TR.MDBits
		dst = put16(dst, md)
		dst = put16(dst, r.TR.DSID)
		dst = put16(dst, r.TR.DSMdBits)
		dst = put16(dst, r.TR.DSMdStatus)
		mdStart := len(dst)
		h := reporter(r)
		for m := md &^ 0x8000; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
			switch bit := bits.LeadingZeros16(m); bit {
			case 1:
				dst = put32(dst, ports16(h))
			case 2:
				dst = put32(dst, val32(h, telemetry.FHopLatency, h.HopLatency, ones32))
			case 3:
				dst = put32(dst, queueWord(h))
			case 4, 5:
				f, ts := telemetry.FIngressTS, h.IngressTS
				if bit == 5 {
					f, ts = telemetry.FEgressTS, h.EgressTS
				}
				if h.Fields&f == 0 {
					ts = ones64
				}
				dst = put64(dst, ts)
			case 6:
				dst = put32(dst, val32(h, telemetry.FL2IngressPort, h.L2IngressPort, ones32))
				dst = put32(dst, val32(h, telemetry.FL2EgressPort, h.L2EgressPort, ones32))
			case 7:
				dst = put32(dst, val32(h, telemetry.FTxUtil, h.TxUtil, ones32))
			case 8:
				dst = put32(dst, bufferWord(h))
			case 15:
				dst = put32(dst, val32(h, telemetry.FQueueID, uint32(h.QueueID), ones8)<<24|uint32(r.DropReason)<<16)
			default:
				dst = put32(dst, ones32)
			}
		}
		dst = append(dst, make([]byte, 4*int(r.TR.DSMdLen))...)
		dst[start+2] = uint8((len(dst) - mdStart) / 4)
	}
	var err error
	switch r.TR.NProto {
	case 1: // one TLV holding the packet
		tlv := len(dst)
		dst = append(dst, uint8(r.Inner.Link)<<4, 0, 0, 0) // TLV types 1-3 = LinkType values
		if dst, err = e.appendInner(dst, r, stack(r)); err != nil {
			return dst, err
		}
		for (len(dst)-tlv)%4 != 0 {
			dst = append(dst, 0)
		}
		if words := (len(dst) - tlv - 4) / 4; words > 255 {
			return dst, errEncode("tr2.0 tlv of %d words (at most 255)", words)
		}
		dst[tlv+1] = uint8((len(dst) - tlv - 4) / 4)
	case 3, 4, 5:
		if dst, err = e.appendInner(dst, r, stack(r)); err != nil {
			return dst, err
		}
	}
	for (len(dst)-start)%4 != 0 {
		dst = append(dst, 0)
	}
	words := (len(dst) - start - 4) / 4
	switch {
	case words < 0xff:
		dst[start+1] = uint8(words)
	case last:
		dst[start+1] = 0xff
	default:
		return dst, errEncode("tr2.0 report of %d words must be the last in its packet", words)
	}
	return dst, nil
}

func (e *Encoder) appendINTFrame(dst []byte, r *telemetry.Report) ([]byte, error) {
	if r.Inner.Link != telemetry.LinkEthernet {
		return dst, errEncode("a raw INT-MD packet starts at Ethernet")
	}
	return e.appendInner(dst, r, r.HopList())
}
