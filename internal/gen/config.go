package gen

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Config says what stream to build. Start from DefaultConfig: the zero value is not useful.
// Validate names the option at fault, its value and what is allowed, using the names of
// the `intake gen` flags.
type Config struct {
	// Format is the datagram format: tr0.5, tr1.0, tr2.0, dta or int-label.
	Format string
	// Mode applies to the Telemetry Report formats. md: the flow's sink sends one report
	// per packet with the INT-MD stack of every hop embedded in the inner packet. xd: every
	// hop sends its own report with its metadata in the report header (INT-XD postcards:
	// TR v0.5 NProto 2 local header, TR v1.0 and v2.0 RepMdBits).
	Mode string
	// INTVersion is the version of the embedded INT header in md mode: 0.5, 1.0 or 2.x
	// ("" picks the format's own: 0.5 for tr0.5, 1.0 for tr1.0, 2.x for tr2.0).
	INTVersion string
	// Hops is the path length of every flow, at most Switches and telemetry.MaxHops.
	Hops int
	// Fields is how many per-hop fields: the first Fields instruction bits (bit 0, the node
	// id, first). Bitmap, when non-zero, names the bits instead. In xd mode the same bits
	// select the report's RepMdBits.
	Fields int
	Bitmap uint16
	// Flows and Switches size the emulated network. Each flow gets a path of Hops distinct
	// switches drawn from the seed, and a 5-tuple derived from its index.
	Flows    int
	Switches int
	// Model is the value model (docs/gen.md): ModelNetwork (the default) is a network's
	// state over generated time, stable with jitter below the event detector's default
	// change threshold, with occasional bursts, queue build-ups and path changes;
	// ModelDraw draws values from Latency, Queue and Util, with Vary.
	Model string
	// Interval is the generated time between the packets successive reports describe (the
	// virtual clock's step). The network model's bursts, build-ups and path changes are
	// placed in generated time, so a sender at R reports per second sees them in real time
	// with Interval 1s/R (what intake demo sets).
	Interval time.Duration
	// Value distributions of the draw model, drawn per hop and per report: hop latency
	// (ns), queue occupancy (cells) and egress tx utilization.
	Latency Dist
	Queue   Dist
	Util    Dist
	// Vary (draw model) is the probability that a report draws new values for the egress
	// queue (latency, occupancy) and the egress port (utilization) of each hop it crosses;
	// otherwise they repeat what the last report through that queue or port carried, as in
	// a network whose state changes now and then: flows through one queue see one value. 1
	// (the default) draws every report's values independently.
	Vary float64
	// Events is how many datagrams a second of generated time (Interval a report) carry an
	// event, a change of one hop's tx utilization by EventStep that package detect's default
	// rules raise exactly one change event for (events.go): INTCollector's event rate. It
	// needs the draw model with Vary 0, so that nothing else changes; 0 (the default): none.
	// At Interval 1s/R, a sender of R reports a second sends Events events a second.
	Events uint64
	// Batch is reports per datagram: TR v2.0 coalescing (cut short so that a datagram
	// stays within MTU) and DTA batches. Other formats carry one report per datagram.
	Batch int
	// MTU is the largest UDP payload a coalesced datagram may have (1472: a 1500-byte
	// Ethernet MTU less IPv4 and UDP headers).
	MTU int
	// Payload is the bytes of data-packet payload after the inner packet's headers.
	Payload int
	// DTA options.
	DTA DTAConfig
	// Seed makes the stream reproducible: the same Config gives the same bytes.
	Seed uint64
	// Ring is how many distinct datagrams are prebuilt; sending cycles through them and
	// patches only the sequence numbers. Ignored with Fresh.
	Ring int
	// Fresh builds every datagram as it is sent, with new values, instead of cycling
	// through a prebuilt ring: slower, for accuracy tests that need no repeats.
	Fresh bool
	// Part and Parts partition the stream as a cluster of Parts collectors does (package
	// cluster): with Parts above 1 the stream holds only the reports member Part (0-based,
	// in cluster.members order) owns, so that one generator per member sends each report to
	// its owner. Datagrams batch reports of one owner only, as a switch batching per
	// collector would.
	Part, Parts int
}

// DTAConfig holds the DTA options (DTA §3-4; docs/wire-dta-label.md).
type DTAConfig struct {
	// Op is the primitive: key-write, key-increment, postcard or append.
	Op string
	// HeaderLen is the base header layout: 2 (default translator build) or 3 (with a
	// sequence number for NACK tracking).
	HeaderLen int
	// Redundancy is the number of slots a Key-Write or Key-Increment key is written to.
	Redundancy int
	// KeyLen and DataLen are the key and value widths in bytes.
	KeyLen  int
	DataLen int
}

