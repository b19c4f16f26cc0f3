package wire

import (
	"math/bits"

	"github.com/intake-int/intake/telemetry"
)

// This file decodes embedded INT: the shims (TCP/UDP, VXLAN-GPE, Geneve, GRE), the INT
// metadata header of v0.5, v1.0 and v2.0/v2.1 (MD and MX), and the per-hop metadata stack
// (docs/wire-formats.md). The stack is newest hop first in every version, and so is the hop list.

// itemLayout is how a producer sizes and splits the instruction bitmap's items.
type itemLayout uint8

const (
	layoutSpec         itemLayout = iota // the specification of the INT version
	layoutINTCollector                   // INTCollector: queue words 16|16, level-2 ports one 16|16 word
	layoutGEANT                          // GEANT: 8-byte timestamps, level-2 ports one 16|16 word
)

// layout returns the item layout the decoder's quirks give INT version v.
func (rd *Reader) layout(v telemetry.INTVersion) itemLayout {
	q := &rd.d.cfg.Quirks
	switch {
	case q.INTCollectorGen && (v == telemetry.INT10 || v == telemetry.INT05):
		return layoutINTCollector
	case q.INTCollector && v == telemetry.INT10:
		return layoutINTCollector
	}
	return layoutSpec
}

// itemSize is the size in bytes of instruction bit (0 = MSB) for INT version v.
func itemSize(v telemetry.INTVersion, bit int, lay itemLayout) int {
	switch {
	case lay == layoutGEANT:
		if bit == 4 || bit == 5 {
			return 8
		}
	case v == telemetry.INT10:
		if bit == 6 && lay == layoutSpec {
			return 8 // level-2 port ids, 32+32
		}
	case v == telemetry.INT2x:
		if bit >= 4 && bit <= 6 {
			return 8 // 8-byte timestamps and level-2 port ids
		}
	}
	return 4
}

// hopPlan is a bitmap compiled once per stack: where each item sits in a hop block and how
// wide it is, so that decoding a hop is straight-line code with branches that every hop of
// the stack takes the same way.
type hopPlan struct {
	size int     // bytes of the baseline items (checksum complement and reserved bits included)
	at   [9]int  // offset of the item of bit b (0 = MSB) in a hop block; -1 when absent
	l2   l2Shape // what bit 6 holds
	// wideTS: 8-byte timestamps (v2.x, GEANT); queue16: the INTCollector 16|16 queue word;
	// buffer: bit 8 is buffer id|occupancy (v2.x; reserved before).
	wideTS, queue16, buffer bool
	// v2Base: INT v2.x in the specification's layout with the baseline items of bits 0-7
	// and not bit 8, the common bitmap (0xff00, with or without reserved bits and the
	// checksum complement after): decodeHopV2Base decodes it with fixed offsets.
	v2Base bool
}

// l2Shape is the layout of instruction bit 6.
type l2Shape uint8

const (
	l2Wide         l2Shape = iota // level-2 ingress and egress port ids, 32+32 (v1.0, v2.x)
	l2Word                        // one word, 16|16 (INTCollector, GEANT)
	l2Congestion                  // queue id 8 | queue congestion 24 (v0.5)
	l2Congestion16                // queue id 16 | queue congestion 16 (v0.5 as INTCollector reads it)
)

// hopPlan returns the plan of an INT v stack with this instruction bitmap, in the item
// layout the decoder's quirks give v.
func (rd *Reader) hopPlan(v telemetry.INTVersion, bitmap uint16) *hopPlan {
	return rd.hopPlanLayout(v, bitmap, rd.layout(v))
}

func (rd *Reader) hopPlanLayout(v telemetry.INTVersion, bitmap uint16, lay itemLayout) *hopPlan {
	key := 1<<31 | uint32(lay)<<24 | uint32(v)<<16 | uint32(bitmap)
	if rd.planKey != key {
		rd.plan, rd.planKey = compilePlan(v, bitmap, lay), key
	}
	return &rd.plan
}

