package gen

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// The network model. Flow i has a 5-tuple derived from i and a path of Hops distinct
// switches drawn from the seed. A report is emitted by a reporter: the flow's sink (the
// path's last switch) in md mode, for INT-label exports and for DTA Key-Write, Key-Increment
// and Append; any hop of the path in xd mode and for DTA postcards. Reporters send on
// streams, one per (node, hw_id), each with its own sequence number counting datagrams,
// as a switch's pipes do; hw_id is the pipe of the reporting hop's egress port.

const (
	t0        = 1_700_000_000_000_000_000 // the virtual clock's start, Unix ns
	linkDelay = 500                       // ns between one hop's egress and the next's ingress
	protoTCP  = 6
	protoUDP  = 17
	dportUDP  = 5201 // no encapsulation claims it (VXLAN-GPE 4790, Geneve 6081)
	dportTCP  = 443
	dscpINT   = 0x17 // the INT DSCP of the spec's examples, matched by wire.DefaultConfig
	mask48    = 1<<48 - 1
)

// topology is the immutable part of a generator, shared by its builders.
type topology struct {
	cfg     Config
	version telemetry.INTVersion
	bitmap  uint16
	format  telemetry.Format
	enc     *wire.Encoder

	keys  []telemetry.FlowKey
	nodes []uint32 // flow i's path is nodes[i*Hops : (i+1)*Hops], in travel order
	in    []uint16 // ingress port per path position
	out   []uint16 // egress port per path position

	// In the network model and with Vary < 1, values are state of the network, not of a
	// flow: latency and occupancy belong to a queue (node, the flow's queue id: INT's queue
	// id names a switch's queue, as INTCollector keys it), utilization to an egress port
	// (node, egress port). queueOf and portOf number them per path position.
	queueOf, portOf []int32
	nQueues, nPorts int
	net             *netModel // the network model's fixed part; nil in the draw model

	everyHop bool     // every hop reports (xd, postcards), not only the sink
	stream   []int32  // stream of each path position that reports
	streams  []stream // by index
	batch    int      // reports per datagram after the MTU cut
	seqMask  uint32   // sequence number width; 0: the format has none
	hopML    uint8    // INT v1.0/v2.x words per hop
	maxLen   int      // bound on a datagram's size

	// With Parts > 1: the reporting positions member Part owns, all and by stream.
	ownedPos []uint32
	owned    [][]uint32
}

// stream is one (node, hw_id) reporter and the path positions that report on it.
type stream struct {
	node    uint32
	hw      uint8
	members []uint32 // path positions (flow*Hops + hop)
}

var formatOf = map[string]telemetry.Format{
	"tr0.5": telemetry.FormatTR05, "tr1.0": telemetry.FormatTR10, "tr2.0": telemetry.FormatTR20,
	"dta": telemetry.FormatDTA, "int-label": telemetry.FormatLabel,
}

