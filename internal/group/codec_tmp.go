package group

import (
	"errors"
	"unsafe"

	"github.com/intake-int/intake/telemetry"
)

// TEMPORARY until telemetry.Report's binary form lands: the struct's memory.

var reportSize = int(unsafe.Sizeof(telemetry.Report{}))

func appendReport(b []byte, r *telemetry.Report) []byte {
	return append(b, unsafe.Slice((*byte)(unsafe.Pointer(r)), reportSize)...)
}

func unmarshalReport(r *telemetry.Report, b []byte) error {
	if len(b) != reportSize {
		return errors.New("bad size")
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(r)), reportSize), b)
	return nil
}
