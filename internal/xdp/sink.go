package xdp

import "fmt"

// The INT sink (docs/sink.md): a second XDP program, bpf/sink.c, for an interface of a host
// that receives data packets carrying INT-MD. It takes the INT out of each packet INT marks,
// restores what the source changed, fixes lengths and checksums and passes the packet on; the
// frame up to INT's end goes to user space through a BPF ring buffer (the SmartNIC sink's
// extraction, in XDP). Everything else passes untouched.

// SinkOutcome is what the sink program did with a packet (enum sink_outcome of bpf/sink.c;
// bindings_linux.go checks each value against bpf2go's).
type SinkOutcome int

// The line comments are the names: metric labels (intake_sink_packets_total's outcome) and
// the status's keys.
const (
	// INT taken out, its metadata lifted, the packet passed
	SinkStripped SinkOutcome = iota // stripped
	// INT taken out and the packet passed, but the ring was full: its metadata is lost
	SinkRingFull // ring_full
	// not INT-marked (or not IP, TCP, UDP): passed untouched
	SinkPassOther // pass_other
	// an IPv4 fragment: passed untouched
	SinkPassFragment // pass_fragment
	// IPv6 with extension headers: passed untouched
	SinkPassIPv6Ext // pass_ipv6_ext
	// marked, but the IP or L4 header is cut short or inconsistent: passed untouched
	SinkPassMalformed // pass_malformed
	// marked, but the INT does not parse (shim type, version, length): passed untouched
	SinkPassINT // pass_int
	// marked, but the headers or INT are longer than the sink reads: passed untouched
	SinkPassLong // pass_long
	// a kernel helper failed before the packet was changed: passed untouched
	SinkPassError // pass_error
	NumSinkOutcomes
)

var sinkOutcomeNames = [NumSinkOutcomes]string{"stripped", "ring_full", "pass_other", "pass_fragment",
	"pass_ipv6_ext", "pass_malformed", "pass_int", "pass_long", "pass_error"}

func (o SinkOutcome) String() string {
	if o >= 0 && o < NumSinkOutcomes {
		return sinkOutcomeNames[o]
	}
	return fmt.Sprintf("SinkOutcome(%d)", int(o))
}

// SinkConfig says what marks INT on a sink's interface and which shims it takes out.
type SinkConfig struct {
	// DSCP values that mark INT (at most MaxSinkDSCP).
	DSCP []DSCPMatch
	// Port is a UDP destination port that marks INT (v2.x NPT 1 or 2, or a v0.5 tail's
	// port); 0: none.
	Port uint16
	// Versions accepted; all false means v0.5, v1.0 and v2.x.
	V05, V10, V2x bool
	// HostINT takes out Intel host-int's shim type 3 (and, over TCP, finds it after the
	// first 20 bytes, as TCPBeforeOptions does).
	HostINT bool
	// TCPBeforeOptions: INT sits after the first 20 bytes of TCP, before its options.
	TCPBeforeOptions bool
	// RingBytes is the ring buffer's size: a power of two, at least a page; 0: DefaultSinkRing.
	RingBytes int
	// Mode is "" (native where the driver has it), ModeNative or ModeGeneric.
	Mode string
}

// Sink program limits.
const (
	MaxSinkDSCP     = 4
	DefaultSinkRing = 4 << 20
	// SinkRecordHeader is the bytes of a ring record before the frame: receive time,
	// ifindex, bytes copied, frame length.
	SinkRecordHeader = 16
)

// SinkRecord is one packet's extracted metadata: the frame up to INT's end (and up to 64
// bytes more), as it arrived, with INT in it.
type SinkRecord struct {
	Time    uint64 // CLOCK_MONOTONIC ns at receive (MonoOffset turns it into Unix ns)
	Ifindex uint32
	WireLen int    // the frame's length as received
	Frame   []byte // valid until the next Read
}

func (c *SinkConfig) versions() uint8 {
	var v uint8
	if c.V05 {
		v |= 1
	}
	if c.V10 {
		v |= 2
	}
	if c.V2x {
		v |= 4
	}
	if v == 0 {
		v = 7
	}
	if c.HostINT {
		v |= 8
	}
	return v
}

// Check reports the first setting the program cannot take.
func (c *SinkConfig) Check() error {
	if len(c.DSCP) > MaxSinkDSCP {
		return fmt.Errorf("dscp: %d matches: the sink program takes at most %d", len(c.DSCP), MaxSinkDSCP)
	}
	for i, m := range c.DSCP {
		if m.Value > 0x3f || m.Mask > 0x3f || m.Mask == 0 {
			return fmt.Errorf("dscp[%d]: value 0x%02x mask 0x%02x: value and mask must be 6-bit, mask non-zero", i, m.Value, m.Mask)
		}
	}
	if len(c.DSCP) == 0 && c.Port == 0 {
		return fmt.Errorf("nothing marks INT: set dscp or port")
	}
	if r := c.RingBytes; r != 0 && (r < 4096 || r&(r-1) != 0) {
		return fmt.Errorf("ring: %d bytes: a power of two, at least 4096", r)
	}
	return nil
}