func compilePlan(v telemetry.INTVersion, bitmap uint16, lay itemLayout) hopPlan {
	p := hopPlan{at: [9]int{-1, -1, -1, -1, -1, -1, -1, -1, -1}}
	p.wideTS = v == telemetry.INT2x || lay == layoutGEANT
	p.queue16 = lay == layoutINTCollector
	p.buffer = v == telemetry.INT2x
	switch {
	case v == telemetry.INT05 && lay == layoutINTCollector:
		p.l2 = l2Congestion16
	case v == telemetry.INT05:
		p.l2 = l2Congestion
	case lay != layoutSpec:
		p.l2 = l2Word
	}
	for m := bitmap; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		bit := bits.LeadingZeros16(m)
		if bit < len(p.at) {
			p.at[bit] = p.size
		}
		p.size += itemSize(v, bit, lay)
	}
	p.v2Base = v == telemetry.INT2x && lay == layoutSpec && bitmap&0xff80 == 0xff00
	return p
}

// planSize is the hop size a bitmap asks for in a layout, without touching the Reader's
// cached plan (for recognising deviations).
func planSize(v telemetry.INTVersion, bitmap uint16, lay itemLayout) int {
	n := 0
	for m := bitmap; m != 0; m &^= 0x8000 >> bits.LeadingZeros16(m) {
		n += itemSize(v, bits.LeadingZeros16(m), lay)
	}
	return n
}

// decodeHop fills h from one hop's block p (which holds at least pl.size bytes). Fields are
// gathered in a local mask and stored once: this is most of a report's decoding time.
func decodeHop(h *telemetry.Hop, pl *hopPlan, p []byte) {
	p = p[:pl.size]
	var f telemetry.Field
	if o := pl.at[0]; o >= 0 {
		if x := be.Uint32(p[o:]); x != ones32 {
			h.NodeID, f = x, f|telemetry.FNodeID
		}
	}
	if o := pl.at[1]; o >= 0 {
		x := be.Uint32(p[o:])
		if x>>16 != ones16 {
			h.IngressPort, f = x>>16, f|telemetry.FIngressPort
		}
		if x&ones16 != ones16 {
			h.EgressPort, f = x&ones16, f|telemetry.FEgressPort
		}
	}
	if o := pl.at[2]; o >= 0 {
		if x := be.Uint32(p[o:]); x != ones32 {
			h.HopLatency, f = x, f|telemetry.FHopLatency
		}
	}
	if o := pl.at[3]; o >= 0 {
		x := be.Uint32(p[o:])
		qid, occ, qa, oa := x>>24, x&ones24, uint32(ones8), uint32(ones24)
		if pl.queue16 {
			qid, occ, qa, oa = x>>16, x&ones16, ones16, ones16
		}
		if qid != qa {
			h.QueueID, f = uint16(qid), f|telemetry.FQueueID
		}
		if occ != oa {
			h.QueueOccupancy, f = occ, f|telemetry.FQueueOccupancy
		}
	}
	if o := pl.at[4]; o >= 0 {
		if pl.wideTS {
			if ts := be.Uint64(p[o:]); ts != ones64 {
				h.IngressTS, f = ts, f|telemetry.FIngressTS
			}
		} else if x := be.Uint32(p[o:]); x != ones32 {
			h.IngressTS, f = uint64(x), f|telemetry.FIngressTS
		}
	}
	if o := pl.at[5]; o >= 0 {
		if pl.wideTS {
			if ts := be.Uint64(p[o:]); ts != ones64 {
				h.EgressTS, f = ts, f|telemetry.FEgressTS
			}
		} else if x := be.Uint32(p[o:]); x != ones32 {
			h.EgressTS, f = uint64(x), f|telemetry.FEgressTS
		}
	}
	if o := pl.at[6]; o >= 0 {
		x := be.Uint32(p[o:])
		switch pl.l2 {
		case l2Congestion:
			if x>>24 != ones8 {
				h.QueueID, f = uint16(x>>24), f|telemetry.FQueueID
			}
			if x&ones24 != ones24 {
				h.QueueCongestion, f = x&ones24, f|telemetry.FQueueCongestion
			}
		case l2Congestion16:
			if x>>16 != ones16 {
				h.QueueID, f = uint16(x>>16), f|telemetry.FQueueID
			}
			if x&ones16 != ones16 {
				h.QueueCongestion, f = x&ones16, f|telemetry.FQueueCongestion
			}
		case l2Word:
			if x>>16 != ones16 {
				h.L2IngressPort, f = x>>16, f|telemetry.FL2IngressPort
			}
			if x&ones16 != ones16 {
				h.L2EgressPort, f = x&ones16, f|telemetry.FL2EgressPort
			}
		default:
			if x != ones32 {
				h.L2IngressPort, f = x, f|telemetry.FL2IngressPort
			}
			if y := be.Uint32(p[o+4:]); y != ones32 {
				h.L2EgressPort, f = y, f|telemetry.FL2EgressPort
			}
		}
	}
	if o := pl.at[7]; o >= 0 {
		if x := be.Uint32(p[o:]); x != ones32 {
			h.TxUtil, f = x, f|telemetry.FTxUtil
		}
	}
	if o := pl.at[8]; o >= 0 && pl.buffer {
		x := be.Uint32(p[o:])
		if x>>24 != ones8 {
			h.BufferID, f = uint8(x>>24), f|telemetry.FBufferID
		}
		if x&ones24 != ones24 {
			h.BufferOccupancy, f = x&ones24, f|telemetry.FBufferOccupancy
		}
	}
	// Bits 9-14 (reserved) and 15 (checksum complement) are skipped by their size.
	h.Fields |= f
}

