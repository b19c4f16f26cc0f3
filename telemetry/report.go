// Package telemetry owns intake's normalized telemetry record, Report, which every decoder in
// package wire fills and every processor reads.
//
// A Report is one telemetry report: one individual report of a Telemetry Report packet (TR
// v0.5, v1.0 or v2.0, P4.org Applications WG), one raw INT-MD data packet as an INT sink sees
// it, one DTA primitive (DTA paper §3), or one INT-label export (INT-label paper §2). Its
// layout is fixed-size and allocation-free: hops and label items live in arrays inside the
// struct, so a worker can reuse one Report for every packet it decodes (docs/design.md, hot-path
// rules). Only the first NHops hops and the first NLabels items are meaningful; the rest of
// each array is left dirty by Reset, which is why Equal, and not ==, compares two Reports.
//
// The hop list is in normal form: newest hop first. When a report carries its own per-hop
// metadata (TR v0.5 drop/local header, TR v1.0 RepMdBits words, TR v2.0 RepMdBits), that is
// the reporting node's hop and comes first, marked by ReporterHop; the embedded INT stack
// follows, newest first.
package telemetry

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// Capacities of the fixed arrays in a Report. A packet that carries more is a decode error
// (reason too_many), never a silent truncation.
const (
	MaxHops       = 32
	MaxLabelItems = 32
	MaxDTAKey     = 64
	MaxDTAData    = 32
)

// Format says which wire format a Report was decoded from.
type Format uint8

const (
	FormatUnknown Format = iota
	FormatTR05           // Telemetry Report v0.5
	FormatTR10           // Telemetry Report v1.0
	FormatTR20           // Telemetry Report v2.0
	FormatINTMD          // a raw INT-MD data packet, not wrapped in a report
	FormatDTA            // a DTA primitive
	FormatLabel          // an INT-label export
)

var formatNames = [...]string{"unknown", "tr0.5", "tr1.0", "tr2.0", "int-md", "dta", "int-label"}

// String returns the format's name as used in JSON output and config ("tr2.0", "dta", ...).
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "unknown"
}

// ParseFormat is the inverse of Format.String.
func ParseFormat(s string) (Format, bool) {
	for i, n := range formatNames {
		if i > 0 && n == s {
			return Format(i), true
		}
	}
	return FormatUnknown, false
}

// Flags are a report's D, Q, F and I bits.
type Flags uint8

const (
	FlagDrop         Flags = 1 << iota // D: a packet matching a drop watchlist was dropped
	FlagQueue                          // Q: congested-queue association
	FlagFlow                           // F: tracked-flow association
	FlagIntermediate                   // I (TR v2.0): sent by an INT-MD transit node
)

// Names returns the set flags in the order drop, queue, flow, intermediate, written into dst
// (which must have room for 4) so that the caller controls allocation.
func (f Flags) Names(dst []string) []string {
	if f&FlagDrop != 0 {
		dst = append(dst, "drop")
	}
	if f&FlagQueue != 0 {
		dst = append(dst, "queue")
	}
	if f&FlagFlow != 0 {
		dst = append(dst, "flow")
	}
	if f&FlagIntermediate != 0 {
		dst = append(dst, "intermediate")
	}
	return dst
}

// Has marks which optional report-level fields are present.
type Has uint8

const (
	HasNodeID     Has = 1 << iota // NodeID is the reporting node (absent in TR v0.5 with NProto 0)
	HasSeq                        // Seq is a report sequence number
	HasIngressTS                  // IngressTS is the report header's ingress timestamp
	HasDropReason                 // DropReason is set
	HasFlow                       // Flow holds a parsed 5-tuple
)

// INTVersion is the version of an embedded INT header.
type INTVersion uint8

const (
	INTNone INTVersion = iota
	INT05
	INT10
	INT2x
)

var intVersionNames = [...]string{"", "0.5", "1.0", "2.x"}

func (v INTVersion) String() string {
	if int(v) < len(intVersionNames) {
		return intVersionNames[v]
	}
	return ""
}