// Value models, as Config.Model names them.
const (
	ModelNetwork = "network" // a network's state over generated time (model.go)
	ModelDraw    = "draw"    // values drawn from Latency, Queue and Util, with Vary
)

// MaxInterval bounds Config.Interval, so that the virtual clock of 2^34 reports stays
// within 64 bits.
const MaxInterval = time.Second

// DefaultConfig returns the documented defaults: TR v2.0 INT-MD reports of 5 hops with 8
// fields each, 64 flows over 16 switches, one report per datagram, the network value model
// with a packet every microsecond of generated time.
func DefaultConfig() Config {
	return Config{
		Format:   "tr2.0",
		Mode:     "md",
		Hops:     5,
		Fields:   8,
		Flows:    64,
		Switches: 16,
		Model:    ModelNetwork,
		Interval: time.Microsecond,
		Latency:  Dist{Kind: DistExp, A: 2000},
		Queue:    Dist{Kind: DistExp, A: 64},
		Util:     Dist{Kind: DistUniform, A: 0, B: 100},
		Vary:     1,
		Batch:    1,
		MTU:      1472,
		DTA:      DTAConfig{Op: "key-write", HeaderLen: 2, Redundancy: 1, KeyLen: 4, DataLen: 4},
		Seed:     1,
		Ring:     4096,
	}
}

// Formats lists the formats a generator builds, as Config.Format names them.
var Formats = []string{"tr0.5", "tr1.0", "tr2.0", "dta", "int-label"}

// DTAOps lists the DTA primitives, as DTAConfig.Op names them.
var DTAOps = []string{"key-write", "key-increment", "postcard", "append"}

// Limits of the options.
const (
	MaxFlows    = 1 << 24 // flow addresses are built from 24 bits of the index
	MaxSwitches = 1 << 20
	MaxRing     = 1 << 20
	MaxPayload  = 1024
	MaxBatch    = 1024
	MinMTU      = 64
	MaxMTU      = 65507 // the largest IPv4 UDP payload
)

// validBits are the instruction bits whose per-hop fields intake's generator fills, by INT
// version (bit 0 is the MSB); reserved bits and the checksum complement carry no values.
func validBits(v telemetry.INTVersion) uint16 {
	if v == telemetry.INT2x {
		return 0xff80 // bits 0-8: v2.x adds buffer id/occupancy
	}
	return 0xff00 // bits 0-7
}

func parseINTVersion(s string) (telemetry.INTVersion, bool) {
	switch s {
	case "0.5":
		return telemetry.INT05, true
	case "1.0":
		return telemetry.INT10, true
	case "2.x", "2.0", "2.1":
		return telemetry.INT2x, true
	}
	return telemetry.INTNone, false
}

// intVersion returns the INT version the stream uses: in md mode the embedded header's, in
// xd mode the one whose bitmap semantics the report metadata follows.
func (c *Config) intVersion() telemetry.INTVersion {
	if v, ok := parseINTVersion(c.INTVersion); ok && c.Mode == "md" {
		return v
	}
	switch c.Format {
	case "tr0.5":
		return telemetry.INT05
	case "tr1.0":
		return telemetry.INT10
	}
	return telemetry.INT2x
}

// bitmap returns the instruction bitmap: Bitmap, or the first Fields valid bits.
func (c *Config) bitmap() uint16 {
	if c.Bitmap != 0 {
		return c.Bitmap
	}
	return ^uint16(0) << (16 - c.Fields)
}

func (c *Config) isReport() bool {
	return c.Format == "tr0.5" || c.Format == "tr1.0" || c.Format == "tr2.0"
}

