package export

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intake-int/intake/export/kafkapb"
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
	w.report = r
	b = appendVarintField(b, 1, kafkapb.SchemaVersion)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, r)
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
