package telemetry

import "strconv"

// AppendJSON appends r to dst as one JSON object, without a trailing newline, and returns the
// extended buffer. The key names are a contract with the programs that read `intake decode
// --json` and the API (README, "decode --json keys"); only the fields a report actually has
// are written. Hops and INT-label items are written source first (docs/hops.md), the
// reverse of the Report's newest-first normal form. It is written by hand, without
// reflection, so that it allocates nothing beyond growing dst.
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
		dst = append(dst, `,"flow":`...)
		dst = appendFlow(dst, &r.Flow)
	}
	if tr {
		dst = appendTR(dst, r)
	}
	if r.Inner.Link != LinkNone {
		dst = appendInner(dst, &r.Inner)
	}
	if r.INT.Version != INTNone {
		dst = append(dst, `,"int_version":"`...)
		dst = append(dst, r.INT.Version.String()...)
		dst = append(dst, '"')
		dst = appendINT(dst, &r.INT)
	}
	if r.NHops > 0 {
		// Source first, as every list intake shows (docs/hops.md), not the normal form's
		// newest first: hop 1 is the first switch that added metadata, the report's own hop
		// (when it has one) the last.
		dst = append(dst, `,"hops":[`...)
		n := int(r.NHops)
		for k := range n {
			if k > 0 {
				dst = append(dst, ',')
			}
			i := n - 1 - k
			dst = appendHop(dst, k+1, &r.Hops[i], i == 0 && r.ReporterHop)
		}
		dst = append(dst, ']')
	}
	if r.Format == FormatDTA {
		dst = appendDTA(dst, &r.DTA)
	}
	if r.NLabels > 0 {
		// Source first too: the item of the first switch that labelled the packet first.
		dst = append(dst, `,"label_items":[`...)
		n := int(r.NLabels)
		for k := range n {
			if k > 0 {
				dst = append(dst, ',')
			}
			l := &r.Labels[n-1-k]
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

var linkNames = [...]string{"none", "ethernet", "ipv4", "ipv6"}

func linkName(l LinkType) string {
	if int(l) < len(linkNames) {
		return linkNames[l]
	}
	return "unknown"
}

// appendTR writes the Telemetry Report header fields that are not normalized elsewhere:
// "tr":{"ver", "nproto" (v0.5 NProto, v1.0 NProt) or "in_type" and "rep_type" (v2.0),
// "md_bits" (v1.0, v2.0), the v2.0 domain-specific fields, "sink_node_id" (host-int)}.
func appendTR(dst []byte, r *Report) []byte {
	t := &r.TR
	dst = append(dst, `,"tr":{"ver":`...)
	dst = strconv.AppendUint(dst, uint64(t.Ver), 10)
	switch r.Format {
	case FormatTR20:
		dst = appendUint(dst, "rep_type", uint64(t.RepType))
		dst = appendUint(dst, "in_type", uint64(t.NProto))
		dst = appendUint(dst, "md_bits", uint64(t.MDBits))
		dst = appendUint(dst, "ds_id", uint64(t.DSID))
		dst = appendUint(dst, "ds_md_bits", uint64(t.DSMdBits))
		dst = appendUint(dst, "ds_md_status", uint64(t.DSMdStatus))
		dst = appendUint(dst, "ds_md_len", uint64(t.DSMdLen))
	case FormatTR10:
		dst = appendUint(dst, "nproto", uint64(t.NProto))
		dst = appendUint(dst, "md_bits", uint64(t.MDBits))
	default:
		dst = appendUint(dst, "nproto", uint64(t.NProto))
		if t.NProto == 4 {
			dst = appendUint(dst, "sink_node_id", uint64(t.SinkNodeID))
		}
	}
	return append(dst, '}')
}

// appendInner writes the shape of the inner packet: "inner":{"link", "vlans", "dscp",
// "ip_opt_len", "tcp_opts", "encap" and "encap_arg" (when INT was found), "tunnel" and
// "nested" (inside a tunnel), "trailer"}.
func appendInner(dst []byte, in *Inner) []byte {
	dst = append(dst, `,"inner":{"link":"`...)
	dst = append(dst, linkName(in.Link)...)
	dst = append(dst, '"')
	if in.NVLANs > 0 {
		dst = append(dst, `,"vlans":[`...)
		for i := range min(int(in.NVLANs), len(in.VLANs)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendUint(dst, uint64(in.VLANs[i]), 10)
		}
		dst = append(dst, ']')
	}
	dst = appendUint(dst, "dscp", uint64(in.DSCP))
	dst = appendUint(dst, "ip_opt_len", uint64(in.IPOptLen))
	dst = appendUint(dst, "tcp_opts", uint64(in.TCPOpts))
	if in.Encap != EncapNone {
		dst = append(dst, `,"encap":"`...)
		dst = append(dst, in.Encap.String()...)
		dst = append(dst, '"')
		dst = appendUint(dst, "encap_arg", uint64(in.EncapArg))
	}
	if in.Nested != LinkNone {
		dst = append(dst, `,"tunnel":`...)
		dst = appendFlow(dst, &in.Tunnel)
		dst = append(dst, `,"nested":"`...)
		dst = append(dst, linkName(in.Nested)...)
		dst = append(dst, '"')
	}
	dst = appendUint(dst, "trailer", uint64(in.Trailer))
	return append(dst, '}')
}

// appendINT writes the INT header as sent: "int":{"shim_type", "flags", "bitmap", the
// version's hop fields ("max_hops" v0.5; "hop_ml", "rem_hops" v1.0+), the v2.x
// domain-specific fields, "mx", "shim_extra", "orig_port", "orig_proto", "erratum",
// "source_seq"}.
func appendINT(dst []byte, in *INTHeader) []byte {
	dst = append(dst, `,"int":{"shim_type":`...)
	dst = strconv.AppendUint(dst, uint64(in.ShimType), 10)
	dst = appendUint(dst, "flags", uint64(in.Flags))
	dst = appendUint(dst, "bitmap", uint64(in.Bitmap))
	switch in.Version {
	case INT05:
		dst = appendUint(dst, "max_hops", uint64(in.MaxHops))
	case INT10:
		dst = appendUint(dst, "hop_ml", uint64(in.HopML))
		dst = appendUint(dst, "rem_hops", uint64(in.RemHops))
	case INT2x:
		if in.MX {
			dst = append(dst, `,"mx":true`...)
		} else {
			dst = appendUint(dst, "hop_ml", uint64(in.HopML))
			dst = appendUint(dst, "rem_hops", uint64(in.RemHops))
		}
		dst = appendUint(dst, "ds_id", uint64(in.DSID))
		dst = appendUint(dst, "ds_instr", uint64(in.DSInstr))
		dst = appendUint(dst, "ds_flags", uint64(in.DSFlags))
		dst = appendUint(dst, "source_ds", uint64(in.SourceDS))
	}
	dst = appendUint(dst, "shim_extra", uint64(in.ShimExtra))
	dst = appendUint(dst, "orig_port", uint64(in.OrigPort))
	dst = appendUint(dst, "orig_proto", uint64(in.OrigProto))
	if in.Erratum {
		dst = append(dst, `,"erratum":true`...)
	}
	if in.HasSourceSeq {
		dst = appendUint(dst, "source_seq", uint64(in.SourceSeq))
	}
	return append(dst, '}')
}

// flagNames are the JSON names of the Flags bits, in bit order (as Flags.Names).
var flagNames = [...]string{"drop", "queue", "flow", "intermediate"}

// appendFlow writes a 5-tuple object: src, dst, sport, dport, proto.
func appendFlow(dst []byte, f *FlowKey) []byte {
	dst = append(dst, `{"src":"`...)
	dst = f.SrcAddr().AppendTo(dst)
	dst = append(dst, `","dst":"`...)
	dst = f.DstAddr().AppendTo(dst)
	dst = append(dst, '"')
	dst = appendUint(dst, "sport", uint64(f.SrcPort))
	dst = appendUint(dst, "dport", uint64(f.DstPort))
	dst = appendUint(dst, "proto", uint64(f.Proto))
	return append(dst, '}')
}

// appendHop writes one hop: "hop", its number from the source (1-based), then its present
// fields, named by FieldNames, in bit order, and "reporter": true for the report's own hop.
func appendHop(dst []byte, num int, h *Hop, reporter bool) []byte {
	dst = append(dst, `{"hop":`...)
	dst = strconv.AppendUint(dst, uint64(num), 10)
	for i, name := range FieldNames {
		if v, ok := h.Value(Field(1) << i); ok {
			dst = appendUint(dst, name, v)
		}
	}
	if reporter {
		dst = append(dst, `,"reporter":true`...)
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
	// The base header: its layout, the 3-byte layout's sequence number and retransmit flag.
	if d.HeaderLen != 0 {
		dst = appendUint(dst, "header_len", uint64(d.HeaderLen))
	}
	if d.HeaderLen == 3 {
		dst = appendUint(dst, "seq", uint64(d.Seq))
		dst = appendBool(dst, "retransmit", d.Retransmit)
	}
	dst = appendBool(dst, "immediate", d.Immediate)
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

// appendBool writes ,"key":true or false.
func appendBool(dst []byte, key string, v bool) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return strconv.AppendBool(dst, v)
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
