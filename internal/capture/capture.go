// Package capture decodes the telemetry in a pcap or pcapng capture, frame by frame, the way
// `intake decode` shows it: a UDP datagram to a mapped port is decoded as that port's input
// (telemetry report, DTA, INT-label export, INT-MD) with that port's decoder (a serve
// configuration's listeners, or the defaults), every other Ethernet frame is tried as a raw
// INT-MD data packet, and frames without telemetry are counted as skipped, except that
// datagrams to unmapped ports that hold telemetry reports are counted so that the summary
// can name the --port flag, and errors that a producer quirk explains so that it can name
// the quirk. (The collector's own replay of a capture through its workers is
// ingest.Receiver.RunCapture.) It also paces `intake replay`, which sends a capture's
// datagrams again (Pacer).
package capture

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// DefaultPorts are the UDP destination ports mapped to an input unless the caller says
// otherwise (docs/wire-formats.md): the default listeners of `intake serve`.
var DefaultPorts = map[uint16]wire.Input{
	32766: wire.InputReport, // ONOS, SD-Fabric, int-host-reporter, host-int
	54321: wire.InputReport, // INTCollector, GEANT
	40040: wire.InputDTA,    // DTA
	40050: wire.InputLabel,  // INT-label exports
}

// Setup is how Decode reads a capture: what each mapped UDP port carries and with which
// decoder, and the decoder for everything else (frames tried as INT-MD data packets, and
// datagrams to unmapped ports checked for telemetry reports).
type Setup struct {
	Decoder *wire.Decoder
	Ports   map[uint16]Port
}

// Port is one mapped UDP destination port.
type Port struct {
	Input   wire.Input
	Decoder *wire.Decoder // nil: the Setup's
}

// Options are the command line's settings over a configuration.
type Options struct {
	// Ports map more UDP ports to inputs (over the configuration's).
	Ports map[uint16]wire.Input
	// DSCP, when set, replaces the DSCP matches of every decoder.
	DSCP []wire.DSCPMatch
	// Quirks are turned on in every decoder (wire.QuirkNames).
	Quirks []string
}

// NewSetup builds the Setup of a serve configuration's receive path, every decoder key
// and per-listener override included (nil: the defaults, DefaultPorts and
// wire.DefaultConfig), with opts applied over it. Listeners on port 0 (a port the kernel
// picks) map nothing.
func NewSetup(ic *ingest.Config, opts Options) (*Setup, error) {
	if ic == nil {
		ic = &ingest.Config{Decoder: wire.DefaultConfig()}
		for port, in := range DefaultPorts {
			ic.Listeners = append(ic.Listeners, ingest.Listener{Format: in.String(), Port: int(port)})
		}
	}
	adjust := func(cfg wire.Config) (*wire.Decoder, error) {
		if opts.DSCP != nil {
			cfg.DSCP = opts.DSCP
		}
		for _, q := range opts.Quirks {
			if err := cfg.Quirks.Set(q); err != nil {
				return nil, err
			}
		}
		return wire.NewDecoder(cfg)
	}
	top, err := adjust(ic.Decoder)
	if err != nil {
		return nil, err
	}
	s := &Setup{Decoder: top, Ports: map[uint16]Port{}}
	for i, l := range ic.Listeners {
		in, ok := wire.ParseInput(l.Format)
		if !ok || l.Port <= 0 || l.Port > 65535 {
			continue
		}
		if _, dup := s.Ports[uint16(l.Port)]; dup { // two listeners on one port: the first wins, as in serve --pcap
			continue
		}
		p := Port{Input: in}
		if l.Decoder != nil {
			if p.Decoder, err = adjust(ic.DecoderFor(i)); err != nil {
				return nil, fmt.Errorf("listeners[%d].decoder: %w", i, err)
			}
		}
		s.Ports[uint16(l.Port)] = p
	}
	for port, in := range opts.Ports {
		s.Ports[port] = Port{Input: in}
	}
	return s, nil
}