func newTopology(cfg Config) (*topology, error) {
	enc, err := wire.NewEncoder(cfg.WireConfig())
	if err != nil {
		return nil, err
	}
	t := &topology{cfg: cfg, version: cfg.intVersion(), bitmap: cfg.bitmap(), format: formatOf[cfg.Format], enc: enc}
	t.everyHop = cfg.isReport() && cfg.Mode == "xd" || cfg.Format == "dta" && cfg.DTA.Op == "postcard"
	switch {
	case cfg.Format == "tr0.5" || cfg.Format == "tr1.0":
		t.seqMask = math.MaxUint32
	case cfg.Format == "tr2.0":
		t.seqMask = 1<<22 - 1
	case cfg.Format == "dta" && cfg.DTA.HeaderLen == 3:
		t.seqMask = 0xff
	}
	t.hopML = uint8(hopBytes(t.version, t.bitmap) / 4)

	H, S := cfg.Hops, cfg.Switches
	t.keys = make([]telemetry.FlowKey, cfg.Flows)
	t.nodes = make([]uint32, cfg.Flows*H)
	t.in = make([]uint16, cfg.Flows*H)
	t.out = make([]uint16, cfg.Flows*H)
	perm := make([]uint32, S)
	for f := range t.keys {
		t.keys[f] = flowKey(f)
		// A path is a partial Fisher-Yates shuffle of the switches, seeded per flow so that
		// a flow's path does not depend on how many flows come before it.
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(f)|1<<63))
		for i := range perm {
			perm[i] = uint32(i + 1)
		}
		path := t.nodes[f*H : (f+1)*H]
		for h := range path {
			k := h + rng.IntN(S-h)
			perm[h], perm[k] = perm[k], perm[h]
			path[h] = perm[h]
		}
		// Ports follow the links: a switch reaches switch b on port 1+(b-1)%32; hosts
		// sit on ports 33-48.
		for h := range path {
			p := f*H + h
			if h == 0 {
				t.in[p] = uint16(33 + (f/16)%16)
			} else {
				t.in[p] = uint16(1 + (path[h-1]-1)%32)
			}
			if h == H-1 {
				t.out[p] = uint16(33 + f%16)
			} else {
				t.out[p] = uint16(1 + (path[h+1]-1)%32)
			}
		}
	}

	if cfg.Model == ModelNetwork || cfg.Vary < 1 {
		t.queueOf, t.portOf = make([]int32, cfg.Flows*H), make([]int32, cfg.Flows*H)
		queues, ports := map[uint64]int32{}, map[uint64]int32{}
		index := func(m map[uint64]int32, k uint64) int32 {
			i, ok := m[k]
			if !ok {
				i = int32(len(m))
				m[k] = i
			}
			return i
		}
		queue := func(node uint32, f int) int32 { return index(queues, uint64(node)<<16|uint64(f%8)) } // the flow's queue id (builder.qid)
		port := func(node uint32, out uint16) int32 { return index(ports, uint64(node)<<16|uint64(out)) }
		for p := range t.queueOf {
			t.queueOf[p], t.portOf[p] = queue(t.nodes[p], p/H), port(t.nodes[p], t.out[p])
		}
		if cfg.Model == ModelNetwork {
			t.net = newNetModel(t, queue, port)
		}
		t.nQueues, t.nPorts = len(queues), len(ports)
		if t.net != nil {
			queueNode := make([]uint32, t.nQueues)
			for k, q := range queues {
				queueNode[q] = uint32(k >> 16)
			}
			t.net.baseValues(cfg.Seed, queueNode, t.nPorts, H)
		}
	}

	t.stream = make([]int32, cfg.Flows*H)
	index := map[uint64]int32{}
	for p := range t.stream {
		t.stream[p] = -1
		if !t.everyHop && p%H != H-1 {
			continue
		}
		node, hw := t.nodes[p], uint8((t.out[p]-1)/8%4)
		k := uint64(node)<<8 | uint64(hw)
		s, ok := index[k]
		if !ok {
			s = int32(len(t.streams))
			index[k] = s
			t.streams = append(t.streams, stream{node: node, hw: hw})
		}
		t.stream[p] = s
		t.streams[s].members = append(t.streams[s].members, uint32(p))
	}
	if err := t.cutBatch(); err != nil {
		return nil, err
	}
	if cfg.Parts > 1 {
		if err := t.partition(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// partition keeps the reporting positions whose reports member Part owns: the report of a
// position has the same key whatever values it draws (its flow, DTA key or list id, or its
// switch), so ownership is computed once from a scratch report.
func (t *topology) partition() error {
	var b builder
	b.init(t, 0)
	var r telemetry.Report
	var kb partition.KeyBuf
	t.owned = make([][]uint32, len(t.streams))
	for s := range t.streams {
		for _, p := range t.streams[s].members {
			b.report(&r, p, t.streams[s].hw, 0)
			if partition.Owner(partition.ReportKey(&kb, &r), t.cfg.Parts) == t.cfg.Part {
				t.ownedPos = append(t.ownedPos, p)
				t.owned[s] = append(t.owned[s], p)
			}
		}
	}
	if len(t.ownedPos) == 0 {
		return fmt.Errorf("collectors: member %d of %d owns none of the stream's %d flows (more flows, fewer collectors)", t.cfg.Part, t.cfg.Parts, t.cfg.Flows)
	}
	return nil
}

// flowKey derives flow f's 5-tuple: 10.0.0.0/8 sources and 172.16.0.0/12 destinations
// numbered from f (so a 4-byte DTA key, the source address, is unique per flow), UDP to
// port 5201 for even flows and TCP to 443 for odd ones.
func flowKey(f int) telemetry.FlowKey {
	var k telemetry.FlowKey
	n := uint32(f + 1)
	k.SetIPv4([]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}, []byte{172, 16 + byte(n>>20)&15, byte(n >> 8), byte(n)})
	k.SrcPort = uint16(1024 + f%60000)
	k.Proto, k.DstPort = protoUDP, dportUDP
	if f%2 == 1 {
		k.Proto, k.DstPort = protoTCP, dportTCP
	}
	return k
}

// hopBytes is the size of one INT hop block for the bitmap (wire's per-version item sizes).
func hopBytes(v telemetry.INTVersion, bitmap uint16) int {
	n := 0
	for bit := 0; bit < 16; bit++ {
		if bitmap&(0x8000>>bit) == 0 {
			continue
		}
		switch {
		case v == telemetry.INT2x && (bit == 4 || bit == 5 || bit == 6):
			n += 8
		case v == telemetry.INT10 && bit == 6:
			n += 8
		default:
			n += 4
		}
	}
	return n
}

// cutBatch sets the reports per datagram (Batch, cut so that a datagram of the largest
// reports stays within MTU) and the largest datagram's size. Reports of one configuration
// differ in size only by their flow's L4 header, so trial encodings of a UDP and a TCP
// flow's reports bound them all.
func (t *topology) cutBatch() error {
	var b builder
	b.init(t, 0)
	base, per, single := 0, 0, 0
	canBatch := t.cfg.Batch > 1
	for f := 0; f < min(2, t.cfg.Flows); f++ {
		p := uint32(f*t.cfg.Hops + t.cfg.Hops - 1)
		rs := []telemetry.Report{{}, {}}
		b.report(&rs[0], p, 0, 0)
		b.report(&rs[1], p, 0, 0)
		one, err := t.enc.AppendBatch(nil, rs[:1])
		if err != nil {
			return err
		}
		single = max(single, len(one))
		if !canBatch {
			continue
		}
		if t.format == telemetry.FormatTR20 && len(one)-8-4 > 254*4 {
			canBatch = false // a report of 255 words or more must end its packet
			continue
		}
		two, err := t.enc.AppendBatch(nil, rs)
		if err != nil {
			return err
		}
		per = max(per, len(two)-len(one))
		base = max(base, len(one)-(len(two)-len(one)))
	}
	t.batch, t.maxLen = 1, single
	if canBatch {
		t.batch = max(1, min(t.cfg.Batch, (t.cfg.MTU-base)/per))
		t.maxLen = max(single, base+t.batch*per)
	}
	return nil
}

// builder draws reports and encodes datagrams, one after the other. Two builders of one
// topology produce the same stream.
type builder struct {
	t       *topology
	rng     *rand.Rand
	seq     []uint32 // the next sequence number per stream
	n       uint64   // datagrams built
	reports uint64   // reports built

	rs    []telemetry.Report
	pos   []uint32 // path position of each report in rs
	lat   [telemetry.MaxHops]uint32
	occ   [telemetry.MaxHops]uint32
	util  [telemetry.MaxHops]uint32
	buf   [telemetry.MaxHops]uint32 // buffer occupancy (INT v2.x)
	ingTS [telemetry.MaxHops]uint64

	// The path of the report being built, hop by hop: switch, ports, and the indexes of
	// its queue and egress port (with queueOf). The network model's path changes make it
	// differ from the topology's.
	node   [telemetry.MaxHops]uint32
	in     [telemetry.MaxHops]uint16
	out    [telemetry.MaxHops]uint16
	qi, pi [telemetry.MaxHops]int32

	// Network model and Vary < 1: every egress queue's state, every port's utilization.
	queues []queueState
	ports  []portState
	sched  schedule // the network model's bursts, build-ups and path changes
	ev     eventState
}

type queueState struct {
	drawn    bool
	lat, occ uint32
	anomaly  anomaly // the network model's burst or build-up of the queue
}

type portState struct {
	drawn bool
	util  uint32
}

func (b *builder) init(t *topology, stream uint64) {
	b.t = t
	b.rng = rand.New(rand.NewPCG(t.cfg.Seed, stream))
	b.seq = make([]uint32, len(t.streams))
	b.rs = make([]telemetry.Report, t.batch)
	b.pos = make([]uint32, t.batch)
	b.n, b.reports = 0, 0
	b.queues, b.ports = make([]queueState, t.nQueues), make([]portState, t.nPorts)
	if t.net != nil {
		b.sched.init(t)
	}
	b.ev.init(t)
}

// dgram describes one built datagram.
type dgram struct {
	stream int32
	seq    uint32
	n      int // reports
}

// next encodes the next datagram, appending it to dst. The reports it carries stay in
// b.rs[:d.n] (and their path positions in b.pos) until the next call.
func (b *builder) next(dst []byte) ([]byte, dgram, error) {
	t := b.t
	perFlow := 1
	if t.everyHop {
		perFlow = t.cfg.Hops
	}
	// The first report picks the reporter uniformly over (flow, reporting hop); the
	// others of a batch come from flows that report on the same stream.
	var p uint32
	var members []uint32
	if t.ownedPos != nil {
		p = t.ownedPos[b.rng.IntN(len(t.ownedPos))]
		members = t.owned[t.stream[p]]
	} else {
		k := b.rng.IntN(t.cfg.Flows * perFlow)
		p = uint32(k/perFlow*t.cfg.Hops + t.cfg.Hops - 1)
		if t.everyHop {
			p = uint32(k)
		}
		p = b.ev.pick(t, b.rng, b.n, p)
		members = t.streams[t.stream[p]].members
	}
	s := t.stream[p]
	st := &t.streams[s]
	d := dgram{stream: s, seq: b.seq[s] & t.seqMask, n: t.batch}
	b.seq[s]++
	for i := 0; i < d.n; i++ {
		if i > 0 {
			p = members[b.rng.IntN(len(members))]
		}
		b.pos[i] = p
		b.report(&b.rs[i], p, st.hw, d.seq)
	}
	b.n++
	dst, err := t.enc.AppendBatch(dst, b.rs[:d.n])
	return dst, d, err
}

func (b *builder) draw(d Dist) uint32 {
	var v float64
	switch d.Kind {
	case DistConst:
		v = d.A
	case DistUniform:
		v = d.A + b.rng.Float64()*(d.B-d.A)
	case DistExp:
		v = b.rng.ExpFloat64() * d.A
	}
	if v >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v + 0.5)
}

