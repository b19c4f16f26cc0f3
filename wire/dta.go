package wire

import (
	"fmt"

	"github.com/intake-int/intake/telemetry"
)

// This file reads and writes the DTA reporting protocol (DTA §4, Figure 4: a DTA header
// naming the primitive, then the primitive's sub-header; §5.1: reporters build both in the
// data plane). The paper leaves the bytes open; intake follows the public prototype
// (docs/wire-dta-label.md): two base-header layouts, chosen by dta.header_len,
// and sub-headers whose key and value widths are dta.key_len and dta.data_len, since the
// paper (§4) makes them per-deployment choices.
//
// Batching. DTA's translator batches reports before writing them (§3, §4 Append), but the
// prototype's reporters send one primitive per datagram. intake adds one flag bit (0x01 of
// the flags byte, reserved in both prototype layouts) so that a reporter, the generator or
// the emulated fabric can put up to 255 sub-headers of one primitive behind one base header,
// preceded by a count byte. A prototype reporter never sets the bit, so its datagrams decode
// unchanged. docs/wire-dta-label.md has the byte tables.

// DTA base-header flag bits.
const (
	dtaImmediate  = 0x80 // both layouts
	dtaRetransmit = 0x40 // 3-byte layout only; reserved (ignored, written 0) in the 2-byte one
	dtaBatch      = 0x01 // intake's batch extension: a count byte and N sub-headers follow

	dtaMaxBatch = 255 // the count is one byte
	dtaBaseName = "dta"
)

// dtaField is one sub-header field: its name (the Error.Field a truncation inside it
// reports), its offset within the sub-header and its size.
type dtaField struct {
	name      string
	off, size int
}

// dtaLayout returns the sub-header of op for key width k and data width d: its fields in
// wire order (unused slots have size 0), its size, and the Error.Header it reports.
// Computed per entry rather than precomputed in the Decoder so that the Decoder's layout
// stays with wire.go; it is a handful of additions.
func dtaLayout(op telemetry.DTAOp, k, d int) (fs [3]dtaField, size int, header string) {
	switch op {
	case telemetry.DTAKeyWrite:
		fs = [3]dtaField{{"redundancy", 0, 1}, {"key", 1, k}, {"data", 1 + k, d}}
		return fs, 1 + k + d, "dta key-write"
	case telemetry.DTAKeyIncrement:
		fs = [3]dtaField{{"redundancy", 0, 1}, {"key", 1, k}, {"counter", 1 + k, 8}}
		return fs, 1 + k + 8, "dta key-increment"
	case telemetry.DTAAppend:
		fs = [3]dtaField{{"list_id", 0, 4}, {"data", 4, d}}
		return fs, 4 + d, "dta append"
	case telemetry.DTAPostcard:
		fs = [3]dtaField{{"key", 0, k}, {"hop", k, 1}, {"data", k + 1, d}}
		return fs, k + 1 + d, "dta postcard"
	}
	return fs, 0, dtaBaseName
}

// dtaSize is the sub-header size of dtaLayout, without building its fields.
func dtaSize(op telemetry.DTAOp, k, d int) int {
	switch op {
	case telemetry.DTAKeyWrite:
		return 1 + k + d
	case telemetry.DTAKeyIncrement:
		return 1 + k + 8
	case telemetry.DTAAppend:
		return 4 + d
	case telemetry.DTAPostcard:
		return k + 1 + d
	}
	return 0
}

func validDTAOp(op telemetry.DTAOp) bool {
	return op >= telemetry.DTAKeyWrite && op <= telemetry.DTAPostcard
}