// Validate reports the first invalid option.
func (c *Config) Validate() error {
	if c.Parts > 1 && (c.Part < 0 || c.Part >= c.Parts) || c.Parts < 0 || c.Parts > partition.MaxMembers {
		return fmt.Errorf("collectors: member %d of %d: allowed are 1 to %d collectors", c.Part, c.Parts, partition.MaxMembers)
	}
	if !contains(Formats, c.Format) {
		return fmt.Errorf("format: %q: allowed are %s", c.Format, strings.Join(Formats, ", "))
	}
	if c.isReport() {
		if c.Mode != "md" && c.Mode != "xd" {
			return fmt.Errorf("mode: %q: allowed are md (the sink reports the INT stack) and xd (every hop reports its own metadata)", c.Mode)
		}
		if c.INTVersion != "" {
			if _, ok := parseINTVersion(c.INTVersion); !ok {
				return fmt.Errorf("int-version: %q: allowed are 0.5, 1.0 and 2.x", c.INTVersion)
			}
			if c.Mode == "xd" {
				return fmt.Errorf("int-version: %q: xd reports embed no INT header; the version applies to md mode only", c.INTVersion)
			}
		}
	}
	if c.Model != ModelNetwork && c.Model != ModelDraw {
		return fmt.Errorf("model: %q: allowed are network (a network's state: jitter, bursts, build-ups, path changes) and draw (values drawn from --latency, --queue and --util, with --vary)", c.Model)
	}
	if c.Interval < 1 || c.Interval > MaxInterval {
		return fmt.Errorf("interval: %v: allowed is 1ns to %v of generated time between packets", c.Interval, MaxInterval)
	}
	if !(c.Vary >= 0 && c.Vary <= 1) {
		return fmt.Errorf("vary: %g: allowed is 0 to 1 (the probability that a report draws new values)", c.Vary)
	}
	if err := c.validateEvents(); err != nil {
		return err
	}
	if c.Switches < 1 || c.Switches > MaxSwitches {
		return fmt.Errorf("switches: %d: allowed is 1 to %d", c.Switches, MaxSwitches)
	}
	if c.Format == "int-label" && c.Switches > 255 {
		return fmt.Errorf("switches: %d: an INT-label item holds an 8-bit switch id, so at most 255", c.Switches)
	}
	if c.Hops < 1 || c.Hops > telemetry.MaxHops {
		return fmt.Errorf("hops: %d: allowed is 1 to %d", c.Hops, telemetry.MaxHops)
	}
	if c.Hops > c.Switches {
		return fmt.Errorf("hops: %d: a path visits distinct switches, so at most --switches (%d)", c.Hops, c.Switches)
	}
	if c.Format == "int-label" && c.Hops > telemetry.MaxLabelItems {
		return fmt.Errorf("hops: %d: an INT-label export holds at most %d items", c.Hops, telemetry.MaxLabelItems)
	}
	v := c.intVersion()
	if c.Bitmap != 0 {
		if extra := c.Bitmap &^ validBits(v); extra != 0 && c.isReport() {
			return fmt.Errorf("bitmap: 0x%04x: INT %s fields are bits 0-%d (mask 0x%04x); bits 0x%04x are not",
				c.Bitmap, v, 15-bits.TrailingZeros16(validBits(v)), validBits(v), extra)
		}
	} else if max := bits.OnesCount16(validBits(v)); c.Fields < 1 || c.Fields > max {
		return fmt.Errorf("fields: %d: INT %s defines 1 to %d per-hop fields", c.Fields, v, max)
	}
	if c.isReport() && c.Mode == "md" {
		// The shim's length byte counts words: the INT header and the whole stack must fit.
		words := 3 + c.Hops*hopBytes(v, c.bitmap())/4 // v2.x: header; the length excludes the shim
		if v != telemetry.INT2x {
			words++ // v0.5 and v1.0 count the shim, and v0.5's tail takes the place of v2.x's third header word
		}
		if words > 255 {
			return fmt.Errorf("hops: %d hops of %d bytes make an INT stack of %d words; the shim's length allows 255 (fewer hops or fields)",
				c.Hops, hopBytes(v, c.bitmap()), words)
		}
	}
	if c.Flows < 1 || c.Flows > MaxFlows {
		return fmt.Errorf("flows: %d: allowed is 1 to %d", c.Flows, MaxFlows)
	}
	for _, d := range []struct {
		name string
		d    Dist
	}{{"latency", c.Latency}, {"queue", c.Queue}, {"util", c.Util}} {
		if err := d.d.validate(); err != nil {
			return fmt.Errorf("%s: %v", d.name, err)
		}
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		return fmt.Errorf("batch: %d: allowed is 1 to %d reports per datagram", c.Batch, MaxBatch)
	}
	if c.Batch > 1 && c.Format != "tr2.0" && c.Format != "dta" {
		return fmt.Errorf("batch: %d: only tr2.0 (coalescing) and dta (batches) carry several reports per datagram", c.Batch)
	}
	if c.Format == "dta" && c.Batch > 255 {
		return fmt.Errorf("batch: %d: a DTA batch holds at most 255 reports (its count is one byte)", c.Batch)
	}
	if c.MTU < MinMTU || c.MTU > MaxMTU {
		return fmt.Errorf("mtu: %d: allowed is %d to %d bytes of UDP payload", c.MTU, MinMTU, MaxMTU)
	}
	if c.Payload < 0 || c.Payload > MaxPayload {
		return fmt.Errorf("payload: %d: allowed is 0 to %d bytes", c.Payload, MaxPayload)
	}
	if c.Format == "dta" {
		d := &c.DTA
		if !contains(DTAOps, d.Op) {
			return fmt.Errorf("dta-op: %q: allowed are %s", d.Op, strings.Join(DTAOps, ", "))
		}
		if d.HeaderLen != 2 && d.HeaderLen != 3 {
			return fmt.Errorf("dta-header: %d: allowed are 2 (default translator) and 3 (with a sequence number)", d.HeaderLen)
		}
		if d.Redundancy < 1 || d.Redundancy > 255 {
			return fmt.Errorf("redundancy: %d: allowed is 1 to 255", d.Redundancy)
		}
		if d.KeyLen < 1 || d.KeyLen > telemetry.MaxDTAKey {
			return fmt.Errorf("key-len: %d: allowed is 1 to %d bytes", d.KeyLen, telemetry.MaxDTAKey)
		}
		if d.KeyLen < 4 && c.Flows > 1<<(8*d.KeyLen) {
			return fmt.Errorf("key-len: %d: %d flows need distinct keys; %d bytes tell %d apart", d.KeyLen, c.Flows, d.KeyLen, 1<<(8*d.KeyLen))
		}
		if d.DataLen < 1 || d.DataLen > telemetry.MaxDTAData {
			return fmt.Errorf("data-len: %d: allowed is 1 to %d bytes", d.DataLen, telemetry.MaxDTAData)
		}
	}
	if !c.Fresh && (c.Ring < 1 || c.Ring > MaxRing) {
		return fmt.Errorf("ring: %d: allowed is 1 to %d prebuilt datagrams", c.Ring, MaxRing)
	}
	return nil
}

