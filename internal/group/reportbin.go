package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/intake-int/intake/telemetry"
)

// A report's binary form on the raw topic: every field of telemetry.Report, lossless, so
// that a processor's processors see exactly the report the inlet decoded, and compact: a
// 5-hop TR v2.0 report with a flow takes about 160 bytes where the struct takes 3 KiB.
//
//	report = version (1 byte, reportVersion) · groups (1 byte) · Format · Flags · Has · HWID ·
//	         DropReason · ReporterHop · Kernel (1 byte each) · NodeID · Seq · IngressTS ·
//	         RecvTime (varints; RecvTime zig-zag) · [TR] · [Flow] · [Inner] · [INT] ·
//	         hops · [DTA] · [labels]
//
// groups says which bracketed groups follow (bit 0 TR, 1 Flow, 2 Inner, 3 INT, 4 DTA, 5
// labels): a group left out is all zero. hops is a count, then per hop its Fields (2
// bytes), a bitmap of its value fields that are not zero (2 bytes, numHopValues' order)
// and those values in their own widths, little endian. The other unsigned fields are
// uvarints, bools and uint8s bytes, addresses 16 bytes.

// reportVersion is a report's first byte.
const reportVersion = 1

const (
	gTR = 1 << iota
	gFlow
	gInner
	gINT
	gDTA
	gLabels
)

// appendReport appends r's binary form to b.
func appendReport(b []byte, r *telemetry.Report) []byte {
	var groups byte
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
	// Room for the largest form of a report of these counts, then writes without appends
	// (a byte-by-byte append is most of the cost of a varint).
	w := writer{b: slices.Grow(b, 512+int(r.NHops)*(4+numHopValues*8)+int(r.NLabels)*64+int(d.KeyLen)+int(d.DataLen)), n: len(b)}
	w.b = w.b[:cap(w.b)]
	w.bytes(reportVersion, groups, byte(r.Format), byte(r.Flags), byte(r.Has), r.HWID, r.DropReason,
		bit(r.ReporterHop), byte(r.Kernel))
	w.u(uint64(r.NodeID))
	w.u(uint64(r.Seq))
	w.u(r.IngressTS)
	w.n += binary.PutVarint(w.b[w.n:], r.RecvTime)
	if groups&gTR != 0 {
		t := &r.TR
		w.bytes(t.Ver, t.NProto, t.RepType, t.DSMdLen)
		w.u(uint64(t.MDBits))
		w.u(uint64(t.DSID))
		w.u(uint64(t.DSMdBits))
		w.u(uint64(t.DSMdStatus))
		w.u(uint64(t.SinkNodeID))
	}
	if groups&gFlow != 0 {
		w.flow(&r.Flow)
	}
	if groups&gInner != 0 {
		in := &r.Inner
		w.bytes(byte(in.Link), in.NVLANs, in.DSCP, in.TCPOpts, byte(in.Encap), byte(in.Nested))
		w.u(uint64(in.VLANs[0]))
		w.u(uint64(in.VLANs[1]))
		w.u(uint64(in.IPOptLen))
		w.u(uint64(in.EncapArg))
		w.u(uint64(in.Trailer))
		w.flow(&in.Tunnel)
	}
	if groups&gINT != 0 {
		h := &r.INT
		w.bytes(byte(h.Version), bit(h.MX), h.Flags, h.HopML, h.RemHops, h.MaxHops, h.SourceDS, h.ShimType,
			h.ShimExtra, h.OrigProto, bit(h.Erratum), bit(h.HasSourceSeq))
		w.u(uint64(h.Bitmap))
		w.u(uint64(h.DSID))
		w.u(uint64(h.DSInstr))
		w.u(uint64(h.DSFlags))
		w.u(uint64(h.OrigPort))
		w.u(uint64(h.SourceSeq))
	}
	w.bytes(r.NHops)
	for i := range int(r.NHops) {
		w.hop(&r.Hops[i])
	}
	if groups&gDTA != 0 {
		w.bytes(byte(d.Op), d.HeaderLen, d.Seq, bit(d.Immediate), bit(d.Retransmit), d.Redundancy, d.KeyLen,
			d.DataLen, d.Hop)
		w.u(uint64(d.ListID))
		w.u(d.Counter)
		w.bytes(d.KeyBytes()...)
		w.bytes(d.DataBytes()...)
	}
	if groups&gLabels != 0 {
		w.bytes(bit(r.LabelSpecific), r.NLabels)
		for i := range int(r.NLabels) {
			l := &r.Labels[i]
			w.bytes(l.SwitchID, l.IngressPort, l.EgressPort)
			w.u(l.IngressTS)
			w.u(l.EgressTS)
			w.u(uint64(l.EnqTS))
			w.u(uint64(l.EnqQDepth))
			w.u(uint64(l.DeqTimedelta))
			w.u(uint64(l.DeqQDepth))
		}
	}
	return w.b[:w.n]
}

