package telemetry

import "strconv"

// AppendJSON appends r to dst as one JSON object, without a trailing newline, and returns the
// extended buffer. The key names are a contract with the programs that read `intake decode
// --json` and the API (README, "decode --json keys"); only the fields a report actually has
// are written. It is written by hand, without reflection, so that it allocates nothing
// beyond growing dst.
func AppendJSON(dst []byte, r *Report) []byte {
	dst = append(dst, `{"format":"`...)
	dst = append(dst, r.Format.String()...)
	dst = append(dst, '"')
	tr := r.Format == FormatTR05 || r.Format == FormatTR10 || r.Format == FormatTR20
	if r.Has&HasNodeID != 0 {
		dst = appendUint(dst, "node_id", uint64(r.NodeID))
	}
	if tr {
		dst = appendUint(dst, "hw_id", uint64(r.HWID))
	}
	if r.Has&HasSeq != 0 {
		dst = appendUint(dst, "seq", uint64(r.Seq))
	}
	if tr || r.Flags != 0 {
		dst = append(dst, `,"flags":[`...)
		n := 0
		for i, name := range flagNames {
			if r.Flags&(1<<i) != 0 {
				if n > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, '"')
				dst = append(dst, name...)
				dst = append(dst, '"')
				n++
			}
		}
		dst = append(dst, ']')
	}
	if r.Has&HasIngressTS != 0 {
		dst = appendUint(dst, "ingress_ts", r.IngressTS)
	}
	if r.Has&HasDropReason != 0 {
		dst = appendUint(dst, "drop_reason", uint64(r.DropReason))
	}
	if r.Has&HasFlow != 0 {
		f := &r.Flow
		dst = append(dst, `,"flow":{"src":"`...)
		dst = f.SrcAddr().AppendTo(dst)
		dst = append(dst, `","dst":"`...)
		dst = f.DstAddr().AppendTo(dst)
		dst = append(dst, '"')
		dst = appendUint(dst, "sport", uint64(f.SrcPort))
		dst = appendUint(dst, "dport", uint64(f.DstPort))
		dst = appendUint(dst, "proto", uint64(f.Proto))
		dst = append(dst, '}')
	}
	if r.INT.Version != INTNone {
		dst = append(dst, `,"int_version":"`...)
		dst = append(dst, r.INT.Version.String()...)
		dst = append(dst, '"')
	}
	if r.NHops > 0 {
		dst = append(dst, `,"hops":[`...)
		for i := range r.HopList() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendHop(dst, &r.Hops[i])
		}
		dst = append(dst, ']')
	}
	if r.Format == FormatDTA {
		dst = appendDTA(dst, &r.DTA)
	}
	if r.NLabels > 0 {
		dst = append(dst, `,"label_items":[`...)
		for i := range r.LabelList() {
			if i > 0 {
				dst = append(dst, ',')
			}
			l := &r.Labels[i]
			dst = append(dst, `{"switch_id":`...)
			dst = strconv.AppendUint(dst, uint64(l.SwitchID), 10)
			dst = appendUint(dst, "ingress_port", uint64(l.IngressPort))
			dst = appendUint(dst, "egress_port", uint64(l.EgressPort))
			dst = appendUint(dst, "ingress_ts", l.IngressTS)
			dst = appendUint(dst, "egress_ts", l.EgressTS)
			dst = appendUint(dst, "enq_ts", uint64(l.EnqTS))
			dst = appendUint(dst, "enq_qdepth", uint64(l.EnqQDepth))
			dst = appendUint(dst, "deq_timedelta", uint64(l.DeqTimedelta))
			dst = appendUint(dst, "deq_qdepth", uint64(l.DeqQDepth))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.LabelSpecific {
		dst = append(dst, `,"label_specific":true`...)
	}
	return append(dst, '}')
}

// flagNames are the JSON names of the Flags bits, in bit order (as Flags.Names).
var flagNames = [...]string{"drop", "queue", "flow", "intermediate"}

// appendHop writes one hop's present fields, named by FieldNames, in bit order.
func appendHop(dst []byte, h *Hop) []byte {
	dst = append(dst, '{')
	first := true
	for i, name := range FieldNames {
		v, ok := h.Value(Field(1) << i)
		if !ok {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		dst = strconv.AppendUint(dst, v, 10)
	}
	return append(dst, '}')
}

// appendDTA writes the fields each primitive has (DTA §3): Key-Write: redundancy, key,
// data; Key-Increment: redundancy, key, counter; Postcarding: key, hop, data; Append: list,
// data.
func appendDTA(dst []byte, d *DTA) []byte {
	dst = append(dst, `,"dta":{"op":"`...)
	dst = append(dst, d.Op.String()...)
	dst = append(dst, '"')
	switch d.Op {
	case DTAKeyWrite:
		dst = appendUint(dst, "redundancy", uint64(d.Redundancy))
		dst = appendHex(dst, "key", d.KeyBytes())
		dst = appendHex(dst, "data", d.DataBytes())
	case DTAKeyIncrement:
		dst = appendUint(dst, "redundancy", uint64(d.Redundancy))
		dst = appendHex(dst, "key", d.KeyBytes())
		dst = appendUint(dst, "counter", d.Counter)
	case DTAPostcard:
		dst = appendHex(dst, "key", d.KeyBytes())
		dst = appendUint(dst, "hop", uint64(d.Hop))
		dst = appendHex(dst, "data", d.DataBytes())
	case DTAAppend:
		dst = appendUint(dst, "list", uint64(d.ListID))
		dst = appendHex(dst, "data", d.DataBytes())
	}
	return append(dst, '}')
}

// appendUint writes ,"key":v. Every object starts with a first key written by hand, so the
// comma is always right.
func appendUint(dst []byte, key string, v uint64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendUint(dst, v, 10)
}

// appendHex writes ,"key":"0x..." with b in lower-case hex.
func appendHex(dst []byte, key string, b []byte) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, `":"0x`...)
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&0xf])
	}
	return append(dst, '"')
}
