package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/capture"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/pcap"
)

// replay sends the UDP telemetry datagrams of a capture to a collector: the way to feed a
// recorded switch's traffic to `intake serve` again, at its own pace or faster.

func init() {
	register(verb{
		name:    "replay",
		summary: "send a capture's UDP telemetry datagrams to a collector",
		run:     runReplay,
	})
}

// portList is the --dport flag: comma-separated UDP ports.
type portList map[uint16]bool

func (p portList) String() string {
	var s []string
	for port := range p {
		s = append(s, strconv.Itoa(int(port)))
	}
	return strings.Join(s, ",")
}

func (p portList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("%q: port must be 1-65535", f)
		}
		p[uint16(n)] = true
	}
	return nil
}

const replayUsage = "FILE --to HOST:PORT [--pps PPS | --speed X] [--max-wait D] [--dport PORTS]"

func runReplay(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", replayUsage, stdout)
	to := fs.String("to", "", "collector `address` HOST:PORT to send to (required)")
	rate := cli.Rate(fs, "pps", "rate", 0, "send at a fixed rate of `PPS` datagrams (packets) per second", stderr)
	speed := fs.Float64("speed", 0, "keep the capture's inter-packet timing, `X` times faster (1: real time)")
	dports := portList{}
	fs.Var(dports, "dport", "only datagrams to these UDP destination `PORTS` (comma-separated; default: every UDP datagram)")
	maxWait := fs.Duration("max-wait", capture.DefaultMaxWait, "wait at most `D` between two datagrams (longer gaps in the capture are cut to D and reported)")
	quiet := fs.Bool("quiet", false, "no progress lines")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[strings.Replace(f.Name, "rate", "pps", 1)] = true })
	switch {
	case len(pos) != 1:
		return usageErr("want one capture FILE, got %d arguments", len(pos))
	case *to == "":
		return usageErr("--to HOST:PORT is required")
	case set["pps"] && set["speed"]:
		return usageErr("--pps and --speed exclude each other")
	}
	mode, x, name := capture.FullSpeed, 0.0, ""
	switch {
	case set["pps"]:
		mode, x, name = capture.FixedRate, *rate, "--pps"
	case set["speed"]:
		mode, x, name = capture.CaptureTiming, *speed, "--speed"
	}
	pacer, err := capture.NewPacer(mode, x, *maxWait)
	if err != nil {
		if name == "" {
			name = "--max-wait"
		}
		return usageErr("%s %v", name, err)
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	rd, err := pcap.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	conn, err := net.Dial("udp", *to)
	if err != nil {
		return err
	}
	defer conn.Close()

	var sent, bytes, notUDP, otherPort, sendErrs uint64
	start := time.Now()
	lastProgress := start
	progress := func(now time.Time) {
		if *quiet {
			return
		}
		el := now.Sub(start).Seconds()
		fmt.Fprintf(stderr, "replay: %d datagrams sent (%.0f/s)\n", sent, float64(sent)/el)
	}
	var rerr error
	for {
		p, err := rd.Next()
		if err != nil {
			if err != io.EOF {
				rerr = fmt.Errorf("%s: %w", pos[0], err)
			}
			break
		}
		d, ok := pcap.UDP(p.Data, p.Link)
		if !ok {
			notUDP++
			continue
		}
		if len(dports) > 0 && !dports[d.DstPort] {
			otherPort++
			continue
		}
		capped := pacer.Capped
		due := pacer.Next(p.Time)
		if pacer.Capped > capped && capped == 0 && !*quiet {
			fmt.Fprintf(stderr, "replay: datagram %d would wait %s: waits are cut to %s (--max-wait)\n", pacer.FirstCapped, pacer.FirstGap, pacer.MaxWait())
		}
		if wait := due - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := conn.Write(d.Payload); err != nil {
			// ECONNREFUSED from an earlier datagram (nothing listening) is reported here;
			// count it and go on, as a switch would.
			sendErrs++
			continue
		}
		sent++
		bytes += uint64(len(d.Payload))
		if now := time.Now(); now.Sub(lastProgress) >= time.Second {
			progress(now)
			lastProgress = now
		}
	}
	el := time.Since(start)
	pps := 0.0
	if s := el.Seconds(); s > 0 {
		pps = float64(sent) / s
	}
	capped := ""
	if pacer.Capped > 0 {
		capped = fmt.Sprintf("; waits cut to %s: %d (%s of capture time skipped)", pacer.MaxWait(), pacer.Capped, pacer.Skipped)
	}
	fmt.Fprintf(stdout, "replay: sent %d datagrams (%d bytes) to %s in %s (%.0f/s); skipped %d frames not UDP, %d to other ports; %d send errors%s\n",
		sent, bytes, *to, el.Round(time.Millisecond), pps, notUDP, otherPort, sendErrs, capped)
	return rerr
}