// startDTA parses the DTA base header (and intake's batch count) and decodes the first
// primitive. The base header is kept in the Reader because every sub-header of a batch
// shares it.
func (rd *Reader) startDTA(r *telemetry.Report) error {
	rd.state = stDone
	b, hl := rd.b, rd.d.cfg.DTA.HeaderLen
	if len(b) < 1 {
		return rd.fail(Truncated, dtaBaseName, "opcode", 0, 0)
	}
	op := telemetry.DTAOp(b[0])
	if !validDTAOp(op) {
		return rd.fail(BadValue, dtaBaseName, "opcode", 0, uint64(op))
	}
	if hl == 3 && len(b) < 2 {
		return rd.fail(Truncated, dtaBaseName, "seq", 1, 0)
	}
	if len(b) < hl {
		return rd.fail(Truncated, dtaBaseName, "flags", hl-1, 0)
	}
	flags := b[hl-1]
	rd.dtaOp, rd.dtaHdr = op, uint8(hl)
	rd.dtaSeq, rd.dtaRetx = 0, false
	if hl == 3 {
		rd.dtaSeq, rd.dtaRetx = b[1], flags&dtaRetransmit != 0
	}
	rd.dtaImm = flags&dtaImmediate != 0
	rd.off, rd.dtaLeft = hl, 1
	// One primitive: a datagram exactly one byte longer (2-byte layout) or shorter (3-byte
	// layout) than it needs is the other base-header layout. The prototype's traffic
	// generators send the 3-byte one; padding of one byte is implausible, so this is an
	// error naming the setting rather than a primitive read one byte off. Read with the
	// 2-byte layout, an odd sequence number sets intake's batch bit and the real flags byte
	// becomes a count; that byte has its six reserved bits zero (so it is never the count 1
	// that would fit, and a byte with them set is not the 3-byte layout).
	size := dtaSize(op, rd.d.cfg.DTA.KeyLen, rd.d.cfg.DTA.DataLen)
	if hl == 2 && len(b) == 3+size && b[2]&0x3f == 0 {
		return rd.failSet(BadLength, dtaBaseName, "length", 2+size, uint64(len(b)), "dta.header_len: 3")
	}
	if flags&dtaBatch != 0 {
		if len(b) < hl+1 {
			return rd.fail(Truncated, dtaBaseName, "count", hl, 0)
		}
		if b[hl] == 0 {
			return rd.fail(BadLength, dtaBaseName, "count", hl, 0)
		}
		rd.off, rd.dtaLeft = hl+1, int(b[hl])
		return rd.nextDTA(r)
	}
	err := rd.nextDTA(r)
	if err != nil && hl == 3 && len(b) == 2+size && rd.err.Reason == Truncated {
		rd.err.Setting = "dta.header_len: 2"
	}
	return err
}

// nextDTA decodes the next primitive of a DTA datagram. A sub-header whose bytes are all
// present is consumed even when a value in it is bad, so that one bad entry costs only
// itself; a truncated one ends the datagram, since nothing after it can be located.
func (rd *Reader) nextDTA(r *telemetry.Report) error {
	rd.dtaLeft--
	rd.state = stDone
	if rd.dtaLeft > 0 {
		rd.state = stDTA
	}
	cfg := &rd.d.cfg.DTA
	k, dl := cfg.KeyLen, cfg.DataLen
	fs, size, header := dtaLayout(rd.dtaOp, k, dl)
	off, b := rd.off, rd.b
	if len(b)-off < size {
		rd.state = stDone
		for _, f := range fs {
			if f.size > 0 && off+f.off+f.size > len(b) {
				return rd.fail(Truncated, header, f.name, off+f.off, 0)
			}
		}
		return rd.fail(Truncated, header, "", off, 0) // unreachable: size is the last field's end
	}
	p := b[off : off+size : off+size]
	rd.off += size

	// Validate before writing to r: DTA.Reset clears Key and Data only up to KeyLen and
	// DataLen, so bytes copied without those set would leave the tails dirty.
	switch rd.dtaOp {
	case telemetry.DTAKeyWrite, telemetry.DTAKeyIncrement:
		// The redundancy level is the number of copies to store (§4 Key-Write); none is
		// meaningless, and the store's slot addressing (spec §2) needs at least one.
		if p[0] == 0 {
			return rd.fail(BadValue, header, "redundancy", off, 0)
		}
	case telemetry.DTAPostcard:
		if p[k] == 0 { // hops are 1-based
			return rd.fail(BadValue, header, "hop", off+k, 0)
		}
	}

	r.Format = telemetry.FormatDTA
	d := &r.DTA
	d.Op, d.HeaderLen, d.Seq, d.Immediate, d.Retransmit = rd.dtaOp, rd.dtaHdr, rd.dtaSeq, rd.dtaImm, rd.dtaRetx
	switch rd.dtaOp {
	case telemetry.DTAKeyWrite:
		d.Redundancy, d.KeyLen, d.DataLen = p[0], uint8(k), uint8(dl)
		copy(d.Key[:k], p[1:])
		copy(d.Data[:dl], p[1+k:])
	case telemetry.DTAKeyIncrement:
		d.Redundancy, d.KeyLen = p[0], uint8(k)
		copy(d.Key[:k], p[1:])
		d.Counter = be.Uint64(p[1+k:])
	case telemetry.DTAAppend:
		d.ListID, d.DataLen = be.Uint32(p), uint8(dl)
		copy(d.Data[:dl], p[4:])
	case telemetry.DTAPostcard:
		d.KeyLen, d.Hop, d.DataLen = uint8(k), p[k], uint8(dl)
		copy(d.Key[:k], p)
		copy(d.Data[:dl], p[k+1:])
	}
	return nil
}