// An Item is one decoded report, or one report that did not decode, with where it came from.
type Item struct {
	Frame int        // 1-based frame number in the capture
	Index int        // 1-based report number within the frame
	Input wire.Input // what the payload was decoded as
	// UDP is true when the telemetry was the payload of Datagram (a mapped port); for a raw
	// INT-MD data packet the outer UDP header, if any, belongs to the data packet.
	UDP      bool
	Datagram pcap.Datagram
	Report   *telemetry.Report // valid until the callback returns; nil when Err is set
	Err      error
	// Inner is the error in the report's inner packet (wire.Reader.InnerErr): the report
	// decoded, the packet it carries did not. Valid until the callback returns.
	Inner *wire.Error
}

// Stats counts what Decode saw.
type Stats struct {
	Frames, Skipped int
	Reports         [telemetry.FormatLabel + 1]int // by telemetry.Format
	Errors          [wire.NumReasons]int           // by wire.Reason
	Other           int                            // errors that are not *wire.Error
	Inner           [wire.NumReasons]int           // reports kept whose inner packet did not decode, by reason
	// Deviations counts errors (and inner errors) that a known producer's deviation
	// explains, by the decoder setting that decodes them (wire.Error.Setting).
	Deviations map[string]int
	// Unmapped counts datagrams to ports no input is mapped to whose payload decodes as
	// telemetry reports, by port: decode them with --port PORT=report.
	Unmapped map[uint16]int
}

// Decode reads the capture from r and calls fn for every report or report error, in order.
// It returns what it counted, and the capture's own error (not the reports'), if any.
func Decode(r io.Reader, s *Setup, fn func(*Item)) (Stats, error) {
	var st Stats
	pr, err := pcap.NewReader(r)
	if err != nil {
		return st, err
	}
	var (
		rd  wire.Reader
		rep telemetry.Report
		it  Item
	)
	for {
		pkt, err := pr.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		st.Frames++
		it = Item{Frame: st.Frames, Input: wire.InputINTMD}
		payload, dec := pkt.Data, s.Decoder
		dg, isUDP := pcap.UDP(pkt.Data, pkt.Link)
		if mapped, ok := s.Ports[dg.DstPort]; isUDP && ok {
			it.Input, it.UDP, it.Datagram, payload = mapped.Input, true, dg, dg.Payload
			if mapped.Decoder != nil {
				dec = mapped.Decoder
			}
		} else if pkt.Link != pcap.LinkEthernet {
			st.Skipped++ // raw INT-MD data packets are Ethernet frames
			if isUDP {
				st.unmapped(s.Decoder, &dg)
			}
			continue
		}
		rd.Reset(dec, it.Input, payload)
		// Each report consumes input, so a well-behaved Reader is Done within len+1 calls;
		// the bound keeps a misbehaving one from hanging the caller.
		for range len(payload) + 2 {
			err := rd.Next(&rep)
			if err == wire.Done {
				break
			}
			it.Index++
			it.Report, it.Err, it.Inner = &rep, err, rd.InnerErr()
			if err != nil {
				it.Report, it.Inner = nil, nil
				var we *wire.Error
				errors.As(err, &we)
				if we != nil && it.Input == wire.InputINTMD && we.Reason == wire.NotTelemetry {
					st.Skipped++ // an ordinary packet, not an INT-MD one
					if isUDP {
						st.unmapped(s.Decoder, &dg)
					}
					break
				}
				if we != nil {
					st.Errors[we.Reason]++
					st.deviation(we)
				} else {
					st.Other++
				}
			} else {
				if int(rep.Format) < len(st.Reports) {
					st.Reports[rep.Format]++
				}
				if it.Inner != nil {
					st.Inner[it.Inner.Reason]++
					st.deviation(it.Inner)
				}
			}
			fn(&it)
		}
	}
}

func (st *Stats) deviation(e *wire.Error) {
	if e.Setting == "" {
		return
	}
	if st.Deviations == nil {
		st.Deviations = map[string]int{}
	}
	st.Deviations[e.Setting]++
}

// unmapped counts a datagram to an unmapped port whose payload holds telemetry reports.
func (st *Stats) unmapped(dec *wire.Decoder, dg *pcap.Datagram) {
	if !HoldsReports(dec, dg.Payload) {
		return
	}
	if st.Unmapped == nil {
		st.Unmapped = map[uint16]int{}
	}
	st.Unmapped[dg.DstPort]++
}

