package wire

import "github.com/intake-int/intake/telemetry"

// decodeLabel decodes an INT-label export.
func (rd *Reader) decodeLabel(r *telemetry.Report) error {
	return rd.fail(Unsupported, "int-label", "", 0, 0)
}

// appendLabel encodes an INT-label export.
func (e *Encoder) appendLabel(dst []byte, r *telemetry.Report) ([]byte, error) {
	return dst, errEncode("int-label: not implemented")
}
