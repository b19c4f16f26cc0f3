package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// AppendJSON appends the item as one line of JSON: {"frame":N, then the report's keys
// (telemetry.AppendJSON) and, when its inner packet did not decode, "inner_error"; or for an
// error "error" and, for a *wire.Error, its keys (appendErrorKeys).
func (it *Item) AppendJSON(b []byte) []byte {
	if it.Err != nil {
		b = fmt.Appendf(b, `{"frame":%d,"error":%s`, it.Frame, jsonString(it.Err.Error()))
		var we *wire.Error
		if errors.As(it.Err, &we) {
			b = appendErrorKeys(b, we)
		}
		return append(b, "}\n"...)
	}
	b = append(b, `{"frame":`...)
	b = strconv.AppendInt(b, int64(it.Frame), 10)
	mark := len(b)
	b = telemetry.AppendJSON(b, it.Report)
	b[mark] = ',' // the report's opening brace continues the object
	if it.Inner != nil {
		b = b[:len(b)-1] // reopen the object
		b = fmt.Appendf(b, `,"inner_error":{"error":%s`, jsonString(it.Inner.Error()))
		b = appendErrorKeys(b, it.Inner)
		b = append(b, "}}"...)
	}
	return append(b, '\n')
}

// appendErrorKeys writes a decode error's "reason", "header", "field", "offset" and, for a
// known producer deviation, "setting" (the decoder setting that decodes it).
func appendErrorKeys(b []byte, we *wire.Error) []byte {
	b = fmt.Appendf(b, `,"reason":%s,"header":%s,"field":%s,"offset":%d`,
		jsonString(we.Reason.String()), jsonString(we.Header), jsonString(we.Field), we.Offset)
	if we.Setting != "" {
		b = fmt.Appendf(b, `,"setting":%s`, jsonString(we.Setting))
	}
	return b
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// AppendText appends the item as a readable block: a line naming the frame, the format and
// the transport, then one line per field the report carries, then a blank line.
func (it *Item) AppendText(b []byte) []byte {
	if it.Err != nil {
		return fmt.Appendf(b, "frame %d: error: %v\n", it.Frame, it.Err)
	}
	r := it.Report
	b = fmt.Appendf(b, "frame %d", it.Frame)
	if it.Index > 1 {
		b = fmt.Appendf(b, " report %d", it.Index)
	}
	b = fmt.Appendf(b, ": %s", r.Format)
	if dg := &it.Datagram; it.UDP {
		b = fmt.Appendf(b, " (udp %s > %s, %s)", netip.AddrPortFrom(dg.Src, dg.SrcPort), netip.AddrPortFrom(dg.Dst, dg.DstPort), it.Input)
	}
	b = append(b, '\n')
	if r.Has&telemetry.HasNodeID != 0 {
		b = fmt.Appendf(b, "  node_id     %d\n", r.NodeID)
	}
	tr := r.Format == telemetry.FormatTR05 || r.Format == telemetry.FormatTR10 || r.Format == telemetry.FormatTR20
	if tr {
		b = fmt.Appendf(b, "  hw_id       %d\n", r.HWID)
	}
	if r.Has&telemetry.HasSeq != 0 {
		b = fmt.Appendf(b, "  seq         %d\n", r.Seq)
	}
	if tr || r.Flags != 0 {
		var names [4]string
		fl := strings.Join(r.Flags.Names(names[:0]), " ")
		if fl == "" {
			fl = "-"
		}
		b = fmt.Appendf(b, "  flags       %s\n", fl)
	}
	if r.Has&telemetry.HasIngressTS != 0 {
		b = fmt.Appendf(b, "  ingress_ts  %d\n", r.IngressTS)
	}
	if r.Has&telemetry.HasDropReason != 0 {
		b = fmt.Appendf(b, "  drop_reason %d\n", r.DropReason)
	}
	if r.Has&telemetry.HasFlow != 0 {
		// The flow as the query verbs and the console write it: the protocol by name.
		b = fmt.Appendf(b, "  flow        %s\n", r.Flow.String())
	}
	if r.INT.Version != telemetry.INTNone {
		b = fmt.Appendf(b, "  int_version %s\n", r.INT.Version)
		if r.INT.HasSourceSeq {
			b = fmt.Appendf(b, "  source_seq  %d\n", r.INT.SourceSeq)
		}
	}
	if it.Inner != nil {
		b = fmt.Appendf(b, "  inner_error %v\n", it.Inner)
	}
	// Hops source first and numbered from the source (docs/hops.md): the normal form's
	// newest-first list read backwards, the report's own hop last.
	n := int(r.NHops)
	for k := range n {
		i := n - 1 - k
		h := &r.Hops[i]
		b = fmt.Appendf(b, "  hop %-7d", k+1)
		for j, name := range telemetry.FieldNames {
			if v, ok := h.Value(telemetry.Field(1) << j); ok {
				b = fmt.Appendf(b, " %s=%d", name, v)
			}
		}
		if i == 0 && r.ReporterHop {
			b = append(b, " (reporter)"...)
		}
		b = append(b, '\n')
	}
	if r.Format == telemetry.FormatDTA {
		d := &r.DTA
		b = fmt.Appendf(b, "  dta         %s", d.Op)
		if d.HeaderLen == 3 {
			b = fmt.Appendf(b, " seq=%d", d.Seq)
		}
		switch d.Op {
		case telemetry.DTAKeyWrite:
			b = fmt.Appendf(b, " redundancy=%d key=%#x data=%#x", d.Redundancy, d.KeyBytes(), d.DataBytes())
		case telemetry.DTAKeyIncrement:
			b = fmt.Appendf(b, " redundancy=%d key=%#x counter=%d", d.Redundancy, d.KeyBytes(), d.Counter)
		case telemetry.DTAPostcard:
			b = fmt.Appendf(b, " key=%#x hop=%d data=%#x", d.KeyBytes(), d.Hop, d.DataBytes())
		case telemetry.DTAAppend:
			b = fmt.Appendf(b, " list=%d data=%#x", d.ListID, d.DataBytes())
		}
		b = append(b, '\n')
	}
	if r.LabelSpecific {
		b = append(b, "  label       specific flow\n"...)
	}
	labels := r.LabelList()
	for k := range labels {
		l := &labels[len(labels)-1-k] // source first, as the hops
		b = fmt.Appendf(b, "  item %-6d switch_id=%d ingress_port=%d egress_port=%d ingress_ts=%d egress_ts=%d enq_ts=%d enq_qdepth=%d deq_timedelta=%d deq_qdepth=%d\n",
			k+1, l.SwitchID, l.IngressPort, l.EgressPort, l.IngressTS, l.EgressTS, l.EnqTS, l.EnqQDepth, l.DeqTimedelta, l.DeqQDepth)
	}
	return append(b, '\n')
}
