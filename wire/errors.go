package wire

import (
	"errors"
	"strconv"
)

// Reason classifies a decode error. Its String form is a stable counter label.
type Reason uint8

// The line comments are the names (String, generated with Input's, wire.go): counter
// labels.
const (
	ReasonNone Reason = iota // none
	// the input ended inside a header or a length points past it
	Truncated // truncated
	// a version field holds a value no decoder knows
	UnknownVersion // unknown_version
	// a length field is inconsistent with the data or the spec
	BadLength // bad_length
	// a field holds a value the spec forbids
	BadValue // bad_value
	// well-formed, but a feature intake does not decode
	Unsupported // unsupported
	// more hops, items or reports than a Report can hold
	TooMany // too_many
	// the input carries no telemetry (no INT where INT was required)
	NotTelemetry // not_telemetry
	numReasons
)

// Reasons lists every reason a decoder can return, for callers that preallocate counters.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := Truncated; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// NumReasons is one more than the largest Reason value, for arrays indexed by Reason.
const NumReasons = int(numReasons)

// Error is a decode error naming the header and field at fault and the byte offset of the
// field within the decoded input. A Reader returns a pointer to its own Error, which stays
// valid until the Reader's next call: copy it to keep it.
type Error struct {
	Reason Reason
	Header string // e.g. "tr2.0 individual report", "ipv4", "int shim"
	Field  string // e.g. "report_length"
	Offset int
	Value  uint64 // the offending value, when there is one
	// Setting names the decoder setting under which this input decodes, when the decoder
	// recognised a known producer's deviation (docs/wire-formats.md): a key of the decoder
	// section, with its value when it is not a quirk's true, e.g. "quirks.host_int" or
	// "dta.header_len: 3". Empty for plain malformation.
	Setting string
}

func (e *Error) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, e.Header...)
	if e.Field != "" {
		b = append(b, ' ')
		b = append(b, e.Field...)
	}
	b = append(b, ": "...)
	b = append(b, e.Reason.String()...)
	if e.Reason != Truncated && e.Reason != NotTelemetry {
		b = append(b, " (value "...)
		b = strconv.AppendUint(b, e.Value, 10)
		b = append(b, ')')
	}
	b = append(b, " at offset "...)
	b = strconv.AppendInt(b, int64(e.Offset), 10)
	if e.Setting != "" {
		b = append(b, " (a known producer deviation: decoder."...)
		b = append(b, e.Setting...)
		b = append(b, " decodes it)"...)
	}
	return string(b)
}

// Done is returned by Reader.Next when the input holds no more reports.
//
//lint:ignore ST1012 Done is the end of the input, as io.EOF is, not a failure
var Done = errors.New("wire: no more reports")

// ReasonOf returns the Reason of a decode error, or ReasonNone for nil and Done.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonNone
}
