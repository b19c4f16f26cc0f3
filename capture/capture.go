// Package capture decodes the telemetry in a pcap or pcapng capture, frame by frame, the way
// `intake decode` shows it: a UDP datagram to a mapped port is decoded as that port's input
// (telemetry report, DTA, INT-label export, INT-MD), every other Ethernet frame is tried as a
// raw INT-MD data packet, and frames without telemetry are counted as skipped. (The
// collector's own replay of a capture through its workers is ingest.Receiver.RunCapture.)
// It also paces `intake replay`, which sends a capture's datagrams again (Pacer).
package capture

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// DefaultPorts are the UDP destination ports mapped to an input unless the caller says
// otherwise (docs/wire-formats.md).
var DefaultPorts = map[uint16]wire.Input{
	32766: wire.InputReport, // ONOS, SD-Fabric, int-host-reporter, host-int
	54321: wire.InputReport, // INTCollector, GEANT
	40040: wire.InputDTA,    // DTA
	40050: wire.InputLabel,  // INT-label exports
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
}

// Stats counts what Decode saw.
type Stats struct {
	Frames, Skipped int
	Reports         [telemetry.FormatLabel + 1]int // by telemetry.Format
	Errors          [wire.NumReasons]int           // by wire.Reason
	Other           int                            // errors that are not *wire.Error
}

// Decode reads the capture from r and calls fn for every report or report error, in order.
// ports maps UDP destination ports to inputs (DefaultPorts, or the caller's). It returns what
// it counted, and the capture's own error (not the reports'), if any.
func Decode(r io.Reader, dec *wire.Decoder, ports map[uint16]wire.Input, fn func(*Item)) (Stats, error) {
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
		payload := pkt.Data
		dg, isUDP := pcap.UDP(pkt.Data, pkt.Link)
		if mapped, ok := ports[dg.DstPort]; isUDP && ok {
			it.Input, it.UDP, it.Datagram, payload = mapped, true, dg, dg.Payload
		} else if pkt.Link != pcap.LinkEthernet {
			st.Skipped++ // raw INT-MD data packets are Ethernet frames
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
			it.Report, it.Err = &rep, err
			if err != nil {
				it.Report = nil
				var we *wire.Error
				errors.As(err, &we)
				if we != nil && it.Input == wire.InputINTMD && we.Reason == wire.NotTelemetry {
					st.Skipped++ // an ordinary packet, not an INT-MD one
					break
				}
				if we != nil {
					st.Errors[we.Reason]++
				} else {
					st.Other++
				}
			} else if int(rep.Format) < len(st.Reports) {
				st.Reports[rep.Format]++
			}
			fn(&it)
		}
	}
}

// String is the one-line summary: frames, reports by format, errors by reason, skipped.
func (st *Stats) String() string {
	var reports, errs int
	var byFormat, byReason []string
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
	paren := func(parts []string) string {
		if len(parts) == 0 {
			return ""
		}
		return " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("frames %d, reports %d%s, errors %d%s, skipped %d",
		st.Frames, reports, paren(byFormat), errs, paren(byReason), st.Skipped)
}