func setU32(h *telemetry.Hop, f telemetry.Field, dst *uint32, v uint32) {
	if v != ones32 {
		*dst = v
		h.Fields |= f
	}
}

func setTS(h *telemetry.Hop, f telemetry.Field, dst *uint64, w []byte) {
	if len(w) == 8 {
		if v := be.Uint64(w); v != ones64 {
			*dst, h.Fields = v, h.Fields|f
		}
		return
	}
	if v := be.Uint32(w); v != ones32 {
		*dst, h.Fields = uint64(v), h.Fields|f
	}
}

func setPorts16(h *telemetry.Hop, x uint32) {
	if x>>16 != ones16 {
		h.IngressPort, h.Fields = x>>16, h.Fields|telemetry.FIngressPort
	}
	if x&ones16 != ones16 {
		h.EgressPort, h.Fields = x&ones16, h.Fields|telemetry.FEgressPort
	}
}

func setQueue(h *telemetry.Hop, x uint32) {
	if x>>24 != ones8 {
		h.QueueID, h.Fields = uint16(x>>24), h.Fields|telemetry.FQueueID
	}
	if x&ones24 != ones24 {
		h.QueueOccupancy, h.Fields = x&ones24, h.Fields|telemetry.FQueueOccupancy
	}
}

func setBuffer(h *telemetry.Hop, x uint32) {
	if x>>24 != ones8 {
		h.BufferID, h.Fields = uint8(x>>24), h.Fields|telemetry.FBufferID
	}
	if x&ones24 != ones24 {
		h.BufferOccupancy, h.Fields = x&ones24, h.Fields|telemetry.FBufferOccupancy
	}
}

// decodeStack splits a stack of n hops of hs bytes each (newest first) into r's hop list.
func (rd *Reader) decodeStack(r *telemetry.Report, pl *hopPlan, stack []byte, hs, base int) error {
	if hs == 0 {
		return nil
	}
	n := len(stack) / hs
	if int(r.NHops)+n > telemetry.MaxHops {
		return rd.fail(TooMany, "int stack", "hops", base, uint64(n))
	}
	if pl.v2Base {
		for i := 0; i < n; i++ {
			decodeHopV2Base(r.AddHop(), stack[i*hs:])
		}
		return nil
	}
	for i := 0; i < n; i++ {
		h := r.AddHop()
		decodeHop(h, pl, stack[i*hs:])
	}
	return nil
}

