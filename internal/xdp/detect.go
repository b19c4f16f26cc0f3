package xdp

import (
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// Detect is detection in the kernel (detect.kernel, docs/xdp.md "Detection in the kernel";
// INTCollector §III, the SmartNIC sink §III-C): the XDP program of a report listener parses
// the reports it can (bpf/report.h) and runs package detect's rules on them with the
// detector's state in BPF maps (bpf/detect.h). Only the events go up, through a BPF ring
// buffer; the reports it cannot parse go up through AF_XDP as in mode xdp, counted by
// reason (Lift).
type Detect struct {
	// MaxFlows and MaxKeys size the flow and switch-key tables (entries).
	MaxFlows, MaxKeys int
	// Lift redirects the detected reports too, marked (Socket.FrameTime's detected bit),
	// for user-space processors that need every report (the flow cache, DTA's INT
	// translation, Kafka's reports).
	Lift bool
	// Parser is what the parser follows of the listener's decoder.
	Parser
	// EventRing is the event ring buffer's size in bytes (a power of two; default 4 MiB).
	EventRing int
}

// DSCPMatch is one decoder.dscp entry: INT is present when DSCP & Mask == Value & Mask.
type DSCPMatch struct{ Value, Mask uint8 }

// MaxDSCP is the most DSCP matches the parser takes.
const MaxDSCP = 4

// Lift is why a report went up through AF_XDP instead of being detected in the kernel (enum
// lift of bpf/report.h: bindings_linux.go checks each value against bpf2go's).
type Lift int

// The line comments are the names (String, generated with Outcome's, outcome.go): the
// lifted counts' keys in the status.
const (
	// not a TR v0.5, v1.0 or v2.0 report the parser reads (reserved bits set, a quirk's layout)
	LiftVersion Lift = iota // version
	// several individual reports in one packet, or no packet inside
	LiftBatch // batch
	// a RepType or RepMdBits the parser does not read
	LiftRepType // rep_type
	// the inner packet: two VLAN tags, fragments, IPv6 extension headers, not TCP/UDP, cut short
	LiftInner // inner
	// VXLAN-GPE, Geneve or the INT port: user space decodes tunnels
	LiftTunnel // tunnel
	// INT that is neither v2.x MD with NPT 0 nor v1.0, or that user space must judge
	LiftINT // int
	// more than KernelMaxHops hops
	LiftHops // hops
	// a datagram longer than the parser reads
	LiftLong // long
	NumLifts
)

// The marks on a frame's time (Socket.FrameTime) of a report the program has handled and
// redirected too (Detect.Lift): MetaDetected, it has detected it, and MetaCached, its flow
// cache has it. User space must not do either again.
const (
	MetaDetected = 1 << 63
	MetaCached   = 1 << 62
	MetaMarks    = MetaDetected | MetaCached
)

// KernelMaxHops is the most hops a report the kernel detects may have (bpf/report.h).
const KernelMaxHops = 8

// DetectCounts are the kernel detector's counters, summed over CPUs (the dc_* enum of
// bpf/detect.h).
type DetectCounts struct {
	Reports   uint64 // reports detected in the kernel
	Values    uint64 // metric values seen (M_all)
	Events    uint64 // events written to the ring
	RingFull  uint64 // events lost because the ring was full
	TableFull uint64 // key updates lost because a table was full
	NewFlows  uint64 // flow entries made (less those deleted: the flows held)
	NewKeys   uint64 // switch-key entries made
	ByKind    [8]uint64
}

// Event is an event as the program writes it to the ring (struct kev of bpf/detect.h).
type Event struct {
	Time, Dev, Prev, Value, Threshold uint64
	Switch, ID                        uint32
	Kind, Scope, Meas, KeyKind        uint8
	NPath                             uint8
	_                                 [3]uint8
	Flow                              telemetry.FlowKey
	_                                 [2]uint8
	Path                              [KernelMaxHops]uint32
}

// The key kinds of switch keys (bpf/detect.h's kq_*); a flow's events have KeyFlow.
const (
	KeyQueue  = 0
	KeyPort   = 1
	KeyBuffer = 2
	KeyDrop   = 3
	KeySeq    = 4
	KeyFlow   = 0xff
)

// ToEvent fills e from k; off turns the program's CLOCK_MONOTONIC time into Unix ns.
func (k *Event) ToEvent(e *event.Event, off int64) {
	*e = event.Event{Time: int64(k.Time) + off, DevTime: k.Dev, Kind: event.Kind(k.Kind),
		Scope: event.Scope(k.Scope), Measurement: event.Measurement(k.Meas),
		Prev: k.Prev, Value: k.Value, Threshold: k.Threshold}
	e.Key.Switch = k.Switch
	switch k.KeyKind {
	case KeyFlow:
		e.Key.Flow = k.Flow
		e.NPath = k.NPath
		copy(e.Path[:], k.Path[:min(int(k.NPath), KernelMaxHops)])
	case KeyQueue:
		e.Key.Queue = uint16(k.ID)
	case KeyPort:
		e.Key.Port = k.ID
	case KeyBuffer:
		e.Key.Buffer = uint8(k.ID)
	case KeyDrop:
		e.Key.Reason = uint8(k.ID)
	case KeySeq:
		e.Key.HWID = uint8(k.ID)
	}
}

// KernelFlow is a slot of the kernel detector's flow table (struct fent of bpf/detect.h).
// Times are CLOCK_MONOTONIC ns.
type KernelFlow struct {
	State, Lock                         uint32
	Key                                 flowKey
	NPath, HasLat, HopOK, _             uint8
	_                                   uint32
	First, Last, Dev, Reports, PathHash uint64
	Path                                [KernelMaxHops]uint32
	Above                               uint16
	_                                   [3]uint16
	Lat                                 [2]uint64 // ref, cur
	Hop                                 [KernelMaxHops][2]uint64
	Memo                                [KernelMaxHops][2]uint32 // the hops' queue and port key slots, plus one
}

// KernelKey is a switch key of the kernel detector's table (struct swkey).
type KernelKey struct {
	Switch, ID uint32
	Kind       uint8
	_          [3]uint8
}

// KernelKeyEntry is a slot of the switch-key table (struct swent).
type KernelKeyEntry struct {
	State, Lock          uint32
	Key                  KernelKey
	Has, Above, SeqOK, _ uint8
	Ver, _               uint32
	Last, Dev            uint64
	V                    [2][2]uint64 // ref, cur
}

// flowKey is a flow's key in the kernel's table: telemetry.FlowKey padded to 40 bytes.
type flowKey struct {
	K telemetry.FlowKey
	_ [2]uint8
}

// tableSlots is the slots of a table that holds n entries at most three quarters full: a
// power of two.
func tableSlots(n int) int {
	s := 64
	for s*3/4 < n {
		s *= 2
	}
	return s
}

// TableBytes is what d's tables take in BPF memory: the flow table and the switch-key
// table, each of tableSlots entries (the configuration's memory budget counts them).
func (d Detect) TableBytes() (flows, keys int) {
	return tableSlots(d.MaxFlows) * int(unsafe.Sizeof(KernelFlow{})), tableSlots(d.MaxKeys) * int(unsafe.Sizeof(KernelKeyEntry{}))
}
