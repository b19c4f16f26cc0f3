package wire

import "github.com/intake-int/intake/telemetry"

// This file reads and writes INT-label exports: what a last-hop switch sends the collector
// after it strips the INT-label header from a labeled packet (INT-label §2 "Forwarding
// behaviors", §3.4 Algorithm 4). The export is the INT OPTION followed by the item stack,
// newest first, in the public prototype's layout (docs/wire-dta-label.md).
//
// The paper's option keeps the original IP protocol (NH) in its first byte and marks
// specific-flow telemetry by INT_num > MAX_hop (§3.3). The prototype, which intake follows,
// uses the first byte's top bit as the specific-flow type and keeps INT_num an exact item
// count, so an export can be decoded without knowing the fabric's MAX_hop.

const (
	labelOptionLen = 2  // type(1) + reserved(7), INT_num(8)
	labelItemLen   = 32 // INT-label §2: "each INT data item occupies 32B"
	labelSpecific  = 0x80

	labelOptionName = "int-label"
	labelItemName   = "int-label item"

	max48 = 1<<48 - 1
)

// labelFields is the 32-byte item in wire order, for naming the field a truncated export
// ends in. Reserved bytes are named too: an export can end inside one.
var labelFields = [...]dtaField{
	{"switch_id", 0, 1},
	{"ingress_port", 1, 1},
	{"egress_port", 2, 1},
	{"reserved", 3, 1},
	{"ingress_ts", 4, 6},
	{"egress_ts", 10, 6},
	{"enq_ts", 16, 4},
	{"reserved", 20, 1},
	{"enq_qdepth", 21, 3},
	{"deq_timedelta", 24, 4},
	{"reserved", 28, 1},
	{"deq_qdepth", 29, 3},
}

// decodeLabel decodes an INT-label export into one Report holding all its items: the
// controller installs each item separately (§3.4), but they arrive together and share the
// option's type bit, and a Report holds MaxLabelItems of them without allocating.
// Bytes after the last item are ignored (Ethernet padding).
func (rd *Reader) decodeLabel(r *telemetry.Report) error {
	b := rd.b
	switch len(b) {
	case 0:
		return rd.fail(Truncated, labelOptionName, "type", 0, 0)
	case 1:
		return rd.fail(Truncated, labelOptionName, "int_num", 1, 0)
	}
	n := int(b[1])
	if n > telemetry.MaxLabelItems {
		return rd.fail(TooMany, labelOptionName, "int_num", 1, uint64(n))
	}
	if end := labelOptionLen + n*labelItemLen; len(b) < end {
		item := (len(b) - labelOptionLen) / labelItemLen
		at := labelOptionLen + item*labelItemLen
		for _, f := range labelFields {
			if at+f.off+f.size > len(b) {
				return rd.fail(Truncated, labelItemName, f.name, at+f.off, 0)
			}
		}
		return rd.fail(Truncated, labelItemName, "", at, 0) // unreachable
	}
	r.Format = telemetry.FormatLabel
	r.LabelSpecific = b[0]&labelSpecific != 0
	r.NLabels = uint8(n)
	for i := range n {
		p := b[labelOptionLen+i*labelItemLen:][:labelItemLen]
		r.Labels[i] = telemetry.LabelItem{
			SwitchID:     p[0],
			IngressPort:  p[1],
			EgressPort:   p[2],
			IngressTS:    uint64(be.Uint16(p[4:]))<<32 | uint64(be.Uint32(p[6:])),
			EgressTS:     uint64(be.Uint16(p[10:]))<<32 | uint64(be.Uint32(p[12:])),
			EnqTS:        be.Uint32(p[16:]),
			EnqQDepth:    be.Uint32(p[20:]) & ones24,
			DeqTimedelta: be.Uint32(p[24:]),
			DeqQDepth:    be.Uint32(p[28:]) & ones24,
		}
	}
	return nil
}

// appendLabel encodes an INT-label export: the option, then r's items newest first, with
// reserved bits zero. Values wider than their wire fields (48-bit timestamps, 24-bit queue
// depths) are refused rather than cut, so that decode(encode(r)) equals r.
func (e *Encoder) appendLabel(dst []byte, r *telemetry.Report) ([]byte, error) {
	if int(r.NLabels) > telemetry.MaxLabelItems {
		return dst, errEncode("int-label: %d items (at most %d)", r.NLabels, telemetry.MaxLabelItems)
	}
	for i := range r.LabelList() {
		it := &r.Labels[i]
		switch {
		case it.IngressTS > max48 || it.EgressTS > max48:
			return dst, errEncode("int-label: item %d: timestamps %d/%d exceed 48 bits", i, it.IngressTS, it.EgressTS)
		case it.EnqQDepth > ones24 || it.DeqQDepth > ones24:
			return dst, errEncode("int-label: item %d: queue depths %d/%d exceed 24 bits", i, it.EnqQDepth, it.DeqQDepth)
		}
	}
	var typ uint8
	if r.LabelSpecific {
		typ = labelSpecific
	}
	dst = append(dst, typ, r.NLabels)
	for i := range r.LabelList() {
		it := &r.Labels[i]
		dst = append(dst, it.SwitchID, it.IngressPort, it.EgressPort, 0)
		dst = put16(dst, uint16(it.IngressTS>>32))
		dst = put32(dst, uint32(it.IngressTS))
		dst = put16(dst, uint16(it.EgressTS>>32))
		dst = put32(dst, uint32(it.EgressTS))
		dst = put32(dst, it.EnqTS)
		dst = put32(dst, it.EnqQDepth)
		dst = put32(dst, it.DeqTimedelta)
		dst = put32(dst, it.DeqQDepth)
	}
	return dst, nil
}