// appendDTA encodes rs as one DTA datagram: the base header from rs[0].DTA (HeaderLen 0
// means the encoder's dta.header_len), then, when len(rs) > 1, the batch flag and count,
// then one sub-header per report. The base-header fields of rs[1:] are not looked at: a
// batch shares one header, so they decode as rs[0]'s.
//
// The encoder refuses what the decoder would not give back: widths other than the
// configured ones, a field the primitive does not carry, redundancy or hop 0, a sequence
// number or retransmit flag in the 2-byte layout. Hence decode(encode(r)) equals r
// whenever encoding succeeds.
func (e *Encoder) appendDTA(dst []byte, rs []telemetry.Report) ([]byte, error) {
	if len(rs) == 0 {
		return dst, errEncode("dta: empty batch")
	}
	if len(rs) > dtaMaxBatch {
		return dst, errEncode("dta: batch of %d reports (at most %d)", len(rs), dtaMaxBatch)
	}
	h := &rs[0].DTA
	hl := int(h.HeaderLen)
	if hl == 0 {
		hl = e.cfg.DTA.HeaderLen
	}
	switch {
	case hl != 2 && hl != 3:
		return dst, errEncode("dta: header length %d (2 or 3)", hl)
	case !validDTAOp(h.Op):
		return dst, errEncode("dta: opcode %d", h.Op)
	case hl == 2 && (h.Seq != 0 || h.Retransmit):
		return dst, errEncode("dta: the 2-byte header has no sequence number or retransmit flag")
	}
	start := len(dst)
	dst = append(dst, byte(h.Op))
	if hl == 3 {
		dst = append(dst, h.Seq)
	}
	var flags uint8
	if h.Immediate {
		flags |= dtaImmediate
	}
	if h.Retransmit {
		flags |= dtaRetransmit
	}
	if len(rs) > 1 {
		dst = append(dst, flags|dtaBatch, uint8(len(rs)))
	} else {
		dst = append(dst, flags)
	}
	for i := range rs {
		var err error
		if dst, err = e.appendDTAEntry(dst, &rs[i], h.Op); err != nil {
			return dst[:start], errEncode("dta: report %d: %v", i, err)
		}
	}
	return dst, nil
}

// appendDTAEntry writes one sub-header of primitive op.
func (e *Encoder) appendDTAEntry(dst []byte, r *telemetry.Report, op telemetry.DTAOp) ([]byte, error) {
	d := &r.DTA
	k, dl := e.cfg.DTA.KeyLen, e.cfg.DTA.DataLen
	if r.Format != telemetry.FormatDTA {
		return dst, fmt.Errorf("format %s in a dta batch", r.Format)
	}
	if d.Op != op {
		return dst, fmt.Errorf("%s in a %s batch", d.Op, op)
	}
	// What each primitive carries: key and data widths (0: none), redundancy, counter,
	// list id, hop.
	wk, wd := k, dl
	var red, ctr, list, hop bool
	switch op {
	case telemetry.DTAKeyWrite:
		red = true
	case telemetry.DTAKeyIncrement:
		wd, red, ctr = 0, true, true
	case telemetry.DTAAppend:
		wk, list = 0, true
	case telemetry.DTAPostcard:
		hop = true
	}
	switch {
	case int(d.KeyLen) != wk || int(d.DataLen) != wd:
		return dst, fmt.Errorf("%s: key/data widths %d/%d, the encoder's dta config gives %d/%d", op, d.KeyLen, d.DataLen, wk, wd)
	case red && d.Redundancy == 0:
		return dst, fmt.Errorf("%s: redundancy 0", op)
	case !red && d.Redundancy != 0:
		return dst, fmt.Errorf("%s carries no redundancy level", op)
	case !ctr && d.Counter != 0:
		return dst, fmt.Errorf("%s carries no counter", op)
	case !list && d.ListID != 0:
		return dst, fmt.Errorf("%s carries no list id", op)
	case hop && d.Hop == 0:
		return dst, fmt.Errorf("%s: hop 0 (hops are 1-based)", op)
	case !hop && d.Hop != 0:
		return dst, fmt.Errorf("%s carries no hop number", op)
	}
	switch op {
	case telemetry.DTAKeyWrite:
		dst = append(dst, d.Redundancy)
		dst = append(dst, d.Key[:k]...)
		dst = append(dst, d.Data[:dl]...)
	case telemetry.DTAKeyIncrement:
		dst = append(dst, d.Redundancy)
		dst = append(dst, d.Key[:k]...)
		dst = put64(dst, d.Counter)
	case telemetry.DTAAppend:
		dst = put32(dst, d.ListID)
		dst = append(dst, d.Data[:dl]...)
	case telemetry.DTAPostcard:
		dst = append(dst, d.Key[:k]...)
		dst = append(dst, d.Hop)
		dst = append(dst, d.Data[:dl]...)
	}
	return dst, nil
}
