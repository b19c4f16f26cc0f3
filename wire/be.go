package wire

import "encoding/binary"

var be = binary.BigEndian

// All-ones values mark a field unavailable (INT v0.5-v2.1, "invalid or unavailable").
const (
	ones8  = 0xff
	ones16 = 0xffff
	ones24 = 0xffffff
	ones32 = 0xffffffff
	ones64 = 0xffffffffffffffff
)

func put16(b []byte, v uint16) []byte { return be.AppendUint16(b, v) }
func put32(b []byte, v uint32) []byte { return be.AppendUint32(b, v) }
func put64(b []byte, v uint64) []byte { return be.AppendUint64(b, v) }