// notOnes keeps a value of the given width below all ones, which the wire reserves for
// "unavailable".
func notOnes(v uint64, width uint) uint64 {
	max := uint64(1)<<width - 1
	if width == 64 {
		max = math.MaxUint64
	}
	if v&max == max {
		return max - 1
	}
	return v & max
}

// report builds the report of path position p (flow p/Hops, hop p%Hops) into r. The packet
// it describes enters the path at the builder's virtual clock, and every hop's values are
// drawn, so that timestamps along the path are consistent whichever hop reports.
func (b *builder) report(r *telemetry.Report, p uint32, hw uint8, seq uint32) {
	t := b.t
	H := t.cfg.Hops
	f := int(p) / H
	hop := int(p) % H
	rel := int64(b.reports) * int64(t.cfg.Interval) // generated time since the stream's start
	ts := uint64(t0 + rel)
	b.reports++
	if t.net != nil {
		b.sched.advance(b, rel)
	}
	b.route(f, rel)
	buffer := t.version == telemetry.INT2x && t.bitmap&(0x8000>>8) != 0
	for j := 0; j < H; j++ {
		switch {
		case t.net != nil:
			b.netValues(j, rel, buffer)
		case t.queueOf == nil:
			b.lat[j], b.occ[j], b.util[j] = b.draw(t.cfg.Latency), b.draw(t.cfg.Queue), b.draw(t.cfg.Util)
			b.buf[j] = b.occ[j]
		default:
			q, pt := &b.queues[b.qi[j]], &b.ports[b.pi[j]]
			if !q.drawn || b.rng.Float64() < t.cfg.Vary {
				*q = queueState{drawn: true, lat: b.draw(t.cfg.Latency), occ: b.draw(t.cfg.Queue)}
			}
			if !pt.drawn || b.rng.Float64() < t.cfg.Vary {
				*pt = portState{true, b.draw(t.cfg.Util)}
			}
			b.lat[j], b.occ[j], b.util[j], b.buf[j] = q.lat, q.occ, b.ev.util(b.pi[j], pt.util), q.occ
		}
		b.ingTS[j] = ts
		ts += uint64(b.lat[j]) + linkDelay
	}

	*r = telemetry.Report{}
	r.Format = t.format
	node := b.node[hop]
	switch t.format {
	case telemetry.FormatDTA:
		b.dta(r, f, hop, seq)
		return
	case telemetry.FormatLabel:
		r.NLabels = uint8(H)
		for j := H - 1; j >= 0; j-- {
			it := &r.Labels[H-1-j]
			it.SwitchID, it.IngressPort, it.EgressPort = uint8(b.node[j]), uint8(b.in[j]), uint8(b.out[j])
			it.IngressTS = b.ingTS[j] & mask48
			it.EgressTS = (b.ingTS[j] + uint64(b.lat[j])) & mask48
			it.EnqTS = uint32(b.ingTS[j])
			it.EnqQDepth = min(b.occ[j], 1<<24-1)
			it.DeqTimedelta = b.lat[j]
			it.DeqQDepth = min(b.occ[j], 1<<24-1)
		}
		return
	}

	r.Flags = telemetry.FlagFlow
	r.HWID, r.Seq = hw, seq
	r.Flow = t.keys[f]
	r.Has = telemetry.HasSeq | telemetry.HasFlow
	in := &r.Inner
	in.Link = telemetry.LinkEthernet
	in.Trailer = uint16(t.cfg.Payload)
	if t.format == telemetry.FormatTR20 {
		// TR v2.0 lengths count words; the pad comes back from a decoder as payload. All
		// headers after the 14-byte Ethernet header are whole words.
		in.Trailer += uint16((4 - (14+t.cfg.Payload)%4) % 4)
	}
	switch t.format {
	case telemetry.FormatTR05:
		r.Has |= telemetry.HasIngressTS
	case telemetry.FormatTR10:
		r.TR.Ver = 1
		r.Has |= telemetry.HasIngressTS | telemetry.HasNodeID
		r.NodeID = node
	case telemetry.FormatTR20:
		r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
		r.Has |= telemetry.HasNodeID
		r.NodeID = node
	}
	if t.format != telemetry.FormatTR20 { // v2.0 carries timestamps only as hop metadata
		r.IngressTS = notOnes(b.ingTS[hop], 32)
	}

	if t.cfg.Mode == "md" {
		b.embedINT(r, f)
		return
	}
	// xd: the reporting hop's own metadata in the report header; the inner packet is the
	// flow's packet without INT.
	in.DSCP = 0
	switch t.format {
	case telemetry.FormatTR05:
		r.TR.NProto = 2
		r.NodeID = node
		r.Has |= telemetry.HasNodeID
		r.ReporterHop = true
		h := r.AddHop()
		eg := notOnes(b.ingTS[hop]+uint64(b.lat[hop]), 32)
		*h = telemetry.Hop{
			Fields: telemetry.FNodeID | telemetry.FIngressTS | telemetry.FIngressPort | telemetry.FEgressPort |
				telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FEgressTS | telemetry.FHopLatency,
			NodeID: node, IngressTS: r.IngressTS, IngressPort: uint32(b.in[hop]), EgressPort: uint32(b.out[hop]),
			QueueID: b.qid(f), QueueOccupancy: min(b.occ[hop], 1<<24-2), EgressTS: eg,
			HopLatency: uint32(eg) - uint32(r.IngressTS),
		}
	case telemetry.FormatTR10:
		// RepMdBits: ports, hop latency, queue, egress timestamp, (drop), tx utilization:
		// the INT bits 1, 2, 3, 5 and 7. The node id and ingress timestamp are always sent.
		var md uint16
		for i, bit := range [...]int{1, 2, 3, 5, -1, 7} {
			if bit >= 0 && t.bitmap&(0x8000>>bit) != 0 {
				md |= 0x20 >> i
			}
		}
		r.TR.MDBits = md
		if md == 0 {
			return
		}
		r.ReporterHop = true
		h := r.AddHop()
		h.NodeID, h.IngressTS, h.Fields = node, r.IngressTS, telemetry.FNodeID|telemetry.FIngressTS
		b.hopValues(h, f, hop, telemetry.INT10, uint16(md&0x20)<<9|uint16(md&0x10)<<9|uint16(md&0x08)<<9|
			uint16(md&0x04)<<8|uint16(md&0x01)<<8)
	case telemetry.FormatTR20:
		r.TR.MDBits = t.bitmap & 0xff80
		if r.TR.MDBits&0x7f80 == 0 {
			return
		}
		r.ReporterHop = true
		b.hopValues(r.AddHop(), f, hop, telemetry.INT2x, r.TR.MDBits|0x8000)
	}
}

