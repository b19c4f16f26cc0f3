// Package wire owns intake's wire formats: zero-allocation decoders that turn a datagram into
// normalized telemetry.Reports, and the encoders that build the same datagrams (used by tests,
// the generator and the emulated fabric).
//
// Formats, as docs/wire-formats.md and docs/wire-dta-label.md describe them:
//   - Telemetry Report v0.5, v1.0 and v2.0 (P4.org Applications WG), with the inner packet
//     (Ethernet, VLAN/QinQ, IPv4 with options, IPv6 with extension headers, TCP, UDP) and the
//     INT embedded in it: INT v0.5 (with tail), v1.0 and v2.0/v2.1 INT-MD and INT-MX, over
//     TCP/UDP shims, VXLAN-GPE, Geneve and GRE (INTCollector §III-B; SmartNIC sink §III-B).
//   - Raw INT-MD data packets as an INT sink receives them.
//   - The DTA reporting protocol, all four primitives (DTA §3-4), with intake's batching.
//   - INT-label exports (INT-label §2).
//
// A Decoder is immutable configuration, safe for concurrent use. A Reader walks one input
// and fills caller-owned Reports one at a time; workers keep one Reader and one Report each,
// so decoding allocates nothing. Decoders never panic and never read past their input: every
// failure is an *Error naming the header, the field and the byte offset.
package wire

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/telemetry"
)

const (
	maxDTAKey  = telemetry.MaxDTAKey
	maxDTAData = telemetry.MaxDTAData
)

// Input says what a datagram (or captured frame) holds.
type Input uint8

const (
	InputReport Input = iota // a Telemetry Report of any version (told apart by its Ver nibble)
	InputINTMD               // a raw INT-MD data packet: an Ethernet frame
	InputDTA                 // a DTA report
	InputLabel               // an INT-label export
)

var inputNames = [...]string{"report", "int-md", "dta", "int-label"}

func (in Input) String() string {
	if int(in) < len(inputNames) {
		return inputNames[in]
	}
	return "unknown"
}

// ParseInput is the inverse of Input.String.
func ParseInput(s string) (Input, bool) {
	for i, n := range inputNames {
		if n == s {
			return Input(i), true
		}
	}
	return 0, false
}

// InputNames lists the valid input names, for error messages.
func InputNames() []string { return inputNames[:] }

// Decoder holds the compiled configuration shared by all Readers.
type Decoder struct {
	cfg Config

	dscpN     int
	dscp      [8]DSCPMatch
	gpeNP     [256]bool
	genevesN  int
	geneves   [8]uint16
	intPort   uint16
	gpePort   uint16
	genPort   uint16
	greProto  uint16
	probeShim bool
}

// NewDecoder validates cfg and compiles it.
func NewDecoder(cfg Config) (*Decoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Decoder{cfg: cfg, intPort: cfg.INTPort, gpePort: cfg.GPEPort, genPort: cfg.GenevePort,
		greProto: cfg.GREProtocol, probeShim: cfg.ProbeShim}
	d.dscpN = copy(d.dscp[:], cfg.DSCP)
	for _, np := range cfg.GPENextProtocols {
		d.gpeNP[np] = true
	}
	d.genevesN = copy(d.geneves[:], cfg.GeneveClasses)
	return d, nil
}

// Config returns the configuration the decoder was built from.
func (d *Decoder) Config() Config { return d.cfg }

// Reader state.
const (
	stStart uint8 = iota
	stTR20        // inside a TR v2.0 packet: more individual reports may follow
	stDTA         // inside a DTA batch
	stDone
)

// Reader decodes the reports in one input, one per call to Next. Keep a Reader per worker
// and Reset it for each input: it holds the Error it returns, so it must not be copied while
// in use.
type Reader struct {
	d     *Decoder
	in    Input
	b     []byte
	off   int
	state uint8

	// TR v2.0 group header, shared by its individual reports.
	grpVer  uint8
	grpHW   uint8
	grpSeq  uint32
	grpNode uint32

	// DTA base header, shared by a batch.
	dtaOp   telemetry.DTAOp
	dtaHdr  uint8
	dtaSeq  uint8
	dtaImm  bool
	dtaRetx bool
	dtaLeft int

	err Error

	innerErr Error // the inner packet's error of the last report (hasInner)
	hasInner bool

	// The hop plan of the last INT stack, keyed by version and bitmap (planKey 0: none):
	// consecutive reports of a stream almost always share it.
	planKey uint32
	plan    hopPlan
}

// Reset points the Reader at input b of kind in. b must stay unchanged while it is read.
func (rd *Reader) Reset(d *Decoder, in Input, b []byte) {
	if d != rd.d { // a plan depends on the decoder's quirks
		rd.planKey = 0
	}
	rd.d, rd.in, rd.b, rd.off, rd.state, rd.dtaLeft = d, in, b, 0, stStart, 0
}

// Next decodes the next report into r. It returns nil when r holds a report, Done when the
// input has no more, and an *Error when the report at hand is malformed; after an error the
// Reader goes on with the next report where the format allows it (TR v2.0 reports whose
// length was readable, DTA batch entries), so callers loop until Done.
func (rd *Reader) Next(r *telemetry.Report) error {
	rd.hasInner = false
	err := rd.next(r)
	if err != nil {
		// A report that fails after its inner packet did (a TR v2.0 TLV list whose packet
		// TLV broke and whose next TLV is cut) is no report: it has no inner error either.
		rd.hasInner = false
	}
	return err
}

