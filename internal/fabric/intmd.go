package fabric

import (
	"net/netip"

	"github.com/intake-int/intake/telemetry"
)

// INT-MD and INT-XD in the fabric. An INT-MD packet gets its instructions at its first
// switch (the source), every switch pushes its hop (transit), and the last switch (the sink)
// strips the stack and sends a Telemetry Report v2.0 carrying the inner packet's headers and
// the stack, newest first. A postcard packet makes every switch it crosses send a TR v2.0
// individual report (INT-XD: no metadata in the packet) whose RepMdBits carry the reporting
// hop's own metadata, the inner packet following without INT headers. Both use the same
// metadata: node id (the group header's node id in a postcard), level-1 ports, hop latency,
// queue id and occupancy, ingress and egress timestamps, level-2 ports, tx utilization —
// the INT instruction bitmap 0xff00, and RepMdBits 0x7f00 (bit 0 is reserved in TR v2.0:
// the node id is the group header's).

const mdBitmap, mdHopML, xdMdBits = 0xff00, 11, 0x7f00

// seqMask is TR v2.0's 22-bit sequence number.
const seqMask = 1<<22 - 1

func (f *Fabric) hostAddr(h int32) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(h >> 8), byte(h), 2})
}

func (f *Fabric) hop(p *packet, e *egress, sw uint8, ct int64, depth uint32) telemetry.Hop {
	return telemetry.Hop{
		Fields: 0x07ff, NodeID: uint32(sw), IngressPort: uint32(p.inPort), EgressPort: uint32(e.port),
		HopLatency: uint32(ct - p.arrive), QueueID: 0, QueueOccupancy: depth,
		IngressTS: uint64(p.arrive), EgressTS: uint64(ct),
		L2IngressPort: uint32(p.inPort), L2EgressPort: uint32(e.port),
		TxUtil: uint32(min(int64(e.busy-ct)*100/max(f.t, 1), 100)),
	}
}

// mdHop pushes this switch's hop onto packet i's INT-MD stack.
func (f *Fabric) mdHop(i int32, e *egress, sw uint8, ct int64, depth uint32) {
	p := &f.pkts[i]
	n := int(p.hops) - 1
	if n < 0 || n >= maxItems {
		return
	}
	f.mdHops[i][n] = f.hop(p, e, sw, ct, depth)
}

// report starts switch sw's next report (an INT-MD sink report or a postcard) about packet
// p. Each switch numbers its own reports 0, 1, 2, ... (TR v2.0: per node id and hw_id), so
// that a collector counting gaps per switch sees none where none were lost.
func (f *Fabric) report(p *packet, sw uint8) *telemetry.Report {
	r := &f.rep
	r.Reset()
	r.Format = telemetry.FormatTR20
	r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
	r.NodeID, r.Seq, r.HWID = uint32(sw), f.seq[sw]&seqMask, 0
	f.seq[sw]++
	r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	r.Flags = telemetry.FlagFlow
	r.Flow.SetAddrs(f.hostAddr(p.src), f.hostAddr(p.dst))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = p.sport, 5001, 17
	r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, Encap: telemetry.EncapUDP, Trailer: 2}
	r.INT = telemetry.INTHeader{Version: telemetry.INT2x, ShimType: 1, Bitmap: mdBitmap, HopML: mdHopML}
	return r
}

// mdSink sends the INT-MD sink's report for packet i (the sink's hop already pushed).
func (f *Fabric) mdSink(i int32, sw uint8, _ int64) {
	p := &f.pkts[i]
	n := min(int(p.hops), maxItems)
	r := f.report(p, sw)
	r.INT.RemHops = uint8(max(f.maxHop+3-n, 0))
	for k := n - 1; k >= 0; k-- {
		*r.AddHop() = f.mdHops[i][k]
	}
	f.stats.Reports++
	if f.sink != nil {
		f.sink.Report(f.now, r)
	}
}

// postcard sends switch sw's postcard for packet i: its hop as the report's RepMdBits
// metadata (the reporter hop), the packet's headers as the inner packet.
func (f *Fabric) postcard(i int32, e *egress, sw uint8, ct int64, depth uint32) {
	p := &f.pkts[i]
	r := f.report(p, sw)
	r.INT = telemetry.INTHeader{}
	r.Inner.Encap = telemetry.EncapNone
	r.TR.MDBits = xdMdBits
	r.ReporterHop = true
	*r.AddHop() = f.hop(p, e, sw, ct, depth)
	if !e.toHost {
		r.Flags |= telemetry.FlagIntermediate
	}
	f.stats.Postcards++
	if f.sink != nil {
		f.sink.Report(f.now, r)
	}
}