// decodeHopV2Base is decodeHop for a plan with v2Base: the items of bits 0-7 at their fixed
// offsets (node id 0, ports 4, hop latency 8, queue 12, ingress and egress timestamps 16 and
// 24, level-2 ports 32, tx utilization 40), with one bounds check.
func decodeHopV2Base(h *telemetry.Hop, p []byte) {
	p = p[:44]
	var f telemetry.Field
	if x := be.Uint32(p[0:4]); x != ones32 {
		h.NodeID, f = x, f|telemetry.FNodeID
	}
	x := be.Uint32(p[4:8])
	if x>>16 != ones16 {
		h.IngressPort, f = x>>16, f|telemetry.FIngressPort
	}
	if x&ones16 != ones16 {
		h.EgressPort, f = x&ones16, f|telemetry.FEgressPort
	}
	if x := be.Uint32(p[8:12]); x != ones32 {
		h.HopLatency, f = x, f|telemetry.FHopLatency
	}
	x = be.Uint32(p[12:16])
	if x>>24 != ones8 {
		h.QueueID, f = uint16(x>>24), f|telemetry.FQueueID
	}
	if x&ones24 != ones24 {
		h.QueueOccupancy, f = x&ones24, f|telemetry.FQueueOccupancy
	}
	if ts := be.Uint64(p[16:24]); ts != ones64 {
		h.IngressTS, f = ts, f|telemetry.FIngressTS
	}
	if ts := be.Uint64(p[24:32]); ts != ones64 {
		h.EgressTS, f = ts, f|telemetry.FEgressTS
	}
	if x := be.Uint32(p[32:36]); x != ones32 {
		h.L2IngressPort, f = x, f|telemetry.FL2IngressPort
	}
	if y := be.Uint32(p[36:40]); y != ones32 {
		h.L2EgressPort, f = y, f|telemetry.FL2EgressPort
	}
	if x := be.Uint32(p[40:44]); x != ones32 {
		h.TxUtil, f = x, f|telemetry.FTxUtil
	}
	h.Fields |= f
}

// parseMD decodes an INT metadata header and its stack. md holds exactly the header and
// the stack (the caller has removed shims and any v0.5 tail); base is md's offset in the
// datagram. want is the version the shim implies (INT05 for the old one-byte-type shims,
// which covers v0.5 and v1.0, or INT2x).
func (rd *Reader) parseMD(r *telemetry.Report, md []byte, base int, want telemetry.INTVersion, mx bool) error {
	if len(md) < 8 {
		return rd.fail(Truncated, "int md header", "ver", base, 0)
	}
	ver := md[0] >> 4
	switch {
	case want == telemetry.INT2x && ver == 2:
		return rd.parseMD2x(r, md, base, mx)
	case want == telemetry.INT05 && ver == 1:
		return rd.parseMD10(r, md, base)
	case want == telemetry.INT05 && ver == 0:
		return rd.parseMD05(r, md, base, rd.layout(telemetry.INT05), false)
	}
	return rd.fail(UnknownVersion, "int md header", "ver", base, uint64(ver))
}

func (rd *Reader) parseMD2x(r *telemetry.Report, md []byte, base int, mx bool) error {
	if len(md) < 12 { // the offset of DS flags, or the input's end when it ends before them
		return rd.fail(Truncated, "int md header", "ds_flags", base+min(10, len(md)), 0)
	}
	in := &r.INT
	in.Version = telemetry.INT2x
	in.Flags = md[0] & 0x0f
	in.Bitmap = be.Uint16(md[4:])
	in.DSID = be.Uint16(md[6:])
	in.DSInstr = be.Uint16(md[8:])
	in.DSFlags = be.Uint16(md[10:])
	if mx {
		in.MX = true
		in.SourceDS = uint8((len(md) - 12) / 4)
		return nil
	}
	in.HopML = md[2] & 0x1f
	in.RemHops = md[3]
	stack := md[12:]
	hs := int(in.HopML) * 4
	pl := rd.hopPlanLayout(telemetry.INT2x, in.Bitmap, layoutSpec) // no quirk changes v2.x items
	if hs < pl.size {
		return rd.fail(BadValue, "int md header", "hop_ml", base+2, uint64(in.HopML))
	}
	if hs == 0 {
		if len(stack) > 0 && in.Bitmap != 0 {
			return rd.fail(BadValue, "int md header", "hop_ml", base+2, 0)
		}
		in.SourceDS = uint8(len(stack) / 4)
		return nil
	}
	// A remainder that is not a whole hop is the source's domain-specific metadata, at
	// the bottom of the stack (INT v2.1 source-only metadata).
	in.SourceDS = uint8(len(stack) % hs / 4)
	return rd.decodeStack(r, pl, stack, hs, base+12)
}

