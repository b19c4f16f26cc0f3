// Package wbuf writes binary forms by index into room made beforehand: the hot encoders'
// (the inlet's report form, the Kafka export's protobuf) way of writing, where an append per
// byte and a call per varint were most of their time. The caller sizes B for the largest form
// it can write and moves N past what it writes.
package wbuf

// W writes into B at N.
type W struct {
	B []byte
	N int
}

// Uvarint writes x as an unsigned varint (protobuf's, encoding/binary's).
func (w *W) Uvarint(x uint64) {
	for x >= 0x80 {
		w.B[w.N] = byte(x) | 0x80
		x >>= 7
		w.N++
	}
	w.B[w.N] = byte(x)
	w.N++
}

// Bytes writes v.
func (w *W) Bytes(v ...byte) { w.N += copy(w.B[w.N:], v) }