// Report is one decoded telemetry report. See the package doc for the normal form.
type Report struct {
	Format Format
	Flags  Flags
	Has    Has
	HWID   uint8

	NodeID     uint32 // the reporting node (switch id in v0.5/v1.0, node id in v2.0)
	Seq        uint32
	IngressTS  uint64 // the report header's ingress timestamp (TR v0.5/v1.0), device ns
	DropReason uint8

	// Report metadata as on the wire, kept so that an encoder can reproduce the packet.
	TR TRHeader

	// ReporterHop: Hops[0] is the reporting node's own metadata from the report header.
	ReporterHop bool
	// Kernel is what the XDP program has done with this report already (detect.kernel,
	// flowcache.kernel; set by ingest): the processors skip what it has done.
	Kernel KernelDone

	Flow  FlowKey // the tracked flow's 5-tuple when Has&HasFlow
	Inner Inner   // the shape of the inner (data) packet
	INT   INTHeader

	NHops uint8
	Hops  [MaxHops]Hop

	DTA DTA

	LabelSpecific bool // INT-label option type bit: specific-flow telemetry
	NLabels       uint8
	Labels        [MaxLabelItems]LabelItem

	// RecvTime is the collector's receive time in Unix ns, set by ingest, not by decoders.
	RecvTime int64
}

// TRHeader keeps the Telemetry Report fields that are not normalized elsewhere.
type TRHeader struct {
	Ver        uint8  // the version nibble as sent (differs from Format under quirks)
	NProto     uint8  // v0.5 NProto / v1.0 NProt; v2.0: InType
	RepType    uint8  // v2.0 RepType (0 inner only, 1 INT)
	MDBits     uint16 // v1.0 RepMdBits (6 bits) or v2.0 RepMdBits (16 bits)
	DSID       uint16 // v2.0 domain-specific id
	DSMdBits   uint16
	DSMdStatus uint16
	DSMdLen    uint8 // v2.0: words of domain-specific metadata (skipped)
	SinkNodeID uint32
}

// Reset makes r empty without clearing the hop and label arrays (see the package doc).
func (r *Report) Reset() {
	r.Format, r.Flags, r.Has, r.HWID = 0, 0, 0, 0
	r.NodeID, r.Seq, r.IngressTS, r.DropReason = 0, 0, 0, 0
	r.TR = TRHeader{}
	r.ReporterHop, r.Kernel = false, 0
	r.Flow = FlowKey{}
	r.Inner = Inner{}
	r.INT = INTHeader{}
	r.NHops = 0
	r.DTA.reset()
	r.LabelSpecific, r.NLabels = false, 0
	r.RecvTime = 0
}

// HopList returns the meaningful hops, newest first.
func (r *Report) HopList() []Hop { return r.Hops[:r.NHops] }

// LabelList returns the meaningful INT-label items, newest first.
func (r *Report) LabelList() []LabelItem { return r.Labels[:r.NLabels] }

// AddHop appends a zero hop and returns it, or nil when the report already holds MaxHops.
func (r *Report) AddHop() *Hop {
	if int(r.NHops) >= MaxHops {
		return nil
	}
	h := &r.Hops[r.NHops]
	*h = Hop{}
	r.NHops++
	return h
}

// Equal reports whether a and b hold the same report, ignoring array slots past NHops and
// NLabels and ignoring RecvTime.
func (a *Report) Equal(b *Report) bool {
	if a.Format != b.Format || a.Flags != b.Flags || a.Has != b.Has || a.HWID != b.HWID ||
		a.NodeID != b.NodeID || a.Seq != b.Seq || a.IngressTS != b.IngressTS ||
		a.DropReason != b.DropReason || a.TR != b.TR || a.ReporterHop != b.ReporterHop ||
		a.Flow != b.Flow || a.Inner != b.Inner || a.INT != b.INT || a.NHops != b.NHops ||
		a.DTA != b.DTA || a.LabelSpecific != b.LabelSpecific || a.NLabels != b.NLabels {
		return false
	}
	for i := range a.HopList() {
		if a.Hops[i] != b.Hops[i] {
			return false
		}
	}
	for i := range a.LabelList() {
		if a.Labels[i] != b.Labels[i] {
			return false
		}
	}
	return true
}

// FlowKey is a flow 5-tuple in a comparable, pointer-free form usable as a table key.
// IPv4 addresses are stored IPv4-mapped (::ffff:a.b.c.d) with IPv6 false.
type FlowKey struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	Proto            uint8
	IPv6             bool
}

// SrcAddr returns the source address (unmapped for IPv4).
func (k *FlowKey) SrcAddr() netip.Addr { return addr(k.Src, k.IPv6) }

// DstAddr returns the destination address (unmapped for IPv4).
func (k *FlowKey) DstAddr() netip.Addr { return addr(k.Dst, k.IPv6) }

