package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// decode prints the telemetry in a capture: the way to look at what a switch sends, and the
// shortest path from a pcap to the normalized Report the collector would build from it.

func init() {
	register(verb{
		name:    "decode",
		summary: "print the telemetry reports in a pcap or pcapng capture",
		run:     runDecode,
	})
}

// defaultPorts are the UDP destination ports decode maps to an input without --port
// (docs/design.md, "Interfaces users see"; docs/wire-formats.md).
var defaultPorts = map[uint16]wire.Input{
	32766: wire.InputReport, // ONOS, SD-Fabric, int-host-reporter, host-int
	54321: wire.InputReport, // INTCollector, GEANT
	40040: wire.InputDTA,    // DTA
	40050: wire.InputLabel,  // INT-label exports
}

// portFlag is the repeatable --port PORT=INPUT[,PORT=INPUT...] flag.
type portFlag map[uint16]wire.Input

func (p portFlag) String() string {
	ports := make([]int, 0, len(p))
	for port := range p {
		ports = append(ports, int(port))
	}
	sort.Ints(ports)
	var b strings.Builder
	for i, port := range ports {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%s", port, p[uint16(port)])
	}
	return b.String()
}

func (p portFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		ps, name, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return fmt.Errorf("%q: want PORT=INPUT, e.g. 1234=report", item)
		}
		port, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || port == 0 {
			return fmt.Errorf("%q: port must be 1-65535", ps)
		}
		in, ok := wire.ParseInput(name)
		if !ok {
			return fmt.Errorf("%q: unknown input (allowed: %s)", name, strings.Join(wire.InputNames(), ", "))
		}
		p[uint16(port)] = in
	}
	return nil
}

// dscpFlag is the repeatable --dscp VALUE[/MASK] flag; given once, it replaces the defaults.
type dscpFlag struct{ m *[]wire.DSCPMatch }

func (d dscpFlag) String() string {
	if d.m == nil {
		return ""
	}
	var parts []string
	for _, m := range *d.m {
		parts = append(parts, fmt.Sprintf("0x%02x/0x%02x", m.Value, m.Mask))
	}
	return strings.Join(parts, ",")
}

func (d dscpFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		vs, ms, hasMask := strings.Cut(strings.TrimSpace(item), "/")
		v, err := strconv.ParseUint(vs, 0, 8)
		if err != nil || v > 0x3f {
			return fmt.Errorf("%q: DSCP value must be 0-63 (decimal or 0x hex)", vs)
		}
		mask := uint64(0x3f)
		if hasMask {
			mask, err = strconv.ParseUint(ms, 0, 8)
			if err != nil || mask == 0 || mask > 0x3f {
				return fmt.Errorf("%q: DSCP mask must be 1-63 (decimal or 0x hex)", ms)
			}
		}
		*d.m = append(*d.m, wire.DSCPMatch{Value: uint8(v), Mask: uint8(mask)})
	}
	return nil
}

const decodeUsage = `[--json] [--port PORT=INPUT ...] [--dscp VALUE[/MASK] ...] FILE

Decodes every frame of a pcap or pcapng capture. A UDP datagram to a mapped port is decoded
as that input (report, dta, int-label, int-md); every other Ethernet frame is tried as a raw
INT-MD data packet, and frames without telemetry are counted as skipped. Default ports:
32766 and 54321 report, 40040 dta, 40050 int-label. The summary goes to stdout, or to
stderr with --json, whose stdout is one JSON object per report per line.`

// decodeStats counts what decode saw, for the summary.
type decodeStats struct {
	frames, skipped int
	reports         [8]int // by telemetry.Format
	errs            [wire.NumReasons]int
	other           int // errors that are not *wire.Error
}

func runDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("decode", decodeUsage, stdout)
	jsonOut := fs.Bool("json", false, "print one JSON object per report per line (keys: see README)")
	ports := portFlag{}
	fs.Var(ports, "port", "`PORT=INPUT`: UDP destination port carrying INPUT (report, dta, int-label, int-md); repeatable, comma-separated")
	var dscp []wire.DSCPMatch
	fs.Var(dscpFlag{&dscp}, "dscp", "`VALUE[/MASK]`: DSCP that marks INT in data packets; repeatable, replaces the defaults 0x17 and 0x01/0x01")
	// The flag package calls Usage on every parse error, and parseFlags calls it again for
	// --help: keep it quiet during parsing and print the usage here, once, for --help only.
	printUsage := fs.Usage
	fs.Usage = func() {}
	// Flags may follow FILE: parse, take one positional argument, and go on.
	var files []string
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage()
			}
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	switch {
	case len(files) == 0:
		return usageErr("missing FILE (usage: intake decode %s)", strings.SplitN(decodeUsage, "\n", 2)[0])
	case len(files) > 1:
		return usageErr("one FILE expected, got %d: %s", len(files), strings.Join(files, " "))
	}
	portMap := make(map[uint16]wire.Input, len(defaultPorts)+len(ports))
	for p, in := range defaultPorts {
		portMap[p] = in
	}
	for p, in := range ports {
		portMap[p] = in
	}
	cfg := wire.DefaultConfig()
	if dscp != nil {
		cfg.DSCP = dscp
	}
	dec, err := wire.NewDecoder(cfg)
	if err != nil {
		return usageErr("%v", err)
	}

	f, err := os.Open(files[0])
	if err != nil {
		return err
	}
	defer f.Close()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	summaryTo := io.Writer(out)
	if *jsonOut {
		summaryTo = stderr
	}
	var st decodeStats
	err = decodeFile(f, dec, portMap, *jsonOut, out, &st)
	out.Flush()
	st.print(summaryTo)
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	return nil
}

func decodeFile(f io.Reader, dec *wire.Decoder, ports map[uint16]wire.Input, jsonOut bool, out *bufio.Writer, st *decodeStats) error {
	pr, err := pcap.NewReader(f)
	if err != nil {
		return err
	}
	var (
		rd   wire.Reader
		rep  telemetry.Report
		line []byte
	)
	for {
		pkt, err := pr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		st.frames++
		frame := st.frames
		in, payload := wire.InputINTMD, pkt.Data
		dg, isUDP := pcap.UDP(pkt.Data, pkt.Link)
		if mapped, ok := ports[dg.DstPort]; isUDP && ok {
			in, payload = mapped, dg.Payload
		} else if pkt.Link != pcap.LinkEthernet {
			st.skipped++ // raw INT-MD data packets are Ethernet frames
			continue
		} else {
			isUDP = false // the outer UDP header is part of the data packet, not the transport
		}
		rd.Reset(dec, in, payload)
		nrep := 0
		// Each report consumes input, so a well-behaved Reader is Done within len+1 calls;
		// the bound keeps a misbehaving one from hanging the verb.
		for range len(payload) + 2 {
			err := rd.Next(&rep)
			if err == wire.Done {
				break
			}
			nrep++
			if err != nil {
				var we *wire.Error
				if errors.As(err, &we) && in == wire.InputINTMD && we.Reason == wire.NotTelemetry {
					st.skipped++
					break
				}
				if we != nil {
					st.errs[we.Reason]++
				} else {
					st.other++
				}
				line = appendDecodeError(line[:0], frame, err, we, jsonOut)
				out.Write(line)
				continue
			}
			if int(rep.Format) < len(st.reports) {
				st.reports[rep.Format]++
			}
			if jsonOut {
				// {"frame":N, then the report's own keys: AppendJSON's opening brace
				// becomes the comma.
				line = append(line[:0], `{"frame":`...)
				line = strconv.AppendInt(line, int64(frame), 10)
				mark := len(line)
				line = telemetry.AppendJSON(line, &rep)
				line[mark] = ','
				line = append(line, '\n')
			} else {
				line = appendReportText(line[:0], frame, nrep, in, isUDP, &dg, &rep)
			}
			out.Write(line)
		}
	}
}

