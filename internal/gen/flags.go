package gen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/cli"
)

// Flags binds the generator's options to a flag set, so that every verb that generates load
// (gen, demo, bench ingest) spells them alike. Call Config after parsing.
type Flags struct {
	c      Config
	set    map[string]bool
	bitmap string
	fs     *flag.FlagSet
}

// AddFlags registers the options on fs with def's values as defaults.
func AddFlags(fs *flag.FlagSet, def Config) *Flags {
	f := &Flags{c: def, fs: fs}
	c := &f.c
	fs.StringVar(&c.Format, "format", c.Format, "datagram `format`: "+strings.Join(Formats, ", "))
	fs.StringVar(&c.Mode, "mode", c.Mode, "report `mode`: md (the sink reports the INT-MD stack) or xd (every hop reports its own metadata)")
	fs.StringVar(&c.INTVersion, "int-version", c.INTVersion, "embedded INT `version` in md mode: 0.5, 1.0 or 2.x (default: the report format's)")
	fs.IntVar(&c.Hops, "hops", c.Hops, "`N` hops per path")
	fs.IntVar(&c.Fields, "fields", c.Fields, "`N` per-hop fields: the first N instruction bits")
	fs.StringVar(&f.bitmap, "bitmap", "", "per-hop fields as an instruction `bitmap` (e.g. 0xfc00), instead of --fields")
	fs.IntVar(&c.Flows, "flows", c.Flows, "`N` flows")
	fs.IntVar(&c.Switches, "switches", c.Switches, "`N` switches the paths are drawn from")
	fs.StringVar(&c.Model, "model", c.Model, "value `model`: network (a network's state: steady values with jitter, bursts, queue build-ups, path changes) or draw (values drawn from --latency, --queue, --util with --vary; any of those four selects it)")
	fs.DurationVar(&c.Interval, "interval", c.Interval, "generated time `D` between the packets successive reports describe (the virtual clock's step)")
	fs.Var(&c.Latency, "latency", "draw model: hop latency in ns: `DIST` const:V, uniform:LO:HI or exp:MEAN")
	fs.Var(&c.Queue, "queue", "draw model: queue occupancy: `DIST`")
	fs.Var(&c.Util, "util", "draw model: egress tx utilization: `DIST`")
	fs.Float64Var(&c.Vary, "vary", c.Vary, "draw model: probability `P` that a report draws new values for each queue and port it crosses (else they repeat the last report's through them)")
	fs.Uint64Var(&c.Events, "events", c.Events, "`N` datagrams a second of generated time carry an event: a change of one hop's tx utilization that the detector's default rules raise exactly one event for; values otherwise constant (selects --model draw with --vary 0 and, unless given, --latency const:2000 --queue const:64 --util const:50); the generated time runs at the wall clock's pace at --pps unless --interval is given, so N events a second are sent")
	fs.IntVar(&c.Batch, "batch", c.Batch, "`N` reports per datagram (tr2.0 coalescing within --mtu, dta batches)")
	fs.IntVar(&c.MTU, "mtu", c.MTU, "largest coalesced UDP payload, `bytes`")
	fs.IntVar(&c.Payload, "payload", c.Payload, "`bytes` of payload in each report's inner packet")
	fs.StringVar(&c.DTA.Op, "dta-op", c.DTA.Op, "DTA `primitive`: "+strings.Join(DTAOps, ", "))
	fs.IntVar(&c.DTA.HeaderLen, "dta-header", c.DTA.HeaderLen, "DTA base header `bytes`: 2, or 3 with a sequence number")
	fs.IntVar(&c.DTA.Redundancy, "redundancy", c.DTA.Redundancy, "DTA Key-Write/Key-Increment redundancy `N`")
	fs.IntVar(&c.DTA.KeyLen, "key-len", c.DTA.KeyLen, "DTA key width, `bytes`")
	fs.IntVar(&c.DTA.DataLen, "data-len", c.DTA.DataLen, "DTA data width, `bytes`")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "`seed` of the stream: the same seed and options give the same bytes")
	fs.IntVar(&c.Ring, "ring", c.Ring, "`N` distinct datagrams prebuilt and cycled through")
	fs.BoolVar(&c.Fresh, "fresh", c.Fresh, "build every datagram as it is sent, with new values (slower)")
	return f
}