func addr(b [16]byte, v6 bool) netip.Addr {
	a := netip.AddrFrom16(b)
	if !v6 {
		return a.Unmap()
	}
	return a
}

// KeyBytes writes k as the bytes a flow is keyed by in DTA's stores and in a cluster's
// partitioning (docs/dta.md, docs/scale-out.md) into dst, which must hold 37 bytes, and
// returns them: IPv4 source, destination (4 bytes each), source port, destination port (2
// bytes each, big-endian), protocol: 13 bytes; IPv6 the same with 16-byte addresses: 37.
func (k *FlowKey) KeyBytes(dst []byte) []byte {
	if k.IPv6 {
		dst = dst[:37]
		copy(dst[0:], k.Src[:])
		copy(dst[16:], k.Dst[:])
		binary.BigEndian.PutUint16(dst[32:], k.SrcPort)
		binary.BigEndian.PutUint16(dst[34:], k.DstPort)
		dst[36] = k.Proto
		return dst
	}
	dst = dst[:13]
	copy(dst[0:], k.Src[12:])
	copy(dst[4:], k.Dst[12:])
	binary.BigEndian.PutUint16(dst[8:], k.SrcPort)
	binary.BigEndian.PutUint16(dst[10:], k.DstPort)
	dst[12] = k.Proto
	return dst
}

// String writes the flow as "SRC:SPORT > DST:DPORT PROTO" (IPv6 addresses bracketed; tcp and
// udp by name, other protocols as "proto N": ProtoName), as FlowString writes a flow of the
// API's JSON.
func (k *FlowKey) String() string {
	return netip.AddrPortFrom(k.SrcAddr(), k.SrcPort).String() + " > " + netip.AddrPortFrom(k.DstAddr(), k.DstPort).String() + " " + ProtoName(k.Proto)
}

// SetAddrs sets source and destination from netip addresses; both must be of one family.
func (k *FlowKey) SetAddrs(src, dst netip.Addr) {
	k.IPv6 = src.Is6() && !src.Is4In6()
	k.Src = src.As16()
	k.Dst = dst.As16()
}

// SetIPv4 sets IPv4 source and destination from their 4-byte forms.
func (k *FlowKey) SetIPv4(src, dst []byte) {
	k.IPv6 = false
	k.Src = [16]byte{10: 0xff, 11: 0xff, 12: src[0], 13: src[1], 14: src[2], 15: src[3]}
	k.Dst = [16]byte{10: 0xff, 11: 0xff, 12: dst[0], 13: dst[1], 14: dst[2], 15: dst[3]}
}

// LinkType says where a packet starts.
type LinkType uint8

const (
	LinkNone LinkType = iota
	LinkEthernet
	LinkIPv4
	LinkIPv6
)

// Encap says how INT was carried in the data packet.
type Encap uint8

const (
	EncapNone    Encap = iota
	EncapTCP           // shim after the TCP header
	EncapUDP           // shim after the UDP header (NPT 0, or INT signalled by DSCP)
	EncapUDPPort       // v2.x: the UDP destination port is the INT port (NPT 1 or 2)
	EncapGPE           // VXLAN-GPE
	EncapGeneve        // Geneve option
	EncapGRE           // GRE
)

var encapNames = [...]string{"none", "tcp", "udp", "udp-port", "vxlan-gpe", "geneve", "gre"}

func (e Encap) String() string {
	if int(e) < len(encapNames) {
		return encapNames[e]
	}
	return "unknown"
}

// Inner describes the data packet a report carries (or a raw INT-MD packet): enough to
// re-encode it, and the facts a user may filter on.
type Inner struct {
	Link     LinkType  // where the inner packet starts (LinkNone: no inner packet)
	NVLANs   uint8     // 802.1Q / QinQ tags seen
	VLANs    [2]uint16 // their TCI values, outermost first
	DSCP     uint8     // the DSCP of the IP header that carried INT
	IPOptLen uint16    // bytes of IPv4 options / IPv6 extension headers skipped
	TCPOpts  uint8     // bytes of TCP options
	Encap    Encap
	// EncapArg qualifies Encap: the v2.x TCP/UDP shim's NPT; for VXLAN-GPE the next-protocol
	// codepoint that announced INT; for Geneve the option class; for GRE the header's words.
	EncapArg uint16
	Tunnel   FlowKey // outer (tunnel) endpoints when Encap is GPE, Geneve or GRE
	// Nested is where the packet inside a GPE/Geneve/GRE tunnel starts (LinkNone when the
	// report was truncated before it); Flow is that packet's 5-tuple when it has one.
	Nested  LinkType
	Trailer uint16 // bytes after the last parsed header (payload), kept to reproduce length
}