// writer writes into b, sized beforehand, at n.
type writer struct {
	b []byte
	n int
}

func (w *writer) u(x uint64) {
	for x >= 0x80 {
		w.b[w.n] = byte(x) | 0x80
		x >>= 7
		w.n++
	}
	w.b[w.n] = byte(x)
	w.n++
}

func (w *writer) bytes(v ...byte) { w.n += copy(w.b[w.n:], v) }

func (w *writer) flow(k *telemetry.FlowKey) {
	w.bytes(k.Src[:]...)
	w.bytes(k.Dst[:]...)
	w.u(uint64(k.SrcPort))
	w.u(uint64(k.DstPort))
	w.bytes(k.Proto, bit(k.IPv6))
}

func bit(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// numHopValues is the number of a hop's value fields: QueueID, BufferID, NodeID,
// IngressPort, EgressPort, HopLatency, QueueOccupancy, QueueCongestion, TxUtil,
// BufferOccupancy, L2IngressPort, L2EgressPort, IngressTS, EgressTS, in the form's order.
const numHopValues = 14

func (w *writer) hop(h *telemetry.Hop) {
	nz := nzBit(uint64(h.QueueID), 0) | nzBit(uint64(h.BufferID), 1) | nzBit(uint64(h.NodeID), 2) |
		nzBit(uint64(h.IngressPort), 3) | nzBit(uint64(h.EgressPort), 4) | nzBit(uint64(h.HopLatency), 5) |
		nzBit(uint64(h.QueueOccupancy), 6) | nzBit(uint64(h.QueueCongestion), 7) | nzBit(uint64(h.TxUtil), 8) |
		nzBit(uint64(h.BufferOccupancy), 9) | nzBit(uint64(h.L2IngressPort), 10) | nzBit(uint64(h.L2EgressPort), 11) |
		nzBit(h.IngressTS, 12) | nzBit(h.EgressTS, 13)
	binary.LittleEndian.PutUint16(w.b[w.n:], uint16(h.Fields))
	binary.LittleEndian.PutUint16(w.b[w.n+2:], uint16(nz))
	w.n += 4
	// Only the values that are there (a hop usually names a node, a latency, a queue and a
	// port or two), in order, each in its own width: a varint would cost more to write than
	// the bytes it saves cost the compressor.
	if nz&(1<<0) != 0 {
		binary.LittleEndian.PutUint16(w.b[w.n:], h.QueueID)
		w.n += 2
	}
	if nz&(1<<1) != 0 {
		w.b[w.n] = h.BufferID
		w.n++
	}
	for i, v := range [...]*uint32{&h.NodeID, &h.IngressPort, &h.EgressPort, &h.HopLatency, &h.QueueOccupancy,
		&h.QueueCongestion, &h.TxUtil, &h.BufferOccupancy, &h.L2IngressPort, &h.L2EgressPort} {
		if nz&(1<<(i+2)) != 0 {
			binary.LittleEndian.PutUint32(w.b[w.n:], *v)
			w.n += 4
		}
	}
	if nz&(1<<12) != 0 {
		binary.LittleEndian.PutUint64(w.b[w.n:], h.IngressTS)
		w.n += 8
	}
	if nz&(1<<13) != 0 {
		binary.LittleEndian.PutUint64(w.b[w.n:], h.EgressTS)
		w.n += 8
	}
}

func nzBit(x uint64, i uint) uint64 {
	if x != 0 {
		return 1 << i
	}
	return 0
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
		return make([]byte, 8)[:n] // zeros; the read fails as a whole
	}
	v := rd.b[:n]
	rd.b = rd.b[n:]
	return v
}