// geantBitmap is the instruction bitmap in the specification's order from a GEANT mask,
// whose instruction bits 0-7 are its low byte; ok is false for a mask that uses both bytes.
func geantBitmap(mask uint16) (uint16, bool) {
	if mask&0xff == 0 {
		return mask, true
	}
	return mask << 8, mask&0xff00 == 0
}

// parseMD10 decodes an INT v1.0 header and stack (or, under intcollector_gen, the same
// layout sent with Ver 0). HopML must be exactly the bitmap's items: v1.0 has no
// domain-specific metadata, so extra words per hop are a producer's other item sizes
// (GEANT's 8-byte timestamps, INTCollector's one-word level-2 ports), never skipped.
func (rd *Reader) parseMD10(r *telemetry.Report, md []byte, base int) error {
	q := &rd.d.cfg.Quirks
	in := &r.INT
	in.Version = telemetry.INT10
	in.Flags = (md[0]&0x0f)<<1 | md[1]>>7
	in.HopML = md[2] & 0x1f
	in.RemHops = md[3]
	in.Bitmap = be.Uint16(md[4:])
	stack := md[8:]
	hs := int(in.HopML) * 4
	bitmap, lay := in.Bitmap, rd.layout(telemetry.INT10)
	if q.GEANT {
		var ok bool
		if bitmap, ok = geantBitmap(bitmap); !ok {
			return rd.fail(BadValue, "int md header", "instruction_bitmap", base+4, uint64(in.Bitmap))
		}
		lay = layoutGEANT
		in.SourceSeq, in.HasSourceSeq = uint32(be.Uint16(md[6:])), true
	}
	pl := rd.hopPlanLayout(telemetry.INT10, bitmap, lay)
	if hs != pl.size || hs == 0 && len(stack) > 0 {
		return rd.failSet(BadValue, "int md header", "hop_ml", base+2, uint64(in.HopML), rd.hopMLDeviation(in.Bitmap, hs, lay))
	}
	if hs > 0 && len(stack)%hs != 0 {
		// The v1.0 spec's own TCP example has a shim Length one word too large.
		if (len(stack)-4)%hs != 0 {
			return rd.fail(BadLength, "int shim", "length", base-2, uint64(len(stack)))
		}
		in.Erratum = true
		stack = stack[:len(stack)-4]
	}
	return rd.decodeStack(r, pl, stack, hs, base+8)
}

// hopMLDeviation names the quirk under which a v1.0 HopML of hs bytes fits the bitmap.
func (rd *Reader) hopMLDeviation(mask uint16, hs int, lay itemLayout) string {
	if hs == 0 {
		return ""
	}
	// Without timestamps both read level-2 ports as one word; the older quirk is named.
	if lay == layoutSpec && planSize(telemetry.INT10, mask, layoutINTCollector) == hs {
		return "quirks.intcollector"
	}
	if g, ok := geantBitmap(mask); ok && lay != layoutGEANT && planSize(telemetry.INT10, g, layoutGEANT) == hs {
		return "quirks.geant"
	}
	return ""
}

