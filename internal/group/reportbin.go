package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/intake-int/intake/internal/wbuf"
	"github.com/intake-int/intake/telemetry"
)

// A report's binary form on the raw topic: every field of telemetry.Report, lossless, so
// that a processor's processors see exactly the report the inlet decoded, and compact: a
// 5-hop TR v2.0 report with an IPv4 flow takes about 95 bytes where the struct takes 3 KiB.
//
//	report = version (1 byte, reportVersion or reportVersion2) · groups (1 byte) · Format ·
//	         Flags · Has · HWID · DropReason · ReporterHop · Kernel (1 byte each) · NodeID ·
//	         Seq · IngressTS (uvarints) · RecvTime · [TR] · [Flow] · [Inner] · [INT] · hops ·
//	         [DTA] · [labels]
//
// groups says which bracketed groups follow (bit 0 TR, 1 Flow, 2 Inner, 3 INT, 4 DTA, 5
// labels): a group left out is all zero. The other unsigned fields are uvarints, bools and
// uint8s bytes, addresses 16 bytes. Two bits of groups say how the rest is written:
//
//   - bit 6, the coded form (what inlets wrote in frames of version 2): RecvTime is
//     8 bytes, little endian; hops is a count, then per hop its Fields (2 bytes), a mask (2
//     bytes, little endian: bit i says value field i, in numHopValues' order, is not zero;
//     bits 14-15 the hop's width less one) and the values that are not zero, in order,
//     little endian: QueueID 2 bytes, BufferID 1, the 32-bit fields each in the hop's
//     width (1 to 4 bytes: the fewest that hold the largest of them), IngressTS and
//     EgressTS 8.
//   - bit 7, only in the coded form: the flow is IPv4 (IPv6 false, both addresses
//     IPv4-mapped) and written as its 13-byte key (telemetry.FlowKey.KeyBytes).
//
// Without bit 6 (the first form, in frames of version 1, which this intake still reads),
// RecvTime is a zig-zag varint and each hop's 32-bit values are 4 bytes each, its mask
// only the bits of the values that are not zero.
//
// The coded form is written for the hot path: a varint's loop and a branch per value cost
// more here than the bytes they save, and every byte written is read again by the client's
// copies and the compressor. So each value is stored whole into room made beforehand and
// the write position moves past it only if it is not zero; one width per hop takes one
// comparison chain, not one per value. A 5-hop TR v2.0 report takes 94 bytes, not 159.
//
// The predicted form (version 2, always coded; what this intake writes, in frames of version
// 3) is the coded form but for two things:
//
//   - a hop's timestamps are written as what their prediction missed, not whole: IngressTS
//     against the previous hop's IngressTS (0 for the first hop), EgressTS against
//     IngressTS + HopLatency (0 when IngressTS is 0), each as a zig-zag integer in as many
//     bytes as it needs, after the other values. When either is not 0, the mask's bit 12 is
//     set and a byte after it holds the two widths (low nibble IngressTS's, high nibble
//     EgressTS's, 0 to 8). A switch's timestamps are nanoseconds of one clock, so whole
//     they are the most of a hop's bytes and the most a compressor cannot take out (every
//     report has new ones): the packet's hops are a few microseconds apart and its egress
//     is its ingress plus the hop latency, so what is left takes 2 or 3 bytes and usually
//     0 (BenchmarkReportAppendGen: a TR v2.0 report of 5 hops with 8 fields each takes 206
//     bytes where the coded form took 300).
//   - the Inner group's tunnel flow is a byte (0: none, 1: it follows) and then the flow,
//     not 36 bytes of zeros for a report that came in no tunnel.

// A report's first byte: reportVersion for the first and the coded form, reportVersion2 for
// the predicted form (what this intake writes, in frames of version 3).
const (
	reportVersion  = 1
	reportVersion2 = 2
)

const (
	gTR = 1 << iota
	gFlow
	gInner
	gINT
	gDTA
	gLabels
	gCoded // the coded form (see above)
	gFlow4 // the flow as its IPv4 key
)

