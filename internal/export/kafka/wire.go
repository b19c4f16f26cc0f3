package kafka

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/intake-int/intake/internal/wbuf"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/telemetry"
)

// The reports topic carries the most messages, so its protobuf is written here directly,
// field by field in field-number order as proto.Marshal writes it (TestReportWire holds the
// two byte for byte), without building the generated structs: no allocation per report
// beyond the record's own bytes.

// reportWire is the sender's scratch for one report's nested messages.
type reportWire struct {
	sub []byte
}

// A report message's fields are written by index into room made beforehand, not appended:
// an append per byte, and a call per varint, were most of the sender's time. Every field
// number is below 16, so each tag is one byte; a hop's and a flow's message are shorter
// than 128 bytes, so each length is one byte, written once the message is.

// pw writes a protobuf into B, sized beforehand, at N.
type pw struct{ wbuf.W }

// field writes scalar field num (below 16) of value x, left out when 0 (proto3).
func (w *pw) field(num byte, x uint64) {
	if x != 0 {
		w.B[w.N] = num << 3
		w.N++
		w.Uvarint(x)
	}
}

// bytes writes bytes field num (below 16).
func (w *pw) bytes(num byte, v []byte) {
	w.B[w.N] = num<<3 | byte(protowire.BytesType)
	w.N++
	w.Uvarint(uint64(len(v)))
	w.N += copy(w.B[w.N:], v)
}

// open starts message field num (below 16) of fewer than 128 bytes; close ends it.
func (w *pw) open(num byte) int {
	w.B[w.N] = num<<3 | byte(protowire.BytesType)
	w.N += 2
	return w.N
}

func (w *pw) close(at int) { w.B[at-1] = byte(w.N - at) }

// reportRoom is the most bytes it's message takes: each varint at most 10 bytes and its
// tag 1, a nested message's length 2.
func reportRoom(it *kafkaReportItem) int {
	n := 3 + 3 + 6*11 + 16 + 64 + kafkapb.MaxHops*(2+8*11) + 11
	switch it.format {
	case telemetry.FormatDTA:
		d := it.dta()
		n += 3 + 16 + 3 + int(d.KeyLen) + 3 + int(d.DataLen) + 9*11
	case telemetry.FormatLabel:
		n += kafkapb.MaxHops*(3+9*11) + 2*11
	}
	return n
}

// appendReportMessage appends it as a kafkapb.Message with a Report body.
func (rw *reportWire) appendReportMessage(b []byte, it *kafkaReportItem) []byte {
	b = slices.Grow(b, reportRoom(it))
	w := pw{wbuf.W{B: b[:cap(b)], N: len(b)}}
	w.field(1, kafkapb.SchemaVersion)
	// The Report's length, 1 or 2 bytes (reportRoom bounds it below 2^14): 2 held, and the
	// Report moved back one byte when it takes 1.
	w.B[w.N] = 2<<3 | byte(protowire.BytesType)
	w.N += 3
	body := w.N
	w.field(1, uint64(it.recv))
	if f := it.format.String(); f != "" {
		w.B[w.N] = 2<<3 | byte(protowire.BytesType)
		w.B[w.N+1] = byte(len(f))
		w.N += 2 + copy(w.B[w.N+2:], f)
	}
	w.field(3, uint64(it.node))
	w.field(4, uint64(it.seq))
	w.field(5, uint64(it.hwID))
	w.field(6, it.ingressTS)
	if it.hasFlow {
		at := w.open(7)
		w.flowKey(&it.flow)
		w.close(at)
	}
	for i := range int(it.nhops) {
		h := &it.hops[i]
		at := w.open(8)
		w.field(1, uint64(h.node))
		w.field(2, uint64(h.in))
		w.field(3, uint64(h.eg))
		w.field(4, uint64(h.lat))
		w.field(5, uint64(h.qid))
		w.field(6, uint64(h.qocc))
		w.field(7, uint64(h.tx))
		w.field(8, h.egTS)
		w.close(at)
	}
	w.field(9, uint64(it.total))
	switch it.format {
	case telemetry.FormatDTA:
		rw.sub = appendDTAMessage(rw.sub[:0], it.dta())
		w.bytes(10, rw.sub)
	case telemetry.FormatLabel:
		for i := range int(it.nlabels) {
			rw.sub = appendLabelItem(rw.sub[:0], &it.labels()[i])
			w.bytes(11, rw.sub)
		}
		w.field(12, uint64(it.labelsTotal))
		if it.labelSpecific {
			w.field(13, 1)
		}
	}
	if l := w.N - body; l < 0x80 {
		w.B[body-2] = byte(l)
		w.N = body - 1 + copy(w.B[body-1:], w.B[body:w.N])
	} else {
		w.B[body-2], w.B[body-1] = byte(l)|0x80, byte(l>>7)
	}
	return w.B[:w.N]
}

// flowKey writes k's FlowKey fields (as FlowKeyMessage makes them).
func (w *pw) flowKey(k *telemetry.FlowKey) {
	w.bytes(1, addrBytes(&k.Src, k.IPv6))
	w.bytes(2, addrBytes(&k.Dst, k.IPv6))
	w.field(3, uint64(k.SrcPort))
	w.field(4, uint64(k.DstPort))
	w.field(5, uint64(k.Proto))
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

// addrBytes is a's bytes as FlowKeyMessage writes them: 4 for an IPv4-mapped address of
// an IPv4 flow, else 16.
func addrBytes(a *[16]byte, v6 bool) []byte {
	if !v6 && [12]byte(a[:12]) == [12]byte{10: 0xff, 11: 0xff} {
		return a[12:]
	}
	return a[:]
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
