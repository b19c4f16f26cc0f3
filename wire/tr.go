package wire

import "github.com/intake-int/intake/telemetry"

func (rd *Reader) startReport(r *telemetry.Report) error {
	rd.state = stDone
	return rd.fail(Unsupported, "report", "", 0, 0)
}

func (rd *Reader) nextTR20(r *telemetry.Report) error { rd.state = stDone; return Done }

func (rd *Reader) decodeINTFrame(r *telemetry.Report) error {
	return rd.fail(Unsupported, "int-md", "", 0, 0)
}

func (e *Encoder) appendTR05(dst []byte, r *telemetry.Report) ([]byte, error) { return dst, nil }
func (e *Encoder) appendTR10(dst []byte, r *telemetry.Report) ([]byte, error) { return dst, nil }
func (e *Encoder) appendTR20(dst []byte, rs []telemetry.Report) ([]byte, error) {
	return dst, nil
}
func (e *Encoder) appendINTFrame(dst []byte, r *telemetry.Report) ([]byte, error) {
	return dst, nil
}