// parseMD05 decodes an INT v0.5 header (or the older 2-bit-Ver header with the same counts)
// and its stack. geant2: GEANT's header with a 2-bit Ver of 1 and its mask order.
func (rd *Reader) parseMD05(r *telemetry.Report, md []byte, base int, lay itemLayout, geant2 bool) error {
	in := &r.INT
	in.Version = telemetry.INT05
	in.Flags = md[0] & 0x0f
	ins := int(md[1] & 0x1f)
	in.MaxHops = md[2]
	total := int(md[3])
	in.Bitmap = be.Uint16(md[4:])
	bitmap := in.Bitmap
	if geant2 {
		in.Flags = md[0] >> 2 & 0x0f // Ver 2 | Rep 2 | C | E | R 2
		bitmap, _ = geantBitmap(bitmap)
	}
	if ins != bits.OnesCount16(bitmap) {
		return rd.fail(BadValue, "int md header", "ins_cnt", base+1, uint64(ins))
	}
	pl := rd.hopPlanLayout(telemetry.INT05, bitmap, lay)
	stack := md[8:]
	if len(stack) != pl.size*total {
		return rd.fail(BadLength, "int md header", "total_hop_cnt", base+3, uint64(total))
	}
	return rd.decodeStack(r, pl, stack, pl.size, base+8)
}

// parseShimL4 decodes INT after a TCP or UDP header (or, with NPT 1/2, after the UDP header
// whose port marked INT). b starts at the shim. It returns the bytes consumed.
func (rd *Reader) parseShimL4(r *telemetry.Report, b []byte, base int) (int, error) {
	if len(b) < 4 {
		return 0, rd.fail(Truncated, "int shim", "type", base, 0)
	}
	in := &r.INT
	switch b[0] {
	case 0x01, 0x03:
		return rd.parseShimOld(r, b, base)
	case 0x02:
		return 0, rd.fail(Unsupported, "int shim", "type", base, 2)
	}
	typ := b[0] >> 4
	if typ != 1 && typ != 3 || b[0]&0x03 != 0 {
		return 0, rd.fail(BadValue, "int shim", "type", base, uint64(b[0]))
	}
	in.ShimType = typ
	r.Inner.EncapArg = uint16(b[0]>>2) & 3
	n := 4 + int(b[1])*4 // v2.x: Length excludes the shim
	if n < 16 {
		return 0, rd.fail(BadLength, "int shim", "length", base+1, uint64(b[1]))
	}
	if n > len(b) {
		return 0, rd.fail(Truncated, "int shim", "length", base+1, uint64(b[1]))
	}
	switch r.Inner.EncapArg {
	case 0:
		in.ShimExtra = b[3] >> 2 // saved DSCP
	case 1:
		in.OrigPort = be.Uint16(b[2:])
	case 2:
		in.OrigProto = b[3]
	default:
		return 0, rd.fail(BadValue, "int shim", "npt", base, 3)
	}
	return n, rd.parseMD(r, b[4:n], base+4, telemetry.INT2x, typ == 3)
}

