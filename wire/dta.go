package wire

import "github.com/intake-int/intake/telemetry"

// startDTA parses the DTA base header and decodes the first primitive.
func (rd *Reader) startDTA(r *telemetry.Report) error {
	rd.state = stDone
	return rd.fail(Unsupported, "dta", "", 0, 0)
}

// nextDTA decodes the next primitive of a DTA batch.
func (rd *Reader) nextDTA(r *telemetry.Report) error {
	rd.state = stDone
	return Done
}

// appendDTA encodes rs as one DTA datagram (a batch when len(rs) > 1).
func (e *Encoder) appendDTA(dst []byte, rs []telemetry.Report) ([]byte, error) {
	return dst, errEncode("dta: not implemented")
}
