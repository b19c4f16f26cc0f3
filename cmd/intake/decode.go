package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/intake-int/intake/internal/capture"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/wire"
)

// decode prints the telemetry in a capture: the way to look at what a switch sends, and the
// shortest path from a pcap to the normalized Report the collector would build from it. The
// walk and the formats are package capture's; this file parses flags.

func init() {
	register(verb{
		name:    "decode",
		summary: "print the telemetry reports in a pcap or pcapng capture",
		run:     runDecode,
	})
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

// quirkFlag is the repeatable --quirk NAME[,NAME...] flag.
type quirkFlag struct{ names *[]string }

func (q quirkFlag) String() string {
	if q.names == nil {
		return ""
	}
	return strings.Join(*q.names, ",")
}

func (q quirkFlag) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		var probe wire.Quirks
		if err := probe.Set(name); err != nil {
			return err
		}
		*q.names = append(*q.names, name)
	}
	return nil
}

const decodeUsage = `[--json] [--config FILE] [--port PORT=INPUT ...] [--dscp VALUE[/MASK] ...] [--quirk NAME ...] FILE

Decodes every frame of a pcap or pcapng capture. A UDP datagram to a mapped port is decoded
as that input (report, dta, int-label, int-md); every other Ethernet frame is tried as a raw
INT-MD data packet, and frames without telemetry are counted as skipped. Default ports:
32766 and 54321 report, 40040 dta, 40050 int-label. --config takes the ports and decoders
(every decoder key, per-listener overrides) of a serve configuration instead. The summary
goes to stdout, or to stderr with --json, whose stdout is one JSON object per report per
line; it names the --port or --quirk that would decode what did not.`

func runDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("decode", decodeUsage, stdout)
	jsonOut := fs.Bool("json", false, "print one JSON object per report per line (keys: see README)")
	cfgPath := fs.String("config", "", "`FILE`: a serve configuration whose listeners' ports and decoders (quirks, DTA layout, ...) to use")
	ports := portFlag{}
	fs.Var(ports, "port", "`PORT=INPUT`: UDP destination port carrying INPUT (report, dta, int-label, int-md); repeatable, comma-separated")
	var dscp []wire.DSCPMatch
	fs.Var(dscpFlag{&dscp}, "dscp", "`VALUE[/MASK]`: DSCP that marks INT in data packets; repeatable, replaces the defaults 0x17 and 0x01/0x01")
	var quirks []string
	fs.Var(quirkFlag{&quirks}, "quirk", "`NAME`: turn on a producer quirk in every decoder ("+strings.Join(wire.QuirkNames(), ", ")+"); repeatable")
	files, err := parseArgs(fs, args)
	switch {
	case err != nil:
		return err
	case len(files) == 0:
		return usageErr("missing FILE (usage: intake decode %s)", strings.SplitN(decodeUsage, "\n", 2)[0])
	case len(files) > 1:
		return usageErr("one FILE expected, got %d: %s", len(files), strings.Join(files, " "))
	}
	var ic *ingest.Config
	if *cfgPath != "" {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return usageErr("%v", err)
		}
		in := cfg.Ingest()
		ic = &in
	}
	setup, err := capture.NewSetup(ic, capture.Options{Ports: ports, DSCP: dscp, Quirks: quirks})
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
	var line []byte
	st, err := capture.Decode(f, setup, func(it *capture.Item) {
		if *jsonOut {
			line = it.AppendJSON(line[:0])
		} else {
			line = it.AppendText(line[:0])
		}
		out.Write(line)
	})
	out.Flush()
	summaryTo := io.Writer(stdout)
	if *jsonOut {
		summaryTo = stderr
	}
	fmt.Fprintln(summaryTo, st.String())
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	return nil
}