// appendDecodeError formats a report that did not decode.
func appendDecodeError(b []byte, frame int, err error, we *wire.Error, jsonOut bool) []byte {
	if !jsonOut {
		return fmt.Appendf(b, "frame %d: error: %v\n", frame, err)
	}
	b = fmt.Appendf(b, `{"frame":%d,"error":%s`, frame, jsonString(err.Error()))
	if we != nil {
		b = fmt.Appendf(b, `,"reason":%s,"header":%s,"field":%s,"offset":%d`,
			jsonString(we.Reason.String()), jsonString(we.Header), jsonString(we.Field), we.Offset)
	}
	return append(b, "}\n"...)
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// appendReportText formats one report as a readable block.
func appendReportText(b []byte, frame, nrep int, in wire.Input, isUDP bool, dg *pcap.Datagram, r *telemetry.Report) []byte {
	b = fmt.Appendf(b, "frame %d", frame)
	if nrep > 1 {
		b = fmt.Appendf(b, " report %d", nrep)
	}
	b = fmt.Appendf(b, ": %s", r.Format)
	if isUDP {
		b = fmt.Appendf(b, " (udp %s > %s, %s)", netip.AddrPortFrom(dg.Src, dg.SrcPort), netip.AddrPortFrom(dg.Dst, dg.DstPort), in)
	}
	b = append(b, '\n')
	if r.Has&telemetry.HasNodeID != 0 {
		b = fmt.Appendf(b, "  node_id     %d\n", r.NodeID)
	}
	tr := r.Format == telemetry.FormatTR05 || r.Format == telemetry.FormatTR10 || r.Format == telemetry.FormatTR20
	if tr {
		b = fmt.Appendf(b, "  hw_id       %d\n", r.HWID)
	}
	if r.Has&telemetry.HasSeq != 0 {
		b = fmt.Appendf(b, "  seq         %d\n", r.Seq)
	}
	if tr || r.Flags != 0 {
		var names [4]string
		fl := strings.Join(r.Flags.Names(names[:0]), " ")
		if fl == "" {
			fl = "-"
		}
		b = fmt.Appendf(b, "  flags       %s\n", fl)
	}
	if r.Has&telemetry.HasIngressTS != 0 {
		b = fmt.Appendf(b, "  ingress_ts  %d\n", r.IngressTS)
	}
	if r.Has&telemetry.HasDropReason != 0 {
		b = fmt.Appendf(b, "  drop_reason %d\n", r.DropReason)
	}
	if r.Has&telemetry.HasFlow != 0 {
		fk := &r.Flow
		b = fmt.Appendf(b, "  flow        %s > %s proto %d\n",
			netip.AddrPortFrom(fk.SrcAddr(), fk.SrcPort), netip.AddrPortFrom(fk.DstAddr(), fk.DstPort), fk.Proto)
	}
	if r.INT.Version != telemetry.INTNone {
		b = fmt.Appendf(b, "  int_version %s\n", r.INT.Version)
	}
	for i := range r.HopList() {
		h := &r.Hops[i]
		b = fmt.Appendf(b, "  hop %-7d", i+1)
		for j, name := range telemetry.FieldNames {
			if v, ok := h.Value(telemetry.Field(1) << j); ok {
				b = fmt.Appendf(b, " %s=%d", name, v)
			}
		}
		if i == 0 && r.ReporterHop {
			b = append(b, " (reporter)"...)
		}
		b = append(b, '\n')
	}
	if r.Format == telemetry.FormatDTA {
		d := &r.DTA
		b = fmt.Appendf(b, "  dta         %s", d.Op)
		switch d.Op {
		case telemetry.DTAKeyWrite:
			b = fmt.Appendf(b, " redundancy=%d key=%#x data=%#x", d.Redundancy, d.KeyBytes(), d.DataBytes())
		case telemetry.DTAKeyIncrement:
			b = fmt.Appendf(b, " redundancy=%d key=%#x counter=%d", d.Redundancy, d.KeyBytes(), d.Counter)
		case telemetry.DTAPostcard:
			b = fmt.Appendf(b, " key=%#x hop=%d data=%#x", d.KeyBytes(), d.Hop, d.DataBytes())
		case telemetry.DTAAppend:
			b = fmt.Appendf(b, " list=%d data=%#x", d.ListID, d.DataBytes())
		}
		b = append(b, '\n')
	}
	if r.LabelSpecific {
		b = append(b, "  label       specific flow\n"...)
	}
	for i, l := range r.LabelList() {
		b = fmt.Appendf(b, "  item %-6d switch_id=%d ingress_port=%d egress_port=%d ingress_ts=%d egress_ts=%d enq_ts=%d enq_qdepth=%d deq_timedelta=%d deq_qdepth=%d\n",
			i+1, l.SwitchID, l.IngressPort, l.EgressPort, l.IngressTS, l.EgressTS, l.EnqTS, l.EnqQDepth, l.DeqTimedelta, l.DeqQDepth)
	}
	return append(b, '\n')
}

// print writes the summary.
func (st *decodeStats) print(w io.Writer) {
	var reports, errs int
	var byFormat, byReason []string
	for f, n := range st.reports {
		if n > 0 {
			reports += n
			byFormat = append(byFormat, fmt.Sprintf("%s %d", telemetry.Format(f), n))
		}
	}
	for r, n := range st.errs {
		if n > 0 {
			errs += n
			byReason = append(byReason, fmt.Sprintf("%s %d", wire.Reason(r), n))
		}
	}
	if st.other > 0 {
		errs += st.other
		byReason = append(byReason, fmt.Sprintf("other %d", st.other))
	}
	paren := func(parts []string) string {
		if len(parts) == 0 {
			return ""
		}
		return " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(w, "frames %d, reports %d%s, errors %d%s, skipped %d\n",
		st.frames, reports, paren(byFormat), errs, paren(byReason), st.skipped)
}