// parseShimOld decodes the one-byte-type TCP/UDP shim of v0.5 and v1.0 (Type 1: Type 8 |
// Rsvd 8 | Length 8 (incl. the shim) | v1.0 DSCP 6 | R 2) and what real producers put
// behind it: Intel host-int's Type 3, GEANT's 2-bit-Ver header, INTCollector's generators.
func (rd *Reader) parseShimOld(r *telemetry.Report, b []byte, base int) (int, error) {
	q := &rd.d.cfg.Quirks
	in := &r.INT
	n := int(b[2]) * 4 // includes the shim (and the v0.5 tail)
	if n == 0 && b[0] == 0x01 {
		if gn := genV05Len(b); gn > 0 { // INTCollector's v0.5 generator leaves Length 0
			if !q.INTCollectorGen {
				return 0, rd.failSet(BadLength, "int shim", "length", base+2, 0, "quirks.intcollector_gen")
			}
			n = gn
		}
	}
	if n < 12 {
		return 0, rd.fail(BadLength, "int shim", "length", base+2, uint64(b[2]))
	}
	if n > len(b) {
		return 0, rd.fail(Truncated, "int shim", "length", base+2, uint64(b[2]))
	}
	if b[0] == 0x03 {
		return n, rd.parseHostINT(r, b[:n], base)
	}
	in.ShimType = 1
	md := b[4:n]
	switch v := md[0] >> 4; {
	case v == 0 && genV10(md):
		// INTCollector's v1.0 generator: a v1.0 header (HopML, RemHops) with Ver 0.
		if !q.INTCollectorGen {
			return 0, rd.failSet(BadValue, "int md header", "ver", base+4, 0, "quirks.intcollector_gen")
		}
		in.ShimExtra = b[3]
		return n, rd.parseMD10(r, md, base+4)
	case v == 0: // v0.5: a 4-byte tail follows the stack
		if n < 16 {
			return 0, rd.fail(BadLength, "int shim", "length", base+2, uint64(b[2]))
		}
		t := b[n-4:]
		in.OrigProto, in.OrigPort, in.ShimExtra = t[0], be.Uint16(t[1:]), t[3]
		return n, rd.parseMD05(r, md[:len(md)-4], base+4, rd.layout(telemetry.INT05), false)
	case v >= 4 && v <= 7: // a 2-bit Ver of 1: GEANT's testbed header
		tail, ok := geantV1Stack(md)
		if !ok {
			return 0, rd.fail(UnknownVersion, "int md header", "ver", base+4, uint64(v))
		}
		if !q.GEANT {
			return 0, rd.failSet(UnknownVersion, "int md header", "ver", base+4, uint64(v), "quirks.geant")
		}
		if tail {
			t := b[n-4:]
			in.OrigProto, in.OrigPort, in.ShimExtra = t[0], be.Uint16(t[1:]), t[3]
			md = md[:len(md)-4]
		}
		return n, rd.parseMD05(r, md, base+4, layoutGEANT, true)
	}
	in.ShimExtra = b[3]
	return n, rd.parseMD(r, md, base+4, telemetry.INT05, false)
}

// genV05Len is the shim length an INTCollector-generated v0.5 INT header with Length 0
// implies (shim, header, InsCnt·4·TotalHopCnt, tail), or 0 when the header is not such.
func genV05Len(b []byte) int {
	if len(b) < 12 || b[4]>>4 != 0 {
		return 0
	}
	ins, total := int(b[5]&0x1f), int(b[7])
	if ins == 0 || ins != bits.OnesCount16(be.Uint16(b[8:])) {
		return 0
	}
	if n := 16 + ins*4*total; n <= len(b) {
		return n
	}
	return 0
}

// genV10 reports whether md, whose Ver is 0, is not a valid v0.5 header but is a v1.0 one
// in INTCollector's item sizes: what its v1.0 generator sends.
func genV10(md []byte) bool {
	bitmap := be.Uint16(md[4:])
	if int(md[1]&0x1f) == bits.OnesCount16(bitmap) {
		return false
	}
	hs := int(md[2]&0x1f) * 4
	return hs > 0 && planSize(telemetry.INT10, bitmap, layoutINTCollector) == hs && (len(md)-8)%hs == 0
}

// geantV1Stack reports whether md (header, stack and perhaps a tail) is GEANT's 2-bit-Ver
// header with a consistent stack, and whether a tail follows it.
func geantV1Stack(md []byte) (tail, ok bool) {
	bitmap, ok := geantBitmap(be.Uint16(md[4:]))
	ins := int(md[1] & 0x1f)
	if !ok || ins == 0 || ins != bits.OnesCount16(bitmap) {
		return false, false
	}
	stack := planSize(telemetry.INT05, bitmap, layoutGEANT) * int(md[3])
	switch len(md) - 8 - stack {
	case 0:
		return false, true
	case 4:
		return true, true
	}
	return false, false
}

