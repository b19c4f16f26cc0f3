package kafka

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/telemetry"
)

// The reports topic carries the most messages, so its protobuf is written here directly,
// field by field in field-number order as proto.Marshal writes it (TestReportWire holds the
// two byte for byte), without building the generated structs: no allocation per report
// beyond the record's own bytes.

// reportWire is the sender's scratch for one report's nested messages.
type reportWire struct {
	report, sub []byte
}

// appendReportMessage appends it as a kafkapb.Message with a Report body.
func (w *reportWire) appendReportMessage(b []byte, it *kafkaReportItem) []byte {
	r := w.report[:0]
	r = appendVarintField(r, 1, uint64(it.recv))
	if f := it.format.String(); f != "" {
		r = protowire.AppendTag(r, 2, protowire.BytesType)
		r = protowire.AppendString(r, f)
	}
	r = appendVarintField(r, 3, uint64(it.node))
	r = appendVarintField(r, 4, uint64(it.seq))
	r = appendVarintField(r, 5, uint64(it.hwID))
	r = appendVarintField(r, 6, it.ingressTS)
	if it.hasFlow {
		w.sub = appendFlowKeyMessage(w.sub[:0], &it.flow)
		r = protowire.AppendTag(r, 7, protowire.BytesType)
		r = protowire.AppendBytes(r, w.sub)
	}
	for i := range int(it.nhops) {
		h := &it.hops[i]
		s := w.sub[:0]
		s = appendVarintField(s, 1, uint64(h.node))
		s = appendVarintField(s, 2, uint64(h.in))
		s = appendVarintField(s, 3, uint64(h.eg))
		s = appendVarintField(s, 4, uint64(h.lat))
		s = appendVarintField(s, 5, uint64(h.qid))
		s = appendVarintField(s, 6, uint64(h.qocc))
		s = appendVarintField(s, 7, uint64(h.tx))
		s = appendVarintField(s, 8, h.egTS)
		w.sub = s
		r = protowire.AppendTag(r, 8, protowire.BytesType)
		r = protowire.AppendBytes(r, s)
	}
	r = appendVarintField(r, 9, uint64(it.total))
	switch it.format {
	case telemetry.FormatDTA:
		w.sub = appendDTAMessage(w.sub[:0], it.dta())
		r = protowire.AppendTag(r, 10, protowire.BytesType)
		r = protowire.AppendBytes(r, w.sub)
	case telemetry.FormatLabel:
		for i := range int(it.nlabels) {
			w.sub = appendLabelItem(w.sub[:0], &it.labels()[i])
			r = protowire.AppendTag(r, 11, protowire.BytesType)
			r = protowire.AppendBytes(r, w.sub)
		}
		r = appendVarintField(r, 12, uint64(it.labelsTotal))
		r = appendBoolField(r, 13, it.labelSpecific)
	}
	w.report = r
	b = appendVarintField(b, 1, kafkapb.SchemaVersion)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, r)
}

// appendDTAMessage appends d's DTA fields (as DTAMessage makes them).
func appendDTAMessage(b []byte, d *telemetry.DTA) []byte {
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, d.Op.String())
	if d.KeyLen > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, d.KeyBytes())
	}
	if d.DataLen > 0 {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, d.DataBytes())
	}
	b = appendVarintField(b, 4, uint64(d.Redundancy))
	b = appendVarintField(b, 5, d.Counter)
	b = appendVarintField(b, 6, uint64(d.Hop))
	b = appendVarintField(b, 7, uint64(d.ListID))
	b = appendBoolField(b, 8, d.Immediate)
	b = appendVarintField(b, 9, uint64(d.HeaderLen))
	b = appendVarintField(b, 10, uint64(d.Seq))
	return appendBoolField(b, 11, d.Retransmit)
}

// appendLabelItem appends l's LabelItem fields (as LabelItemMessage makes them).
func appendLabelItem(b []byte, l *telemetry.LabelItem) []byte {
	b = appendVarintField(b, 1, uint64(l.SwitchID))
	b = appendVarintField(b, 2, uint64(l.IngressPort))
	b = appendVarintField(b, 3, uint64(l.EgressPort))
	b = appendVarintField(b, 4, l.IngressTS)
	b = appendVarintField(b, 5, l.EgressTS)
	b = appendVarintField(b, 6, uint64(l.EnqTS))
	b = appendVarintField(b, 7, uint64(l.EnqQDepth))
	b = appendVarintField(b, 8, uint64(l.DeqTimedelta))
	return appendVarintField(b, 9, uint64(l.DeqQDepth))
}

// appendFlowKeyMessage appends k's FlowKey fields (as FlowKeyMessage makes them).
func appendFlowKeyMessage(b []byte, k *telemetry.FlowKey) []byte {
	src, dst := k.SrcAddr(), k.DstAddr()
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = appendAddr(b, src.Is4(), src.As16())
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = appendAddr(b, dst.Is4(), dst.As16())
	b = appendVarintField(b, 3, uint64(k.SrcPort))
	b = appendVarintField(b, 4, uint64(k.DstPort))
	return appendVarintField(b, 5, uint64(k.Proto))
}

func appendAddr(b []byte, v4 bool, a [16]byte) []byte {
	if v4 {
		return protowire.AppendBytes(b, a[12:])
	}
	return protowire.AppendBytes(b, a[:])
}

// appendVarintField appends a proto3 scalar field (left out when 0).
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendBoolField appends a proto3 bool field (left out when false).
func appendBoolField(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarintField(b, num, 1)
}

// slab hands out the sender's record keys and values from shared blocks: one allocation per
// block rather than two per message (a block is freed when its last record is).
type slab struct{ b []byte }

const slabSize = 64 << 10

// take returns a slice of n bytes, length 0.
func (s *slab) take(n int) []byte {
	if cap(s.b)-len(s.b) < n {
		s.b = make([]byte, 0, max(slabSize, n))
	}
	l := len(s.b)
	s.b = s.b[:l+n]
	return s.b[l : l : l+n]
}