// appendReport appends r's binary form to b.
func appendReport(b []byte, r *telemetry.Report) []byte {
	groups := byte(gCoded)
	if r.TR != (telemetry.TRHeader{}) {
		groups |= gTR
	}
	if r.Flow != (telemetry.FlowKey{}) {
		groups |= gFlow
	}
	if r.Inner != (telemetry.Inner{}) {
		groups |= gInner
	}
	if r.INT != (telemetry.INTHeader{}) {
		groups |= gINT
	}
	d := &r.DTA
	if d.Op != 0 || d.HeaderLen != 0 || d.Seq != 0 || d.Immediate || d.Retransmit || d.Redundancy != 0 ||
		d.KeyLen != 0 || d.DataLen != 0 || d.Hop != 0 || d.ListID != 0 || d.Counter != 0 {
		groups |= gDTA
	}
	if r.NLabels > 0 || r.LabelSpecific {
		groups |= gLabels
	}
	if groups&gFlow != 0 && isIPv4(&r.Flow) {
		groups |= gFlow4
	}
	// Room for the largest form of a report of these counts, then writes without appends
	// (a byte-by-byte append is most of the cost of a varint).
	w := writer{wbuf.W{B: slices.Grow(b, 512+int(r.NHops)*hopRoom+int(r.NLabels)*64+int(d.KeyLen)+int(d.DataLen)), N: len(b)}}
	w.B = w.B[:cap(w.B)]
	binary.LittleEndian.PutUint64(w.B[w.N:], reportVersion2|uint64(groups)<<8|uint64(r.Format)<<16|uint64(r.Flags)<<24|
		uint64(r.Has)<<32|uint64(r.HWID)<<40|uint64(r.DropReason)<<48|uint64(bit(r.ReporterHop))<<56)
	w.B[w.N+8] = byte(r.Kernel)
	w.N += 9
	w.Uvarint(uint64(r.NodeID))
	w.Uvarint(uint64(r.Seq))
	w.Uvarint(r.IngressTS)
	binary.LittleEndian.PutUint64(w.B[w.N:], uint64(r.RecvTime))
	w.N += 8
	if groups&gTR != 0 {
		t := &r.TR
		w.Bytes(t.Ver, t.NProto, t.RepType, t.DSMdLen)
		w.Uvarint(uint64(t.MDBits))
		w.Uvarint(uint64(t.DSID))
		w.Uvarint(uint64(t.DSMdBits))
		w.Uvarint(uint64(t.DSMdStatus))
		w.Uvarint(uint64(t.SinkNodeID))
	}
	if groups&gFlow4 != 0 {
		w.N += len(r.Flow.KeyBytes(w.B[w.N:]))
	} else if groups&gFlow != 0 {
		w.flow(&r.Flow)
	}
	if groups&gInner != 0 {
		in := &r.Inner
		w.Bytes(byte(in.Link), in.NVLANs, in.DSCP, in.TCPOpts, byte(in.Encap), byte(in.Nested))
		w.Uvarint(uint64(in.VLANs[0]))
		w.Uvarint(uint64(in.VLANs[1]))
		w.Uvarint(uint64(in.IPOptLen))
		w.Uvarint(uint64(in.EncapArg))
		w.Uvarint(uint64(in.Trailer))
		if in.Tunnel == (telemetry.FlowKey{}) {
			w.Bytes(0)
		} else {
			w.Bytes(1)
			w.flow(&in.Tunnel)
		}
	}
	if groups&gINT != 0 {
		h := &r.INT
		w.Bytes(byte(h.Version), bit(h.MX), h.Flags, h.HopML, h.RemHops, h.MaxHops, h.SourceDS, h.ShimType,
			h.ShimExtra, h.OrigProto, bit(h.Erratum), bit(h.HasSourceSeq))
		w.Uvarint(uint64(h.Bitmap))
		w.Uvarint(uint64(h.DSID))
		w.Uvarint(uint64(h.DSInstr))
		w.Uvarint(uint64(h.DSFlags))
		w.Uvarint(uint64(h.OrigPort))
		w.Uvarint(uint64(h.SourceSeq))
	}
	w.Bytes(r.NHops)
	var prevIn uint64
	for i := range int(r.NHops) {
		w.N = putHop(w.B, w.N, &r.Hops[i], prevIn)
		prevIn = r.Hops[i].IngressTS
	}
	if groups&gDTA != 0 {
		w.Bytes(byte(d.Op), d.HeaderLen, d.Seq, bit(d.Immediate), bit(d.Retransmit), d.Redundancy, d.KeyLen,
			d.DataLen, d.Hop)
		w.Uvarint(uint64(d.ListID))
		w.Uvarint(d.Counter)
		w.Bytes(d.KeyBytes()...)
		w.Bytes(d.DataBytes()...)
	}
	if groups&gLabels != 0 {
		w.Bytes(bit(r.LabelSpecific), r.NLabels)
		for i := range int(r.NLabels) {
			l := &r.Labels[i]
			w.Bytes(l.SwitchID, l.IngressPort, l.EgressPort)
			w.Uvarint(l.IngressTS)
			w.Uvarint(l.EgressTS)
			w.Uvarint(uint64(l.EnqTS))
			w.Uvarint(uint64(l.EnqQDepth))
			w.Uvarint(uint64(l.DeqTimedelta))
			w.Uvarint(uint64(l.DeqQDepth))
		}
	}
	return w.B[:w.N]
}