func (b *builder) qid(f int) uint16 { return uint16(f % 8) } // a flow's traffic class

// hopValues fills the fields of INT bitmap bits for hop j of flow f.
func (b *builder) hopValues(h *telemetry.Hop, f, j int, v telemetry.INTVersion, bitmap uint16) {
	tsBits := uint(32)
	if v == telemetry.INT2x {
		tsBits = 64
	}
	occ := min(b.occ[j], 1<<24-2)
	for bit := 0; bit < 9; bit++ {
		if bitmap&(0x8000>>bit) == 0 {
			continue
		}
		switch bit {
		case 0:
			h.NodeID, h.Fields = b.node[j], h.Fields|telemetry.FNodeID
		case 1:
			h.IngressPort, h.EgressPort = uint32(b.in[j]), uint32(b.out[j])
			h.Fields |= telemetry.FIngressPort | telemetry.FEgressPort
		case 2:
			h.HopLatency, h.Fields = uint32(notOnes(uint64(b.lat[j]), 32)), h.Fields|telemetry.FHopLatency
		case 3:
			h.QueueID, h.QueueOccupancy = b.qid(f), occ
			h.Fields |= telemetry.FQueueID | telemetry.FQueueOccupancy
		case 4:
			h.IngressTS, h.Fields = notOnes(b.ingTS[j], tsBits), h.Fields|telemetry.FIngressTS
		case 5:
			h.EgressTS, h.Fields = notOnes(b.ingTS[j]+uint64(b.lat[j]), tsBits), h.Fields|telemetry.FEgressTS
		case 6:
			if v == telemetry.INT05 {
				h.QueueID, h.QueueCongestion = b.qid(f), occ
				h.Fields |= telemetry.FQueueID | telemetry.FQueueCongestion
			} else {
				h.L2IngressPort, h.L2EgressPort = uint32(b.in[j]), uint32(b.out[j])
				h.Fields |= telemetry.FL2IngressPort | telemetry.FL2EgressPort
			}
		case 7:
			h.TxUtil, h.Fields = uint32(notOnes(uint64(b.util[j]), 32)), h.Fields|telemetry.FTxUtil
		case 8:
			if v == telemetry.INT2x {
				h.BufferID, h.BufferOccupancy = 0, min(b.buf[j], 1<<24-2)
				h.Fields |= telemetry.FBufferID | telemetry.FBufferOccupancy
			}
		}
	}
}