// WireConfig returns the wire configuration the stream is encoded with; a decoder built
// from it reads the stream back (it differs from wire.DefaultConfig only in the DTA widths
// and header layout).
func (c *Config) WireConfig() wire.Config {
	w := wire.DefaultConfig()
	if c.Format == "dta" {
		w.DTA = wire.DTAConfig{HeaderLen: c.DTA.HeaderLen, KeyLen: c.DTA.KeyLen, DataLen: c.DTA.DataLen}
	}
	return w
}

// Input returns what the stream's datagrams hold, for a decoder.
func (c *Config) Input() wire.Input {
	switch c.Format {
	case "dta":
		return wire.InputDTA
	case "int-label":
		return wire.InputLabel
	}
	return wire.InputReport
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// DistKind names a value distribution.
type DistKind uint8

const (
	DistConst   DistKind = iota + 1 // always A
	DistUniform                     // uniform on [A, B]
	DistExp                         // exponential with mean A
)

// Dist is a value distribution, written const:V, uniform:LO:HI or exp:MEAN.
type Dist struct {
	Kind DistKind
	A, B float64
}

// ParseDist parses const:V, uniform:LO:HI or exp:MEAN (a bare number means const).
func ParseDist(s string) (Dist, error) {
	parts := strings.Split(s, ":")
	nums := make([]float64, 0, 2)
	if _, err := strconv.ParseFloat(parts[0], 64); err == nil && len(parts) == 1 {
		parts = []string{"const", parts[0]}
	}
	for _, p := range parts[1:] {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Dist{}, fmt.Errorf("%q: %q is not a number (want const:V, uniform:LO:HI or exp:MEAN)", s, p)
		}
		nums = append(nums, f)
	}
	var d Dist
	switch {
	case parts[0] == "const" && len(nums) == 1:
		d = Dist{Kind: DistConst, A: nums[0]}
	case parts[0] == "uniform" && len(nums) == 2:
		d = Dist{Kind: DistUniform, A: nums[0], B: nums[1]}
	case parts[0] == "exp" && len(nums) == 1:
		d = Dist{Kind: DistExp, A: nums[0]}
	default:
		return Dist{}, fmt.Errorf("%q: want const:V, uniform:LO:HI or exp:MEAN", s)
	}
	if err := d.validate(); err != nil {
		return Dist{}, err
	}
	return d, nil
}

func (d Dist) validate() error {
	ok := func(f float64) bool { return f >= 0 && f < 1<<32 && !math.IsNaN(f) }
	switch d.Kind {
	case DistConst:
		if !ok(d.A) {
			return fmt.Errorf("%s: the value must be 0 to 2^32-1", d)
		}
	case DistUniform:
		if !ok(d.A) || !ok(d.B) || d.B < d.A {
			return fmt.Errorf("%s: want 0 <= LO <= HI < 2^32", d)
		}
	case DistExp:
		if !ok(d.A) || d.A <= 0 {
			return fmt.Errorf("%s: the mean must be positive and below 2^32", d)
		}
	default:
		return fmt.Errorf("no distribution given (want const:V, uniform:LO:HI or exp:MEAN)")
	}
	return nil
}

// String returns d in the form ParseDist reads.
func (d Dist) String() string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch d.Kind {
	case DistConst:
		return "const:" + g(d.A)
	case DistUniform:
		return "uniform:" + g(d.A) + ":" + g(d.B)
	case DistExp:
		return "exp:" + g(d.A)
	}
	return "none"
}

// Set and the value receiver's String make a *Dist a flag.Value.
func (d *Dist) Set(s string) error {
	v, err := ParseDist(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