// INTHeader holds the embedded INT metadata header as sent.
type INTHeader struct {
	Version   INTVersion
	MX        bool   // v2.1 INT-MX (shim type 3): instructions only, no stack
	Flags     uint8  // v0.5/v1.0: Rep(2)|C|E|M; v2.x: D|E|M, in the low bits as on the wire
	Bitmap    uint16 // instruction bitmap
	HopML     uint8  // v1.0+: words per hop
	RemHops   uint8  // v1.0+: remaining hop count
	MaxHops   uint8  // v0.5: max hop count
	DSID      uint16 // v2.x
	DSInstr   uint16
	DSFlags   uint16
	SourceDS  uint8  // v2.x: words of source-only domain-specific metadata (skipped)
	ShimType  uint8  // 1 hop-by-hop / MD, 3 MX
	ShimExtra uint8  // v1.0 shim: saved DSCP; v0.5 tail DSCP
	OrigPort  uint16 // v0.5 tail: original destination port; v2.x NPT 1: original UDP port
	OrigProto uint8  // v0.5 tail / v2.x NPT 2: original IP protocol
	Erratum   bool   // v1.0 shim Length one word larger than the stack (spec example erratum)
	// SourceSeq is a sequence number the INT source put in the packet (HasSourceSeq): Intel
	// host-int's per-flow number after the stack (shim type 3), GEANT's per-source number
	// in the v1.0 header's last 16 bits.
	SourceSeq    uint32
	HasSourceSeq bool
}

// KernelDone says what the XDP program has done with a report (package xdp's marks).
type KernelDone uint8

const (
	KernelCached   KernelDone = 1 << iota // in the kernel's flow cache (flowcache.kernel)
	KernelDetected                        // detected by the kernel (detect.kernel)
)

// Field is a bit set naming the per-hop fields present in a Hop.
type Field uint16

const (
	FNodeID Field = 1 << iota
	FIngressPort
	FEgressPort
	FHopLatency
	FQueueID
	FQueueOccupancy
	FIngressTS
	FEgressTS
	FL2IngressPort
	FL2EgressPort
	FTxUtil
	FBufferID
	FBufferOccupancy
	FQueueCongestion
)

// FieldNames are the JSON names of the per-hop fields in bit order.
var FieldNames = [...]string{
	"node_id", "ingress_port", "egress_port", "hop_latency", "queue_id", "queue_occupancy",
	"ingress_ts", "egress_ts", "l2_ingress_port", "l2_egress_port", "tx_util", "buffer_id",
	"buffer_occupancy", "queue_congestion",
}

// Hop is one node's metadata. A field counts only when its bit is in Fields: values that
// the wire marked unavailable (all ones) are absent.
//
// QueueID is 16 bits wide: the specifications' queue id is 8 bits, but INTCollector's
// layout (quirks.intcollector) gives 16, and a narrower field would merge a switch's queues.
// Fields, QueueID and BufferID share the first word, so a Hop stays 64 bytes.
type Hop struct {
	Fields          Field
	QueueID         uint16
	BufferID        uint8
	NodeID          uint32
	IngressPort     uint32
	EgressPort      uint32
	HopLatency      uint32
	QueueOccupancy  uint32
	QueueCongestion uint32
	TxUtil          uint32
	BufferOccupancy uint32
	L2IngressPort   uint32
	L2EgressPort    uint32
	IngressTS       uint64
	EgressTS        uint64
}

// Value returns field f's value as a uint64 and whether it is present.
func (h *Hop) Value(f Field) (uint64, bool) {
	if h.Fields&f == 0 {
		return 0, false
	}
	switch f {
	case FNodeID:
		return uint64(h.NodeID), true
	case FIngressPort:
		return uint64(h.IngressPort), true
	case FEgressPort:
		return uint64(h.EgressPort), true
	case FHopLatency:
		return uint64(h.HopLatency), true
	case FQueueID:
		return uint64(h.QueueID), true
	case FQueueOccupancy:
		return uint64(h.QueueOccupancy), true
	case FIngressTS:
		return h.IngressTS, true
	case FEgressTS:
		return h.EgressTS, true
	case FL2IngressPort:
		return uint64(h.L2IngressPort), true
	case FL2EgressPort:
		return uint64(h.L2EgressPort), true
	case FTxUtil:
		return uint64(h.TxUtil), true
	case FBufferID:
		return uint64(h.BufferID), true
	case FBufferOccupancy:
		return uint64(h.BufferOccupancy), true
	case FQueueCongestion:
		return uint64(h.QueueCongestion), true
	}
	return 0, false
}