// embedINT fills the inner packet's INT header and the stack of every hop, newest first:
// the sink has pushed its own metadata like a transit hop.
func (b *builder) embedINT(r *telemetry.Report, f int) {
	t := b.t
	H := t.cfg.Hops
	in := &r.Inner
	in.DSCP = dscpINT
	in.Encap = telemetry.EncapUDP
	if r.Flow.Proto == protoTCP {
		in.Encap = telemetry.EncapTCP
	}
	x := &r.INT
	x.Version, x.ShimType, x.Bitmap = t.version, 1, t.bitmap
	switch t.version {
	case telemetry.INT05:
		x.MaxHops = uint8(min(2*H, 255))
		x.OrigProto, x.OrigPort = r.Flow.Proto, r.Flow.DstPort
	default:
		x.HopML = t.hopML
		x.RemHops = uint8(min(2*H, 255) - H) // the source allowed twice the path length
	}
	for j := H - 1; j >= 0; j-- {
		b.hopValues(r.AddHop(), f, j, t.version, t.bitmap)
	}
}

// dta fills a DTA primitive for hop (the sink, or the postcarding hop) of flow f. Keys are
// the flow's source address (KeyLen < 4: its low bytes) or its 5-tuple, zero-padded.
func (b *builder) dta(r *telemetry.Report, f, hop int, seq uint32) {
	t := b.t
	c := &t.cfg.DTA
	d := &r.DTA
	d.HeaderLen = uint8(c.HeaderLen)
	if c.HeaderLen == 3 {
		d.Seq = uint8(seq)
	}
	k := &t.keys[f]
	var tuple [13]byte
	copy(tuple[:4], k.Src[12:])
	copy(tuple[4:8], k.Dst[12:])
	tuple[8], tuple[9], tuple[10], tuple[11], tuple[12] = byte(k.SrcPort>>8), byte(k.SrcPort), byte(k.DstPort>>8), byte(k.DstPort), k.Proto
	key := func() {
		d.KeyLen = uint8(c.KeyLen)
		if c.KeyLen < 4 {
			copy(d.Key[:], tuple[4-c.KeyLen:4])
		} else {
			copy(d.Key[:c.KeyLen], tuple[:])
		}
	}
	data := func(v uint64) {
		d.DataLen = uint8(c.DataLen)
		for i := c.DataLen - 1; i >= 0 && v != 0; i-- {
			d.Data[i] = byte(v)
			v >>= 8
		}
	}
	var pathLat uint64
	for j := 0; j < t.cfg.Hops; j++ {
		pathLat += uint64(b.lat[j])
	}
	switch c.Op {
	case "key-write": // the flow's path latency, as a per-flow monitor would keep it
		d.Op, d.Redundancy = telemetry.DTAKeyWrite, uint8(c.Redundancy)
		key()
		data(pathLat)
	case "key-increment": // a packet counter
		d.Op, d.Redundancy = telemetry.DTAKeyIncrement, uint8(c.Redundancy)
		key()
		d.Counter = 1
	case "postcard": // path tracing: each hop reports its switch id
		d.Op, d.Hop = telemetry.DTAPostcard, uint8(hop+1)
		key()
		data(uint64(b.node[hop]))
	case "append": // per-switch list of the path latencies it saw as a sink
		d.Op, d.ListID = telemetry.DTAAppend, b.node[hop]
		data(pathLat)
	}
}

func (t *topology) String() string {
	return fmt.Sprintf("%s %s: %d flows over %d switches, %d hops, %d streams, %d reports per datagram, %s model",
		t.cfg.Format, t.cfg.Mode, t.cfg.Flows, t.cfg.Switches, t.cfg.Hops, len(t.streams), t.batch, t.cfg.Model)
}