func (rd *Reader) next(r *telemetry.Report) error {
	if rd.d == nil {
		return Done
	}
	r.Reset()
	switch rd.state {
	case stDone:
		return Done
	case stTR20:
		return rd.nextTR20(r)
	case stDTA:
		return rd.nextDTA(r)
	}
	switch rd.in {
	case InputReport:
		return rd.startReport(r)
	case InputINTMD:
		rd.state = stDone
		return rd.decodeINTFrame(r)
	case InputDTA:
		return rd.startDTA(r)
	case InputLabel:
		rd.state = stDone
		return rd.decodeLabel(r)
	}
	rd.state = stDone
	return rd.fail(Unsupported, "input", "kind", 0, uint64(rd.in))
}

// fail records an error and returns it.
func (rd *Reader) fail(reason Reason, header, field string, off int, val uint64) error {
	rd.err = Error{Reason: reason, Header: header, Field: field, Offset: off, Value: val}
	return &rd.err
}

// failSet records an error that a known producer's deviation explains: setting is the
// decoder setting under which the input decodes ("" when none).
func (rd *Reader) failSet(reason Reason, header, field string, off int, val uint64, setting string) error {
	rd.err = Error{Reason: reason, Header: header, Field: field, Offset: off, Value: val, Setting: setting}
	return &rd.err
}

// InnerErr returns the error in the inner (data) packet of the report the last call to Next
// returned, or nil. A Telemetry Report whose own headers decode is returned even when the
// packet it carries is broken (an int-host-reporter report whose synthesized packet has a
// UDP header under protocol TCP, INT that does not parse): the report keeps its header
// metadata and whatever of the inner packet's addresses and ports decoded, but no INT, and
// the inner error is counted apart from decode errors. Valid until the next call to Next.
func (rd *Reader) InnerErr() *Error {
	if !rd.hasInner {
		return nil
	}
	return &rd.innerErr
}

// DecodeAll decodes every report of one input into fresh Reports: a convenience for tools
// and tests, not for the hot path. It returns the reports and the errors, in input order.
func (d *Decoder) DecodeAll(in Input, b []byte) ([]telemetry.Report, []Error) {
	var rd Reader
	rd.Reset(d, in, b)
	var out []telemetry.Report
	var errs []Error
	for {
		var r telemetry.Report
		err := rd.Next(&r)
		if err == Done {
			return out, errs
		}
		if err != nil {
			errs = append(errs, rd.err)
			continue
		}
		out = append(out, r)
	}
}

// Encoder builds datagrams from Reports, appending to a caller's buffer.
type Encoder struct {
	cfg Config
}

// NewEncoder validates cfg. The encoder honours the quirks (to emit a producer's deviations)
// and the DTA layout.
func NewEncoder(cfg Config) (*Encoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Encoder{cfg: cfg}, nil
}

// Append encodes r as one datagram of its Format: a Telemetry Report (a TR v2.0 group of
// one), a raw INT-MD Ethernet frame, a DTA report, or an INT-label export.
func (e *Encoder) Append(dst []byte, r *telemetry.Report) ([]byte, error) {
	if err := e.queueIDsFit(r); err != nil {
		return dst, err
	}
	switch r.Format {
	case telemetry.FormatTR05:
		return e.appendTR05(dst, r)
	case telemetry.FormatTR10:
		return e.appendTR10(dst, r)
	case telemetry.FormatTR20:
		return e.appendTR20(dst, one(r))
	case telemetry.FormatINTMD:
		return e.appendINTFrame(dst, r)
	case telemetry.FormatDTA:
		return e.appendDTA(dst, one(r))
	case telemetry.FormatLabel:
		return e.appendLabel(dst, r)
	}
	return dst, errEncode("format %d cannot be encoded", r.Format)
}

// AppendBatch encodes several reports as one datagram: a coalesced TR v2.0 packet (the group
// header's node id, hw_id and sequence number come from rs[0]) or a DTA batch (all of one
// primitive). Other formats carry one report per datagram.
func (e *Encoder) AppendBatch(dst []byte, rs []telemetry.Report) ([]byte, error) {
	if len(rs) == 0 {
		return dst, errEncode("empty batch")
	}
	switch rs[0].Format {
	case telemetry.FormatTR20:
		for i := range rs {
			if err := e.queueIDsFit(&rs[i]); err != nil {
				return dst, err
			}
		}
		return e.appendTR20(dst, rs)
	case telemetry.FormatDTA:
		return e.appendDTA(dst, rs)
	}
	if len(rs) == 1 {
		return e.Append(dst, &rs[0])
	}
	return dst, errEncode("format %s carries one report per datagram", rs[0].Format)
}

// one views a single report as a batch of one.
func one(r *telemetry.Report) []telemetry.Report { return unsafe.Slice(r, 1) }

func errEncode(format string, args ...any) error {
	return fmt.Errorf("wire: encode: "+format, args...)
}