// parseHostINT decodes Intel host-int's Type 3 shim (Host_INT_fmt.md in
// github.com/intel/host-int; docs/wire-formats.md, "Producers and their quirks"): a v0.5
// header and stack, the flow's 4-byte sequence number, then the v0.5 tail unless a sink
// removed it for its report. Length counts all of it. b is the shim's Length bytes.
func (rd *Reader) parseHostINT(r *telemetry.Report, b []byte, base int) error {
	in := &r.INT
	md := b[4:]
	bitmap := be.Uint16(md[4:])
	ins, stack := int(md[1]&0x1f), int(md[1]&0x1f)*4*int(md[3])
	rest := len(md) - 8 - stack
	if md[0]>>4 != 0 || ins == 0 || ins != bits.OnesCount16(bitmap) || rest != 4 && rest != 8 {
		return rd.fail(BadValue, "int shim", "type", base, 3)
	}
	if !rd.d.cfg.Quirks.HostINT {
		return rd.failSet(BadValue, "int shim", "type", base, 3, "quirks.host_int")
	}
	in.ShimType = 3
	seq := md[8+stack:]
	in.SourceSeq, in.HasSourceSeq = be.Uint32(seq), true
	if rest == 8 {
		t := seq[4:]
		in.OrigProto, in.OrigPort, in.ShimExtra = t[0], be.Uint16(t[1:]), t[3]
	}
	return rd.parseMD05(r, md[:8+stack], base+4, layoutSpec, false)
}

// parseShimGPE decodes the INT shim that a VXLAN-GPE next protocol points to; it returns
// the bytes consumed and the shim's next protocol.
func (rd *Reader) parseShimGPE(r *telemetry.Report, b []byte, base int) (int, uint8, error) {
	if len(b) < 4 {
		return 0, 0, rd.fail(Truncated, "int gpe shim", "type", base, 0)
	}
	in := &r.INT
	if b[0] == 0x01 { // v0.5 / v1.0: Type 8 | Rsvd 8 | Length 8 (incl. shim) | Next 8
		in.ShimType = 1
		n := int(b[2]) * 4
		if n < 12 {
			return 0, 0, rd.fail(BadLength, "int gpe shim", "length", base+2, uint64(b[2]))
		}
		if n > len(b) {
			return 0, 0, rd.fail(Truncated, "int gpe shim", "length", base+2, uint64(b[2]))
		}
		return n, b[3], rd.parseMD(r, b[4:n], base+4, telemetry.INT05, false)
	}
	typ := b[0] >> 4
	if typ != 1 && typ != 3 || b[0]&0x0f != 0 {
		return 0, 0, rd.fail(BadValue, "int gpe shim", "type", base, uint64(b[0]))
	}
	in.ShimType = typ
	in.ShimExtra = b[2] >> 7 // G
	n := 4 + int(b[1])*4
	if n < 16 {
		return 0, 0, rd.fail(BadLength, "int gpe shim", "length", base+1, uint64(b[1]))
	}
	if n > len(b) {
		return 0, 0, rd.fail(Truncated, "int gpe shim", "length", base+1, uint64(b[1]))
	}
	return n, b[3], rd.parseMD(r, b[4:n], base+4, telemetry.INT2x, typ == 3)
}

// parseShimGRE decodes the v2.x GRE shim; it returns the bytes consumed and the EtherType
// of what follows.
func (rd *Reader) parseShimGRE(r *telemetry.Report, b []byte, base int) (int, uint16, error) {
	if len(b) < 4 {
		return 0, 0, rd.fail(Truncated, "int gre shim", "type", base, 0)
	}
	typ := b[0] >> 4
	if typ != 1 && typ != 3 || b[0]&0x07 != 0 {
		return 0, 0, rd.fail(BadValue, "int gre shim", "type", base, uint64(b[0]))
	}
	in := &r.INT
	in.ShimType = typ
	in.ShimExtra = (b[0] >> 3) & 1 // G
	n := 4 + int(b[1])*4
	if n < 16 {
		return 0, 0, rd.fail(BadLength, "int gre shim", "length", base+1, uint64(b[1]))
	}
	if n > len(b) {
		return 0, 0, rd.fail(Truncated, "int gre shim", "length", base+1, uint64(b[1]))
	}
	return n, be.Uint16(b[2:]), rd.parseMD(r, b[4:n], base+4, telemetry.INT2x, typ == 3)
}