// HoldsReports reports whether b, a UDP payload, is telemetry reports beyond reasonable
// doubt: the header's reserved bits are zero (TR v0.5: 15 bits, v1.0: 6), and every report
// in it decodes with no error, inner packet included, and carries a data packet whose IP
// header parsed (the flow). An ordinary datagram fails this: its first nibble must be a
// report version, the reserved bits zero, a TR v2.0 packet's report lengths must tile it
// exactly, and an Ethernet or IP header must parse at the offset the report header gives
// (capture_test.go checks it against ordinary traffic and random bytes).
func HoldsReports(dec *wire.Decoder, b []byte) bool {
	if len(b) < 4 {
		return false
	}
	switch b[0] >> 4 {
	case 0:
		if b[1]&0x1f != 0 || b[2] != 0 || b[3]&0xc0 != 0 {
			return false
		}
	case 1:
		if b[2]&0x7e != 0 {
			return false
		}
	}
	var rd wire.Reader
	var r telemetry.Report
	rd.Reset(dec, wire.InputReport, b)
	n := 0
	for range len(b) + 2 {
		switch err := rd.Next(&r); {
		case err == wire.Done:
			return n > 0
		case err != nil || rd.InnerErr() != nil || r.Has&telemetry.HasFlow == 0:
			return false
		}
		n++
	}
	return false
}

// String is the summary: one line of frames, reports by format, errors by reason, reports
// whose inner packet did not decode (when any), skipped frames; then a hint line for each
// setting that decodes reports that showed a known producer deviation, and for each port
// whose datagrams hold telemetry reports but is mapped to no input.
func (st *Stats) String() string {
	var reports, errs, inner int
	var byFormat, byReason, byInner []string
	for f, n := range st.Reports {
		if n > 0 {
			reports += n
			byFormat = append(byFormat, fmt.Sprintf("%s %d", telemetry.Format(f), n))
		}
	}
	for r, n := range st.Errors {
		if n > 0 {
			errs += n
			byReason = append(byReason, fmt.Sprintf("%s %d", wire.Reason(r), n))
		}
	}
	if st.Other > 0 {
		errs += st.Other
		byReason = append(byReason, fmt.Sprintf("other %d", st.Other))
	}
	for r, n := range st.Inner {
		if n > 0 {
			inner += n
			byInner = append(byInner, fmt.Sprintf("%s %d", wire.Reason(r), n))
		}
	}
	paren := func(parts []string) string {
		if len(parts) == 0 {
			return ""
		}
		return " (" + strings.Join(parts, ", ") + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "frames %d, reports %d%s, errors %d%s", st.Frames, reports, paren(byFormat), errs, paren(byReason))
	if inner > 0 {
		fmt.Fprintf(&b, ", inner packet errors %d%s", inner, paren(byInner))
	}
	fmt.Fprintf(&b, ", skipped %d", st.Skipped)
	for _, set := range slices.Sorted(maps.Keys(st.Deviations)) {
		fmt.Fprintf(&b, "\nhint: %d %s a known producer deviation that decoder.%s decodes (%s)",
			st.Deviations[set], plural(st.Deviations[set], "report shows", "reports show"), set, settingFlag(set))
	}
	for _, port := range slices.Sorted(maps.Keys(st.Unmapped)) {
		n := st.Unmapped[port]
		fmt.Fprintf(&b, "\nhint: %d %s to UDP port %d, which no input is mapped to, %s telemetry reports: decode with --port %d=report",
			n, plural(n, "datagram", "datagrams"), port, plural(n, "holds", "hold"), port)
	}
	return b.String()
}

// settingFlag says how to turn a decoder setting on from the command line.
func settingFlag(set string) string {
	if q, ok := strings.CutPrefix(set, "quirks."); ok {
		return "--quirk " + q
	}
	key, val, _ := strings.Cut(set, ": ")
	return "a --config file with decoder." + key + ": " + val
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