// DTAOp is a DTA primitive, numbered as its opcode on the wire.
type DTAOp uint8

const (
	DTAKeyWrite     DTAOp = 0x01
	DTAAppend       DTAOp = 0x02
	DTAKeyIncrement DTAOp = 0x03
	DTAPostcard     DTAOp = 0x04
)

// String returns the JSON name of the primitive.
func (o DTAOp) String() string {
	switch o {
	case DTAKeyWrite:
		return "key-write"
	case DTAAppend:
		return "append"
	case DTAKeyIncrement:
		return "key-increment"
	case DTAPostcard:
		return "postcard"
	}
	return "unknown"
}

// DTA is one DTA primitive report. Key and Data are big-endian byte strings of KeyLen and
// DataLen bytes (bytes past them are zero).
type DTA struct {
	Op         DTAOp
	HeaderLen  uint8 // 2 (default translator build) or 3 (NACK-tracking layout)
	Seq        uint8 // 3-byte layout only
	Immediate  bool
	Retransmit bool // 3-byte layout only
	Redundancy uint8
	KeyLen     uint8
	DataLen    uint8
	Hop        uint8 // Postcarding: 1-based hop number
	ListID     uint32
	Counter    uint64 // Key-Increment
	Key        [MaxDTAKey]byte
	Data       [MaxDTAData]byte
}

// reset clears d; Key and Data are cleared only as far as they were used, so that their
// unused tails stay zero (Equal compares whole arrays) without paying for 96 bytes each time.
func (d *DTA) reset() {
	clear(d.Key[:d.KeyLen])
	clear(d.Data[:d.DataLen])
	d.Op, d.HeaderLen, d.Seq, d.Immediate, d.Retransmit = 0, 0, 0, false, false
	d.Redundancy, d.KeyLen, d.DataLen, d.Hop, d.ListID, d.Counter = 0, 0, 0, 0, 0, 0
}

// KeyBytes returns the key's meaningful bytes.
func (d *DTA) KeyBytes() []byte { return d.Key[:d.KeyLen] }

// DataBytes returns the data's meaningful bytes.
func (d *DTA) DataBytes() []byte { return d.Data[:d.DataLen] }

// LabelItem is one 32-byte INT-label data item (INT-label §2; prototype layout).
type LabelItem struct {
	SwitchID     uint8
	IngressPort  uint8
	EgressPort   uint8
	IngressTS    uint64 // 48 bits
	EgressTS     uint64 // 48 bits: the label time
	EnqTS        uint32
	EnqQDepth    uint32 // 24 bits
	DeqTimedelta uint32 // queueing latency
	DeqQDepth    uint32 // 24 bits
}

// FlowHash is intake's one flow hash, fixed (seeded, not per process, so that another
// process can compute where a flow lives): a 64-bit multiply-mix over the 5-tuple's words.
// The flow cache takes its row from the low bits and its tag from the high half; the event
// detector its shard from bits 40 and up and its index from the low 32 bits.
func FlowHash(k *FlowKey) uint64 {
	const (
		s0 = 0xa0761d6478bd642f
		s1 = 0xe7037ed1a0b428db
		s2 = 0x8ebc6af09c88c6e3
		s3 = 0x589965cc75374cc3
	)
	le := binary.LittleEndian
	a := le.Uint64(k.Src[0:8]) ^ le.Uint64(k.Dst[0:8])<<1
	b := le.Uint64(k.Src[8:16])
	c := le.Uint64(k.Dst[8:16])
	d := uint64(k.SrcPort) | uint64(k.DstPort)<<16 | uint64(k.Proto)<<32
	if k.IPv6 {
		d |= 1 << 40
	}
	h := mulMix(a^s0, b^s1)
	h = mulMix(h^c, d^s2)
	return mulMix(h^s3, h>>29^s1)
}

func mulMix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