// writer writes into B, sized beforehand, at N.
type writer struct{ wbuf.W }

func (w *writer) flow(k *telemetry.FlowKey) {
	w.Bytes(k.Src[:]...)
	w.Bytes(k.Dst[:]...)
	w.Uvarint(uint64(k.SrcPort))
	w.Uvarint(uint64(k.DstPort))
	w.Bytes(k.Proto, bit(k.IPv6))
}

func bit(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// isIPv4 reports whether flow k's addresses are IPv4-mapped and it says IPv4: its 13-byte
// key is then all of it.
func isIPv4(k *telemetry.FlowKey) bool {
	const mapped = 0xffff // bytes 8-11 of an IPv4-mapped address, big endian
	return !k.IPv6 && binary.BigEndian.Uint64(k.Src[:]) == 0 && binary.BigEndian.Uint32(k.Src[8:]) == mapped &&
		binary.BigEndian.Uint64(k.Dst[:]) == 0 && binary.BigEndian.Uint32(k.Dst[8:]) == mapped
}

// numHopValues is the number of a hop's value fields: QueueID, BufferID, NodeID,
// IngressPort, EgressPort, HopLatency, QueueOccupancy, QueueCongestion, TxUtil,
// BufferOccupancy, L2IngressPort, L2EgressPort, IngressTS, EgressTS, in the form's order.
const numHopValues = 14

// hopRoom is the room a hop's coded form is written in: its largest form (64 bytes) and
// the 8 bytes a value is stored in whole, rounded up so that a position masked with
// hopRoom/2-1 needs no bounds check.
const hopRoom = 128

// putHop writes hop h's predicted form into b at n (b has hopRoom bytes from n on) and
// returns where it ends; prevIn is the previous hop's IngressTS (0 for the first). Each value
// is stored whole and the position moves past it only if it is not zero: no branch and no
// load per value, which is what a hop costs on the hot path.
func putHop(b []byte, n int, h *telemetry.Hop, prevIn uint64) int {
	p := (*[hopRoom]byte)(b[n : n+hopRoom])
	k, ts := 4, uint32(0)
	var iz, ez uint64
	var iw, ew int
	if h.IngressTS|h.EgressTS|prevIn != 0 { // else both differences are 0: one test for hops without timestamps
		iz, ez = zigzag(h.IngressTS-prevIn), zigzag(h.EgressTS-egressGuess(h))
		iw, ew = (bits.Len64(iz)+7)>>3, (bits.Len64(ez)+7)>>3
		if iz|ez != 0 {
			p[4] = byte(iw | ew<<4)
			k, ts = 5, 1<<12
		}
	}
	k, nz := putNZ16(p, k, h.QueueID, 0)
	nz |= ts
	p[k] = h.BufferID
	if h.BufferID != 0 {
		k++
		nz |= 1 << 1
	}
	all := h.NodeID | h.IngressPort | h.EgressPort | h.HopLatency | h.QueueOccupancy | h.QueueCongestion | h.TxUtil |
		h.BufferOccupancy | h.L2IngressPort | h.L2EgressPort
	w := 1 // the width of this hop's 32-bit values
	if all > 0xff {
		w = 2
	}
	if all > 0xffff {
		w = 3
	}
	if all > 0xffffff {
		w = 4
	}
	k, nz = putNZ32(p, k, h.NodeID, w, nz, 2)
	k, nz = putNZ32(p, k, h.IngressPort, w, nz, 3)
	k, nz = putNZ32(p, k, h.EgressPort, w, nz, 4)
	k, nz = putNZ32(p, k, h.HopLatency, w, nz, 5)
	k, nz = putNZ32(p, k, h.QueueOccupancy, w, nz, 6)
	k, nz = putNZ32(p, k, h.QueueCongestion, w, nz, 7)
	k, nz = putNZ32(p, k, h.TxUtil, w, nz, 8)
	k, nz = putNZ32(p, k, h.BufferOccupancy, w, nz, 9)
	k, nz = putNZ32(p, k, h.L2IngressPort, w, nz, 10)
	k, nz = putNZ32(p, k, h.L2EgressPort, w, nz, 11)
	if ts != 0 {
		binary.LittleEndian.PutUint64(p[k&(hopRoom/2-1):], iz)
		k += iw
		binary.LittleEndian.PutUint64(p[k&(hopRoom/2-1):], ez)
		k += ew
	}
	binary.LittleEndian.PutUint32(p[:], uint32(h.Fields)|(nz|uint32(w-1)<<14)<<16)
	return n + k
}

// egressGuess is what the predicted form writes a hop's EgressTS against: IngressTS plus the
// hop latency, or 0 for a hop without IngressTS (one that has neither timestamp).
func egressGuess(h *telemetry.Hop) uint64 {
	if h.IngressTS == 0 {
		return 0
	}
	return h.IngressTS + uint64(h.HopLatency)
}

// zigzag is difference d (two's complement) zig-zag encoded: small either way, small.
func zigzag(d uint64) uint64 { return d<<1 ^ uint64(int64(d)>>63) }

// putNZ16 and putNZ32 store v at k and return the position past it if it is not
// zero, else k, and nz with value field i's bit set if it is not zero.
func putNZ16(p *[hopRoom]byte, k int, v uint16, i uint) (int, uint32) {
	binary.LittleEndian.PutUint16(p[k&(hopRoom/2-1):], v)
	if v != 0 {
		return k + 2, 1 << i
	}
	return k, 0
}

func putNZ32(p *[hopRoom]byte, k int, v uint32, w int, nz uint32, i uint) (int, uint32) {
	binary.LittleEndian.PutUint32(p[k&(hopRoom/2-1):], v)
	set := uint32(1) << i
	if v == 0 {
		w, set = 0, 0
	}
	return k + w, nz | set
}

// errReport is a report's binary form that does not hold together.
var errReport = errors.New("group: a report that does not decode")

// reader reads a binary form; the first failure sticks.
type reader struct {
	b   []byte
	bad bool
}

func (rd *reader) byte() byte {
	if len(rd.b) == 0 {
		rd.bad = true
		return 0
	}
	v := rd.b[0]
	rd.b = rd.b[1:]
	return v
}

func (rd *reader) bool() bool { return rd.byte() != 0 }

func (rd *reader) uvarint(max uint64) uint64 {
	v, n := binary.Uvarint(rd.b)
	if n <= 0 || v > max {
		rd.bad = true
		return 0
	}
	rd.b = rd.b[n:]
	return v
}

func (rd *reader) u16() uint16 { return uint16(rd.uvarint(1<<16 - 1)) }
func (rd *reader) u32() uint32 { return uint32(rd.uvarint(1<<32 - 1)) }
func (rd *reader) u64() uint64 { return rd.uvarint(1<<64 - 1) }

func (rd *reader) bytes(dst []byte) {
	if len(rd.b) < len(dst) {
		rd.bad = true
		return
	}
	copy(dst, rd.b)
	rd.b = rd.b[len(dst):]
}

func (rd *reader) fixed(n int) []byte {
	if len(rd.b) < n {
		rd.bad = true
		return make([]byte, 16)[:n] // zeros; the read fails as a whole
	}
	v := rd.b[:n]
	rd.b = rd.b[n:]
	return v
}

// The forms of a hop (see appendReport).
const (
	hopFirst = iota
	hopCoded
	hopPredicted
)

// hop reads a hop of form f: in the coded and the predicted form its mask's top two bits are
// the width of its 32-bit values less one; in the first form they are 4 bytes each and the
// mask has no other bits. prevIn is the previous hop's IngressTS (0 for the first), which
// the predicted form's is written against.
func (rd *reader) hop(h *telemetry.Hop, f int, prevIn uint64) {
	b := rd.fixed(4)
	*h = telemetry.Hop{Fields: telemetry.Field(binary.LittleEndian.Uint16(b))}
	nz := binary.LittleEndian.Uint16(b[2:])
	var tsw byte // the predicted form's timestamp widths
	if f == hopPredicted && nz&(1<<12) != 0 {
		tsw = rd.byte()
	}
	w := 4
	switch {
	case f == hopFirst && nz >= 1<<numHopValues, f == hopPredicted && (nz&(1<<13) != 0 || tsw&15 > 8 || tsw>>4 > 8):
		rd.bad = true
		return
	case f != hopFirst:
		w = int(nz>>14) + 1
	}
	if nz&(1<<0) != 0 {
		h.QueueID = binary.LittleEndian.Uint16(rd.fixed(2))
	}
	if nz&(1<<1) != 0 {
		h.BufferID = rd.byte()
	}
	for i, v := range [...]*uint32{&h.NodeID, &h.IngressPort, &h.EgressPort, &h.HopLatency, &h.QueueOccupancy,
		&h.QueueCongestion, &h.TxUtil, &h.BufferOccupancy, &h.L2IngressPort, &h.L2EgressPort} {
		if nz&(1<<(i+2)) != 0 {
			for j, c := range rd.fixed(w) {
				*v |= uint32(c) << (8 * j)
			}
		}
	}
	if f == hopPredicted {
		h.IngressTS = prevIn + rd.zigzag(int(tsw&15))
		h.EgressTS = egressGuess(h) + rd.zigzag(int(tsw>>4))
		return
	}
	if nz&(1<<12) != 0 {
		h.IngressTS = binary.LittleEndian.Uint64(rd.fixed(8))
	}
	if nz&(1<<13) != 0 {
		h.EgressTS = binary.LittleEndian.Uint64(rd.fixed(8))
	}
}

// zigzag reads a difference written zig-zag encoded in n bytes, little endian.
func (rd *reader) zigzag(n int) uint64 {
	var z uint64
	for j, c := range rd.fixed(n) {
		z |= uint64(c) << (8 * j)
	}
	return z>>1 ^ -(z & 1)
}

// flow4 reads an IPv4 flow written as its key.
func (rd *reader) flow4(k *telemetry.FlowKey) {
	b := rd.fixed(13)
	k.SetIPv4(b[0:4], b[4:8])
	k.SrcPort, k.DstPort, k.Proto = binary.BigEndian.Uint16(b[8:]), binary.BigEndian.Uint16(b[10:]), b[12]
}

func (rd *reader) flow(k *telemetry.FlowKey) {
	rd.bytes(k.Src[:])
	rd.bytes(k.Dst[:])
	k.SrcPort, k.DstPort = rd.u16(), rd.u16()
	k.Proto, k.IPv6 = rd.byte(), rd.bool()
}

// unmarshalReport overwrites r with the report in b (its binary form, whole).
func unmarshalReport(r *telemetry.Report, b []byte) error {
	if len(b) < 2 || b[0] != reportVersion && b[0] != reportVersion2 {
		return fmt.Errorf("%w: version %d, this intake reads %d and %d", errReport, firstByte(b), reportVersion, reportVersion2)
	}
	r.Reset()
	rd := reader{b: b[2:]}
	groups := b[1]
	r.Format, r.Flags, r.Has = telemetry.Format(rd.byte()), telemetry.Flags(rd.byte()), telemetry.Has(rd.byte())
	r.HWID, r.DropReason, r.ReporterHop, r.Kernel = rd.byte(), rd.byte(), rd.bool(), telemetry.KernelDone(rd.byte())
	r.NodeID, r.Seq, r.IngressTS = rd.u32(), rd.u32(), rd.u64()
	coded, predicted := groups&gCoded != 0, b[0] == reportVersion2
	if groups&gFlow4 != 0 && (!coded || groups&gFlow == 0) || predicted && !coded {
		return fmt.Errorf("%w: groups %#x", errReport, groups)
	}
	if coded {
		r.RecvTime = int64(binary.LittleEndian.Uint64(rd.fixed(8)))
	} else if v, n := binary.Varint(rd.b); n <= 0 {
		rd.bad = true
	} else {
		r.RecvTime, rd.b = v, rd.b[n:]
	}
	if groups&gTR != 0 {
		t := &r.TR
		t.Ver, t.NProto, t.RepType, t.DSMdLen = rd.byte(), rd.byte(), rd.byte(), rd.byte()
		t.MDBits, t.DSID, t.DSMdBits, t.DSMdStatus, t.SinkNodeID = rd.u16(), rd.u16(), rd.u16(), rd.u16(), rd.u32()
	}
	if groups&gFlow4 != 0 {
		rd.flow4(&r.Flow)
	} else if groups&gFlow != 0 {
		rd.flow(&r.Flow)
	}
	if groups&gInner != 0 {
		in := &r.Inner
		in.Link, in.NVLANs, in.DSCP, in.TCPOpts = telemetry.LinkType(rd.byte()), rd.byte(), rd.byte(), rd.byte()
		in.Encap, in.Nested = telemetry.Encap(rd.byte()), telemetry.LinkType(rd.byte())
		in.VLANs[0], in.VLANs[1], in.IPOptLen, in.EncapArg, in.Trailer = rd.u16(), rd.u16(), rd.u16(), rd.u16(), rd.u16()
		t := byte(1) // the first and the coded form write the tunnel's flow always
		if predicted {
			t = rd.byte()
		}
		if t == 1 {
			rd.flow(&in.Tunnel)
		} else if t != 0 {
			rd.bad = true
		}
	}
	if groups&gINT != 0 {
		h := &r.INT
		h.Version, h.MX, h.Flags, h.HopML = telemetry.INTVersion(rd.byte()), rd.bool(), rd.byte(), rd.byte()
		h.RemHops, h.MaxHops, h.SourceDS, h.ShimType = rd.byte(), rd.byte(), rd.byte(), rd.byte()
		h.ShimExtra, h.OrigProto, h.Erratum, h.HasSourceSeq = rd.byte(), rd.byte(), rd.bool(), rd.bool()
		h.Bitmap, h.DSID, h.DSInstr, h.DSFlags, h.OrigPort = rd.u16(), rd.u16(), rd.u16(), rd.u16(), rd.u16()
		h.SourceSeq = rd.u32()
	}
	nh := rd.byte()
	if int(nh) > telemetry.MaxHops {
		return fmt.Errorf("%w: %d hops", errReport, nh)
	}
	r.NHops = nh
	hf := hopFirst
	if predicted {
		hf = hopPredicted
	} else if coded {
		hf = hopCoded
	}
	var prevIn uint64
	for i := range int(nh) {
		rd.hop(&r.Hops[i], hf, prevIn)
		prevIn = r.Hops[i].IngressTS
	}
	if groups&gDTA != 0 {
		d := &r.DTA
		d.Op, d.HeaderLen, d.Seq, d.Immediate = telemetry.DTAOp(rd.byte()), rd.byte(), rd.byte(), rd.bool()
		d.Retransmit, d.Redundancy, d.KeyLen, d.DataLen, d.Hop = rd.bool(), rd.byte(), rd.byte(), rd.byte(), rd.byte()
		d.ListID, d.Counter = rd.u32(), rd.u64()
		if kl, dl := d.KeyLen, d.DataLen; int(kl) > len(d.Key) || int(dl) > len(d.Data) {
			d.KeyLen, d.DataLen = 0, 0 // Reset clears only as far as these say
			return fmt.Errorf("%w: a DTA key of %d bytes, data of %d", errReport, kl, dl)
		}
		rd.bytes(d.Key[:d.KeyLen])
		rd.bytes(d.Data[:d.DataLen])
	}
	if groups&gLabels != 0 {
		r.LabelSpecific = rd.bool()
		nl := rd.byte()
		if int(nl) > telemetry.MaxLabelItems {
			return fmt.Errorf("%w: %d INT-label items", errReport, nl)
		}
		r.NLabels = nl
		for i := range int(nl) {
			l := &r.Labels[i]
			l.SwitchID, l.IngressPort, l.EgressPort = rd.byte(), rd.byte(), rd.byte()
			l.IngressTS, l.EgressTS = rd.u64(), rd.u64()
			l.EnqTS, l.EnqQDepth, l.DeqTimedelta, l.DeqQDepth = rd.u32(), rd.u32(), rd.u32(), rd.u32()
		}
	}
	if rd.bad {
		return fmt.Errorf("%w: truncated or out of range", errReport)
	}
	if len(rd.b) != 0 {
		return fmt.Errorf("%w: %d bytes after it", errReport, len(rd.b))
	}
	return nil
}