func (rd *reader) hop(h *telemetry.Hop) {
	b := rd.fixed(4)
	*h = telemetry.Hop{Fields: telemetry.Field(binary.LittleEndian.Uint16(b))}
	nz := binary.LittleEndian.Uint16(b[2:])
	if nz >= 1<<numHopValues {
		rd.bad = true
		return
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
			*v = binary.LittleEndian.Uint32(rd.fixed(4))
		}
	}
	if nz&(1<<12) != 0 {
		h.IngressTS = binary.LittleEndian.Uint64(rd.fixed(8))
	}
	if nz&(1<<13) != 0 {
		h.EgressTS = binary.LittleEndian.Uint64(rd.fixed(8))
	}
}

func (rd *reader) flow(k *telemetry.FlowKey) {
	rd.bytes(k.Src[:])
	rd.bytes(k.Dst[:])
	k.SrcPort, k.DstPort = rd.u16(), rd.u16()
	k.Proto, k.IPv6 = rd.byte(), rd.bool()
}

// unmarshalReport overwrites r with the report in b (its binary form, whole).
func unmarshalReport(r *telemetry.Report, b []byte) error {
	if len(b) < 2 || b[0] != reportVersion {
		return fmt.Errorf("%w: version %d, this intake reads %d", errReport, firstByte(b), reportVersion)
	}
	r.Reset()
	rd := reader{b: b[2:]}
	groups := b[1]
	r.Format, r.Flags, r.Has = telemetry.Format(rd.byte()), telemetry.Flags(rd.byte()), telemetry.Has(rd.byte())
	r.HWID, r.DropReason, r.ReporterHop, r.Kernel = rd.byte(), rd.byte(), rd.bool(), telemetry.KernelDone(rd.byte())
	r.NodeID, r.Seq, r.IngressTS = rd.u32(), rd.u32(), rd.u64()
	v, n := binary.Varint(rd.b)
	if n <= 0 {
		rd.bad = true
	} else {
		r.RecvTime, rd.b = v, rd.b[n:]
	}
	if groups&gTR != 0 {
		t := &r.TR
		t.Ver, t.NProto, t.RepType, t.DSMdLen = rd.byte(), rd.byte(), rd.byte(), rd.byte()
		t.MDBits, t.DSID, t.DSMdBits, t.DSMdStatus, t.SinkNodeID = rd.u16(), rd.u16(), rd.u16(), rd.u16(), rd.u32()
	}
	if groups&gFlow != 0 {
		rd.flow(&r.Flow)
	}
	if groups&gInner != 0 {
		in := &r.Inner
		in.Link, in.NVLANs, in.DSCP, in.TCPOpts = telemetry.LinkType(rd.byte()), rd.byte(), rd.byte(), rd.byte()
		in.Encap, in.Nested = telemetry.Encap(rd.byte()), telemetry.LinkType(rd.byte())
		in.VLANs[0], in.VLANs[1], in.IPOptLen, in.EncapArg, in.Trailer = rd.u16(), rd.u16(), rd.u16(), rd.u16(), rd.u16()
		rd.flow(&in.Tunnel)
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
	for i := range int(nh) {
		rd.hop(&r.Hops[i])
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