// Config returns the parsed, validated options.
func (f *Flags) Config() (Config, error) {
	c := f.c
	f.set = map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.bitmap != "" {
		if f.set["fields"] {
			return c, fmt.Errorf("--fields and --bitmap exclude each other")
		}
		v, err := strconv.ParseUint(f.bitmap, 0, 16)
		if err != nil || v == 0 {
			return c, fmt.Errorf("bitmap: %q: want a non-zero 16-bit instruction bitmap such as 0xff00", f.bitmap)
		}
		c.Bitmap = uint16(v)
	}
	// The draw model's options select it, so that command lines written before the
	// network model (bench ingest --vary 0.01) mean what they meant.
	for _, name := range drawOptions {
		if !f.set[name] {
			continue
		}
		if f.set["model"] && c.Model != ModelDraw {
			return c, fmt.Errorf("--%s: an option of --model draw, not of --model %s", name, c.Model)
		}
		c.Model = ModelDraw
	}
	if f.set["events"] {
		if f.set["model"] && c.Model != ModelDraw {
			return c, fmt.Errorf("--events: values that change only for the events are --model draw's, not --model %s's", c.Model)
		}
		c.Model = ModelDraw
		if !f.set["vary"] {
			c.Vary = 0
		}
		// INTCollector's replay: the same values every report (the defaults' means).
		for _, d := range []struct {
			name string
			d    *Dist
			v    float64
		}{{"latency", &c.Latency, 2000}, {"queue", &c.Queue, 64}, {"util", &c.Util, 50}} {
			if !f.set[d.name] {
				*d.d = Dist{Kind: DistConst, A: d.v}
			}
		}
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// drawOptions are the flags of the draw model's values.
var drawOptions = []string{"latency", "queue", "util", "vary"}

// Pace sets Interval so that generated time runs at the wall clock's pace for a sender of
// pps datagrams a second (as StartDemo does), unless --interval was given: with --events,
// the sender then sends that many events a second. It needs a rate.
func (f *Flags) Pace(c *Config, pps float64) error {
	if f.set["interval"] || c.Events == 0 {
		return nil
	}
	if !(pps > 0) {
		return fmt.Errorf("--events: %d a second needs a rate (--pps), or --interval for the generated time a report", c.Events)
	}
	ci := *c
	ci.Interval = time.Second // valid while the batch is worked out
	t, err := newTopology(ci)
	if err != nil {
		return err
	}
	c.Interval = clamp(time.Duration(float64(time.Second) / (pps * float64(t.batch))))
	return nil
}

// Set reports whether the named flag was given on the command line (valid after Config).
func (f *Flags) Set(name string) bool { return f.set[name] }

// SendFlags are intake gen's sending options, which intake demo takes too: --pps (and its
// deprecated alias --rate), --duration, --count, --sockets, --vector and --gso.
type SendFlags struct {
	pps                  *float64
	duration             time.Duration
	count                uint64
	sockets, vector, gso int
}

// AddSendFlags registers the sending options on fs, with pps datagrams per second as the
// default rate; warn gets the deprecation warning of --rate.
func AddSendFlags(fs *flag.FlagSet, pps float64, warn io.Writer) *SendFlags {
	s := &SendFlags{pps: cli.Rate(fs, "pps", "rate", pps, "`PPS` datagrams (packets) per second in total (0: as fast as possible)", warn)}
	fs.DurationVar(&s.duration, "duration", 0, "stop after `D` (e.g. 10s; default: at Ctrl-C)")
	fs.Uint64Var(&s.count, "count", 0, "stop after `N` datagrams")
	fs.IntVar(&s.sockets, "sockets", 1, "`N` sending sockets, each with its own source port and goroutine")
	fs.IntVar(&s.vector, "vector", 64, "`N` datagrams per sendmmsg call")
	fs.IntVar(&s.gso, "gso", 0, "send up to `N` equal-size datagrams as one UDP_SEGMENT (GSO) super-datagram (0: off)")
	return s
}

// Config returns the checked sending options (To and Progress left for the caller).
func (s *SendFlags) Config() (SendConfig, error) {
	switch {
	case s.duration > 0 && s.count > 0:
		return SendConfig{}, errors.New("--duration and --count exclude each other")
	case s.duration < 0:
		return SendConfig{}, fmt.Errorf("--duration: %v: must be positive", s.duration)
	case *s.pps < 0 || math.IsNaN(*s.pps) || math.IsInf(*s.pps, 0):
		return SendConfig{}, fmt.Errorf("--pps: %g: must be 0 (as fast as possible) or positive", *s.pps)
	case s.sockets < 1 || s.sockets > 256:
		return SendConfig{}, fmt.Errorf("--sockets: %d: allowed is 1 to 256", s.sockets)
	case s.vector < 1 || s.vector > 1024:
		return SendConfig{}, fmt.Errorf("--vector: %d: allowed is 1 to 1024", s.vector)
	case s.gso < 0 || s.gso > MaxGSO:
		return SendConfig{}, fmt.Errorf("--gso: %d: allowed is 0 (off) to %d", s.gso, MaxGSO)
	}
	return SendConfig{Sockets: s.sockets, Rate: *s.pps, Count: s.count, Duration: s.duration, Vector: s.vector, GSO: s.gso}, nil
}
