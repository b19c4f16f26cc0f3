// Package fabric owns intake's emulated network of INT switches: a discrete-event emulator
// of a topology (k-ary fat tree, the INT-label testbed of §6.1, or a topology file) with
// links of given bandwidth, N(μ, σ²) delay and loss, drop-tail egress queues, ECMP or fixed
// routing and hosts sending traffic; its switches run INT-MD (source, transit, sink sending
// Telemetry Report v2.0), INT-XD postcards, and INT-label's labeling algorithms (INT-label
// §3: Base A, Algorithm 1; Base B, Algorithm 2 with F1/F2/F3 and the rest time T1 of §5;
// Pro's per-port shift S of §3.2; specific-flow telemetry of §3.3), the last hop exporting
// the items (§2, Algorithm 1 lines 14-18).
//
// Two clocks: RunVirtual advances virtual time as fast as the CPU allows and delivers
// exports in process (simulation, reproduction of the paper's figures); Run paces the same
// event loop by the wall clock and sends every export and report as a real UDP datagram to
// intake's listeners, with an HTTP control endpoint for the controller's shift updates
// (docs/fabric.md).
//
// The event loop is single-threaded and allocation-free in steady state: events live in a
// value heap, packets in a pool indexed by int32, randomness is one seeded PCG.
package fabric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"time"

	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/telemetry"
)

// Algo is the INT-label labeling algorithm the switches run.
type Algo string

const (
	AlgoNone Algo = "none" // no INT-label
	AlgoA    Algo = "a"    // Base A: interval-based (Algorithm 1)
	AlgoB    Algo = "b"    // Base B: plus probabilistic by INT_num (Algorithm 2)
)

// LabelConfig is the switches' INT-label configuration.
type LabelConfig struct {
	Algo Algo
	// T is the labeling interval; a port with shift S uses T/2^S (Pro, §3.2).
	T time.Duration
	// T1 is Base B's rest time (§5): no probabilistic label within T1 of the last label.
	T1 time.Duration
	// F is Base B's probability function.
	F label.F
	// MaxHop is MAX_hop (§3.1, §3.3); default 5.
	MaxHop int
}

// SpecificFlow asks for specific-flow telemetry (§3.3): every Every-th packet from host Src
// to host Dst is labeled at its first switch with INT_num = MAX_hop, so that every later
// switch labels it too (f = 1), rest time notwithstanding.
type SpecificFlow struct {
	Src, Dst int
	Every    int
}

// Traffic is what the hosts send.
type Traffic struct {
	// Senders are the sending hosts' indices (0-based); empty: every host.
	Senders []int
	// Rate is each sender's rate in bits per second.
	Rate float64
	// PacketSize in bytes.
	PacketSize int
	// Pattern: "random" (a uniformly random other host per packet), "permutation" (host i
	// to host (i + n/2) mod n), or "all" (round robin over every other host).
	Pattern string
	// Dsts, when set, restricts random destinations to these hosts.
	Dsts []int
	// Poisson draws exponential gaps instead of constant ones.
	Poisson bool
	// Flows is the number of distinct source ports per sender (ECMP spreads flows).
	Flows int
	// Packets stops the senders after this many packets in all (0: no limit).
	Packets int
}

// Config configures a fabric.
type Config struct {
	Topology *Topology
	// Routing is "ecmp" (flows hashed over equal-cost next hops) or "fixed" (always the
	// lowest-numbered one: pre-installed flow tables, some ports bypassed).
	Routing string
	Traffic Traffic
	Label   LabelConfig
	// SourceRoutes pins the path of a (source host, destination host) pair: the switches
	// it crosses (node indices), source side first, as the source routes of INT-label's
	// prototype do; other pairs follow Routing.
	SourceRoutes map[[2]int][]int
	// Specific flows (Base B only).
	Specific []SpecificFlow
	// INTMDEvery: every n-th packet gets INT-MD instructions at its first switch; each
	// switch adds its hop and the last switch (the sink) sends a TR v2.0 report. 0: off.
	INTMDEvery int
	// PostcardEvery: every n-th packet makes every switch it crosses send an INT-XD
	// postcard (a TR v2.0 report holding that hop). 0: off.
	PostcardEvery int
	// ExportDelay is T_u, the last hop's export time to the collector (§4.2).
	ExportDelay time.Duration
	// Seed seeds the one PCG the fabric draws from.
	Seed uint64
}

// Sink receives what the switches send the collector.
type Sink interface {
	// Label receives an INT-label export at fabric time now.
	Label(now int64, r *telemetry.Report)
	// Report receives a Telemetry Report (INT-MD sink report or postcard).
	Report(now int64, r *telemetry.Report)
}

// maxItems bounds the items a packet carries (a longer path stops being labeled).
const maxItems = 16

type packet struct {
	src, dst int32
	sport    uint16
	size     int32
	flow     uint32
	nItems   uint8
	specific bool
	md       bool
	postcard bool
	hops     uint8
	inPort   uint8
	arrive   int64
	next     int32 // free list
	items    [maxItems]telemetry.LabelItem
}

type egress struct {
	node     int32
	peer     int32
	peerPort uint8
	port     uint8
	toHost   bool
	nsPerB   float64 // transmission ns per byte
	dmean    float64
	dstd     float64
	loss     float64
	qcap     int64
	busy     int64 // when the queue drains
	lt       int64 // INT-label Reg1: last labeling time
	shift    uint8 // INT-label Reg2: S

	Stats PortStats
}

// PortStats are one egress port's counters.
type PortStats struct {
	Packets  uint64 `json:"packets"`
	Labels   uint64 `json:"labels"`
	Drops    uint64 `json:"drops"`
	Lost     uint64 `json:"lost"`
	LastSeen int64  `json:"last_seen_ns"`
}

const (
	evArrive uint8 = iota
	evSend
	evExport
	evTick
)

type event struct {
	t    int64
	pkt  int32
	node int32
	kind uint8
	port uint8
}

// Stats are the fabric's totals.
type Stats struct {
	Now           int64  `json:"now_ns"`
	Sent          uint64 `json:"sent"`      // packets the hosts sent
	Delivered     uint64 `json:"delivered"` // packets that reached their host
	PacketHops    uint64 `json:"packet_hops"`
	Drops         uint64 `json:"drops"` // queue overflow
	Lost          uint64 `json:"lost"`  // link loss
	Labels        uint64 `json:"labels"`
	Exports       uint64 `json:"exports"` // labeled packets exported at a last hop
	ExportedItems uint64 `json:"exported_items"`
	LostItems     uint64 `json:"lost_items"` // items on packets dropped or lost
	Reports       uint64 `json:"reports"`    // INT-MD sink reports
	Postcards     uint64 `json:"postcards"`
	TrafficBytes  uint64 `json:"traffic_bytes"` // per hop
	INTBytes      uint64 `json:"int_bytes"`     // INT-label header bytes per hop
	// ItemsHist[n]: exported packets carrying n items.
	ItemsHist [maxItems + 1]uint64 `json:"items_hist"`
}

// Tracer sees every INT-label decision, for tests and ground truth.
type Tracer interface {
	// Egress: switch sw's port was about to send a packet carrying nItems (specific:
	// marked) at ct, its last label time lt; labeled says what it did, item what it wrote.
	Egress(sw, port uint8, ct, lt int64, nItems int, specific, labeled bool, item *telemetry.LabelItem)
}

// Fabric is an emulated network. New builds it; RunVirtual or Run drives it.
type Fabric struct {
	cfg   Config
	topo  *Topology
	rng   *rand.Rand
	now   int64
	heap  []event
	pkts  []packet
	free  int32
	ports []egress
	base  []int32 // first egress index of each node
	// routes[node*nHosts+dst] = offset<<8 | count into hopsTab
	routes  []uint32
	hopsTab []uint8
	// srcPorts[src*nHosts+dst]: a source-routed pair's egress port at each hop
	srcPorts [][]uint8
	nHosts   int
	senders  []int32
	sendIx   []int32 // round robin / permutation state per host
	sent     int
	swIndex  [256]int32 // switch id → node

	t       int64 // labeling interval
	t1      int64
	maxHop  int
	specMap map[uint64]*specState

	sink   Sink
	tracer Tracer
	tick   func(now int64)
	period int64
	stats  Stats

	rep    telemetry.Report
	mdHops [][maxItems]telemetry.Hop
	// seq is each switch's next report sequence number, by switch id: TR v2.0 numbers
	// reports per (node id, hw_id) and destination, and every switch here reports on hw_id 0
	// to one collector (UDPSink numbers per member when there are several).
	seq     [256]uint32
	stopGen bool

	// real time
	udp     *UDPSink
	cmds    chan func()
	ctl     net.Listener
	running chan struct{} // closed when Run returns
}

type specState struct{ every, n int }

// New builds a fabric; it is inert until run.
func New(cfg Config) (*Fabric, error) {
	t := cfg.Topology
	if t == nil {
		t = Testbed(DefaultLink)
		cfg.Topology = t
	}
	if cfg.Routing == "" {
		cfg.Routing = "ecmp"
	}
	if cfg.Routing != "ecmp" && cfg.Routing != "fixed" {
		return nil, fmt.Errorf("routing %q: must be ecmp or fixed", cfg.Routing)
	}
	if cfg.Label.Algo == "" {
		cfg.Label.Algo = AlgoA
	}
	switch cfg.Label.Algo {
	case AlgoNone, AlgoA, AlgoB:
	default:
		return nil, fmt.Errorf("label algo %q: must be none, a or b", cfg.Label.Algo)
	}
	if cfg.Label.T <= 0 {
		cfg.Label.T = 50 * time.Millisecond
	}
	if cfg.Label.T1 < 0 || cfg.Label.T1 > cfg.Label.T {
		return nil, fmt.Errorf("rest time T1 %s: must be in [0, T=%s]", cfg.Label.T1, cfg.Label.T)
	}
	if cfg.Label.F == "" {
		cfg.Label.F = label.F1
	}
	if _, err := label.ParseF(string(cfg.Label.F)); err != nil {
		return nil, fmt.Errorf("label f: %v", err)
	}
	if cfg.Label.MaxHop == 0 {
		cfg.Label.MaxHop = 5
	}
	if cfg.Label.MaxHop < 2 || cfg.Label.MaxHop > 100 {
		return nil, fmt.Errorf("max hop %d: must be in [2, 100]", cfg.Label.MaxHop)
	}
	tr := &cfg.Traffic
	if tr.PacketSize == 0 {
		tr.PacketSize = 1000
	}
	if tr.PacketSize < 64 || tr.PacketSize > 9000 {
		return nil, fmt.Errorf("packet size %d: must be in [64, 9000]", tr.PacketSize)
	}
	if tr.Rate == 0 {
		tr.Rate = 5e6
	}
	if tr.Rate < 0 {
		return nil, fmt.Errorf("rate %g: must be positive", tr.Rate)
	}
	if tr.Pattern == "" {
		tr.Pattern = "random"
	}
	if tr.Pattern != "random" && tr.Pattern != "permutation" && tr.Pattern != "all" {
		return nil, fmt.Errorf("pattern %q: must be random, permutation or all", tr.Pattern)
	}
	if tr.Flows <= 0 {
		tr.Flows = 8
	}
	f := &Fabric{
		cfg: cfg, topo: t, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		nHosts: len(t.Hosts), t: int64(cfg.Label.T), t1: int64(cfg.Label.T1), maxHop: cfg.Label.MaxHop,
		free: -1,
	}
	for i := range f.swIndex {
		f.swIndex[i] = -1
	}
	for _, h := range append(tr.Senders, tr.Dsts...) {
		if h < 0 || h >= f.nHosts {
			return nil, fmt.Errorf("host %d: the topology has hosts 0..%d", h, f.nHosts-1)
		}
	}
	if len(tr.Senders) == 0 {
		for i := range f.nHosts {
			f.senders = append(f.senders, int32(i))
		}
	} else {
		for _, s := range tr.Senders {
			f.senders = append(f.senders, int32(s))
		}
	}
	f.sendIx = make([]int32, f.nHosts)
	// Egress ports.
	f.base = make([]int32, len(t.Nodes))
	for i, n := range t.Nodes {
		f.base[i] = int32(len(f.ports))
		if n.Kind == Switch {
			if f.swIndex[n.ID] >= 0 {
				return nil, fmt.Errorf("switch id %d used twice", n.ID)
			}
			f.swIndex[n.ID] = int32(i)
		}
		for p, li := range n.Links {
			l := &t.Links[li]
			peer, pp := l.B, l.BPort
			if l.B == i {
				peer, pp = l.A, l.APort
			}
			if l.Bandwidth <= 0 {
				return nil, fmt.Errorf("link %s-%s: bandwidth must be positive", t.Nodes[l.A].Name, t.Nodes[l.B].Name)
			}
			q := l.Queue
			if q <= 0 {
				q = 64
			}
			f.ports = append(f.ports, egress{
				node: int32(i), peer: int32(peer), peerPort: pp, port: uint8(p + 1),
				toHost: t.Nodes[peer].Kind == Host, nsPerB: 8e9 / l.Bandwidth,
				dmean: float64(l.DelayMean), dstd: float64(l.DelayStd), loss: l.Loss, qcap: int64(q),
				lt: math.MinInt64 / 2,
			})
		}
	}
	if err := f.route(); err != nil {
		return nil, err
	}
	f.specMap = map[uint64]*specState{}
	for _, s := range cfg.Specific {
		if s.Src < 0 || s.Src >= f.nHosts || s.Dst < 0 || s.Dst >= f.nHosts || s.Src == s.Dst || s.Every < 1 {
			return nil, fmt.Errorf("specific flow %d->%d every %d: hosts must exist and differ, every ≥ 1", s.Src, s.Dst, s.Every)
		}
		f.specMap[uint64(s.Src)<<32|uint64(s.Dst)] = &specState{every: s.Every}
	}
	return f, nil
}

// route computes, for every switch and destination host, the ports on shortest paths
// (hosts do not forward).
func (f *Fabric) route() error {
	t := f.topo
	if err := f.sourceRoutes(); err != nil {
		return err
	}
	nn := len(t.Nodes)
	f.routes = make([]uint32, nn*f.nHosts)
	dist := make([]int, nn)
	queue := make([]int, 0, nn)
	for h, hn := range t.Hosts {
		for i := range dist {
			dist[i] = -1
		}
		dist[hn] = 0
		queue = append(queue[:0], hn)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if u != hn && t.Nodes[u].Kind == Host {
				continue
			}
			for _, li := range t.Nodes[u].Links {
				l := &t.Links[li]
				v := l.A + l.B - u
				if dist[v] < 0 {
					dist[v] = dist[u] + 1
					queue = append(queue, v)
				}
			}
		}
		for u := range nn {
			if t.Nodes[u].Kind != Switch || dist[u] < 0 {
				continue
			}
			off := len(f.hopsTab)
			for p, li := range t.Nodes[u].Links {
				l := &t.Links[li]
				v := l.A + l.B - u
				if dist[v] == dist[u]-1 && (t.Nodes[v].Kind == Switch || v == hn) {
					f.hopsTab = append(f.hopsTab, uint8(p+1))
				}
			}
			if len(f.hopsTab)-off > 255 || off >= 1<<24 {
				return fmt.Errorf("topology too large to route")
			}
			f.routes[u*f.nHosts+h] = uint32(off)<<8 | uint32(len(f.hopsTab)-off)
		}
	}
	return nil
}

// Topology returns the fabric's topology.
func (f *Fabric) Topology() *Topology { return f.topo }

// Config returns the effective configuration.
func (f *Fabric) Config() Config { return f.cfg }

// SetSink sets where exports and reports go.
func (f *Fabric) SetSink(s Sink) { f.sink = s }

// SetTracer sets the labeling tracer.
func (f *Fabric) SetTracer(t Tracer) { f.tracer = t }

// SetTick calls fn every period of fabric time (the controller's feedback loop in virtual
// time).
func (f *Fabric) SetTick(period time.Duration, fn func(now int64)) {
	f.tick, f.period = fn, int64(period)
}

// Now returns the fabric time in ns.
func (f *Fabric) Now() int64 { return f.now }

// Stats returns the totals.
func (f *Fabric) Stats() Stats { s := f.stats; s.Now = f.now; return s }

// Port returns the counters of switch sw's egress port.
func (f *Fabric) Port(sw, port uint8) (PortStats, bool) {
	e := f.egressOf(sw, port)
	if e == nil {
		return PortStats{}, false
	}
	return e.Stats, true
}

func (f *Fabric) egressOf(sw, port uint8) *egress {
	n := f.swIndex[sw]
	if n < 0 || port == 0 || int(port) > len(f.topo.Nodes[n].Links) {
		return nil
	}
	return &f.ports[f.base[n]+int32(port)-1]
}

// SetShift sets switch sw's egress port's shift S (the Pro register Reg2); it implements
// label.ShiftSetter for in-process control in virtual time. Unknown ports are ignored.
func (f *Fabric) SetShift(sw, port, shift uint8) {
	if e := f.egressOf(sw, port); e != nil {
		e.shift = min(shift, 16)
	}
}

// Shift returns a port's shift and whether the port exists.
func (f *Fabric) Shift(sw, port uint8) (uint8, bool) {
	if e := f.egressOf(sw, port); e != nil {
		return e.shift, true
	}
	return 0, false
}

// ActivePorts returns the (switch, port) pairs that have forwarded at least one packet.
func (f *Fabric) ActivePorts() [][2]uint8 {
	var out [][2]uint8
	for i := range f.ports {
		e := &f.ports[i]
		if f.topo.Nodes[e.node].Kind == Switch && e.Stats.Packets > 0 {
			out = append(out, [2]uint8{f.topo.Nodes[e.node].ID, e.port})
		}
	}
	return out
}

// --- event heap (binary, by time) ---

func (f *Fabric) push(e event) {
	h := append(f.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].t <= e.t {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
	f.heap = h
}

func (f *Fabric) pop() event {
	h := f.heap
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	n := len(h)
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].t < h[c].t {
			c++
		}
		if last.t <= h[c].t {
			break
		}
		h[i] = h[c]
		i = c
	}
	if n > 0 {
		h[i] = last
	}
	f.heap = h
	return top
}

// --- packets ---

func (f *Fabric) alloc() int32 {
	if f.free >= 0 {
		i := f.free
		f.free = f.pkts[i].next
		return i
	}
	f.pkts = append(f.pkts, packet{})
	if f.cfg.INTMDEvery > 0 {
		f.mdHops = append(f.mdHops, [maxItems]telemetry.Hop{})
	}
	return int32(len(f.pkts) - 1)
}

func (f *Fabric) release(i int32) {
	f.pkts[i].next = f.free
	f.free = i
}

// start schedules the senders' first packets (staggered by a random phase) and the tick.
func (f *Fabric) start() {
	if len(f.heap) > 0 || f.sent > 0 {
		return
	}
	gap := f.gap()
	for _, s := range f.senders {
		f.push(event{t: f.now + int64(f.rng.Float64()*float64(gap)), kind: evSend, node: s})
	}
	if f.tick != nil && f.period > 0 {
		f.push(event{t: f.now + f.period, kind: evTick})
	}
}

func (f *Fabric) gap() int64 {
	return int64(float64(f.cfg.Traffic.PacketSize) * 8 / f.cfg.Traffic.Rate * 1e9)
}

// RunVirtual runs the event loop in virtual time until fabric time until (ns) or until no
// event is left.
func (f *Fabric) RunVirtual(until int64) {
	f.start()
	for len(f.heap) > 0 && f.heap[0].t <= until {
		f.step(f.pop())
	}
	if f.now < until {
		f.now = until
	}
}

// StopTraffic stops the senders (packets in flight continue).
func (f *Fabric) StopTraffic() { f.stopGen = true }

func (f *Fabric) step(e event) {
	f.now = e.t
	switch e.kind {
	case evSend:
		f.send(e.node)
	case evArrive:
		f.arrive(e.pkt, e.node, e.port)
	case evExport:
		f.export(e.pkt, e.node)
	case evTick:
		f.tick(f.now)
		f.push(event{t: f.now + f.period, kind: evTick})
	}
}

func (f *Fabric) send(h int32) {
	tr := &f.cfg.Traffic
	if f.stopGen || tr.Packets > 0 && f.sent >= tr.Packets {
		return
	}
	next := f.gap()
	if tr.Poisson {
		next = int64(f.rng.ExpFloat64() * float64(next))
	}
	f.push(event{t: f.now + max(next, 1), kind: evSend, node: h})
	dst := f.pickDst(h)
	if dst < 0 {
		return
	}
	f.sent++
	f.stats.Sent++
	i := f.alloc()
	p := &f.pkts[i]
	*p = packet{src: h, dst: dst, size: int32(tr.PacketSize), next: -1}
	p.sport = uint16(10000 + f.rng.IntN(tr.Flows))
	p.flow = mix(uint32(h)<<16^uint32(dst), uint32(p.sport))
	if f.cfg.INTMDEvery > 0 && f.stats.Sent%uint64(f.cfg.INTMDEvery) == 0 {
		p.md = true
	}
	if f.cfg.PostcardEvery > 0 && f.stats.Sent%uint64(f.cfg.PostcardEvery) == 0 {
		p.postcard = true
	}
	if len(f.specMap) > 0 {
		if s := f.specMap[uint64(h)<<32|uint64(dst)]; s != nil {
			s.n++
			if s.n%s.every == 0 {
				p.specific = true
			}
		}
	}
	hn := f.topo.Hosts[h]
	f.transmit(i, &f.ports[f.base[hn]], f.now)
}

func (f *Fabric) pickDst(h int32) int32 {
	tr := &f.cfg.Traffic
	n := int32(f.nHosts)
	switch tr.Pattern {
	case "permutation":
		return (h + n/2) % n
	case "all":
		f.sendIx[h] = (f.sendIx[h] + 1) % n
		if f.sendIx[h] == h {
			f.sendIx[h] = (f.sendIx[h] + 1) % n
		}
		return f.sendIx[h]
	}
	if len(tr.Dsts) > 0 {
		for range 16 {
			d := int32(tr.Dsts[f.rng.IntN(len(tr.Dsts))])
			if d != h {
				return d
			}
		}
		return -1
	}
	d := int32(f.rng.IntN(int(n) - 1))
	if d >= h {
		d++
	}
	return d
}

func mix(a, b uint32) uint32 {
	x := uint64(a)<<32 | uint64(b)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return uint32(x)
}

// arrive: packet i reaches node n on port in.
func (f *Fabric) arrive(i int32, n int32, in uint8) {
	node := &f.topo.Nodes[n]
	p := &f.pkts[i]
	if node.Kind == Host {
		f.stats.Delivered++
		f.release(i)
		return
	}
	f.stats.PacketHops++
	p.arrive, p.inPort = f.now, in
	p.hops++
	r := f.routes[int(n)*f.nHosts+int(p.dst)]
	cnt := r & 0xff
	if cnt == 0 { // unreachable
		f.stats.Drops++
		f.release(i)
		return
	}
	k := uint32(0)
	if cnt > 1 && f.cfg.Routing == "ecmp" {
		k = mix(p.flow, uint32(node.ID)) % cnt
	}
	port := f.hopsTab[r>>8+k]
	if f.srcPorts != nil {
		if sp := f.srcPorts[int(p.src)*f.nHosts+int(p.dst)]; sp != nil {
			port = sp[p.hops-1] // sourceRoutes checked the path's length and links
		}
	}
	f.transmit(i, &f.ports[f.base[n]+int32(port)-1], f.now)
}

// transmit puts packet i on egress e at time t: drop-tail queue, the INT behaviours at the
// dequeue time, the last hop's export, link loss and delay.
func (f *Fabric) transmit(i int32, e *egress, t int64) {
	p := &f.pkts[i]
	tx := int64(float64(p.size) * e.nsPerB)
	if tx < 1 {
		tx = 1
	}
	start := max(t, e.busy)
	depth := (start - t) / tx // packets ahead of this one
	if depth >= e.qcap {
		e.Stats.Drops++
		f.stats.Drops++
		f.stats.LostItems += uint64(p.nItems)
		f.release(i)
		return
	}
	e.busy = start + tx
	e.Stats.Packets++
	e.Stats.LastSeen = start
	node := &f.topo.Nodes[e.node]
	if node.Kind == Switch {
		f.atEgress(i, e, node.ID, start, uint32(depth))
		if e.toHost {
			if p.nItems > 0 {
				f.push(event{t: start + tx + int64(f.cfg.ExportDelay), kind: evExport, pkt: f.exportCopy(i), node: e.node})
			}
			if p.md {
				f.mdSink(i, node.ID, start)
			}
		}
	}
	f.stats.TrafficBytes += uint64(p.size)
	if p.nItems > 0 {
		f.stats.INTBytes += 2 + 32*uint64(p.nItems)
	}
	if e.loss > 0 && f.rng.Float64() < e.loss {
		e.Stats.Lost++
		f.stats.Lost++
		if !e.toHost {
			f.stats.LostItems += uint64(p.nItems)
		}
		f.release(i)
		return
	}
	d := e.dmean
	if e.dstd > 0 {
		d += f.rng.NormFloat64() * e.dstd
	}
	if d < 0 {
		d = 0
	}
	f.push(event{t: start + tx + int64(d), kind: evArrive, pkt: i, node: e.peer, port: e.peerPort})
}

// exportCopy keeps packet i's items for the export event: the packet itself goes on to its
// host, so the items move to a pool slot of their own.
func (f *Fabric) exportCopy(i int32) int32 {
	j := f.alloc()
	q, p := &f.pkts[j], &f.pkts[i]
	q.nItems, q.specific, q.src, q.dst, q.next = p.nItems, p.specific, p.src, p.dst, -1
	copy(q.items[:p.nItems], p.items[:p.nItems])
	return j
}

// atEgress runs INT-label's egress logic (Algorithms 1, 2 and the Pro register) at ct.
func (f *Fabric) atEgress(i int32, e *egress, sw uint8, ct int64, depth uint32) {
	p := &f.pkts[i]
	if p.postcard {
		f.postcard(i, e, sw, ct, depth)
	}
	if p.md {
		f.mdHop(i, e, sw, ct, depth)
	}
	if f.cfg.Label.Algo == AlgoNone {
		return
	}
	interval := f.t >> e.shift
	n := int(p.nItems)
	labeled := false
	since := ct - e.lt
	switch {
	case p.specific && n > 0:
		labeled = true // INT_num > MAX_hop: f = 1 at every later hop (§3.3)
	case since > interval:
		labeled = true // Base A, Algorithm 1 line 10
	case p.specific && f.isFirstHop(e, p):
		labeled = true
	case f.cfg.Label.Algo == AlgoB && since >= f.t1 && (n > 0 || f.cfg.Label.F == label.F3Proto):
		num := n
		if p.specific {
			num += f.maxHop
		}
		frac := float64(since) / float64(interval)
		if f.cfg.Label.F == label.F3Proto && f.t1 < interval {
			frac = float64(since-f.t1) / float64(interval-f.t1)
		}
		pr := f.cfg.Label.F.Eval(num, f.maxHop, frac)
		labeled = pr >= 1 || pr > 0 && f.rng.Float64() < pr
	}
	var it *telemetry.LabelItem
	if labeled && n < maxItems {
		it = &p.items[n]
		*it = telemetry.LabelItem{
			SwitchID: sw, IngressPort: p.inPort, EgressPort: e.port,
			IngressTS: uint64(p.arrive) & (1<<48 - 1), EgressTS: uint64(ct) & (1<<48 - 1),
			EnqTS: uint32(p.arrive), EnqQDepth: depth, DeqTimedelta: uint32(ct - p.arrive), DeqQDepth: depth,
		}
		p.nItems++
		e.lt = ct
		e.Stats.Labels++
		f.stats.Labels++
	} else {
		labeled = false
	}
	if f.tracer != nil {
		f.tracer.Egress(sw, e.port, ct, e.lt, n, p.specific, labeled, it)
	}
}

// isFirstHop: the packet came straight from its source host.
func (f *Fabric) isFirstHop(e *egress, p *packet) bool {
	return p.hops == 1 && p.nItems == 0
}

// export sends packet j's items (a copy made at the last hop) to the sink: the INT option
// and the items newest first (wire.appendLabel's layout).
func (f *Fabric) export(j int32, _ int32) {
	q := &f.pkts[j]
	n := int(q.nItems)
	f.stats.Exports++
	f.stats.ExportedItems += uint64(n)
	f.stats.ItemsHist[n]++
	if f.sink != nil {
		r := &f.rep
		r.Reset()
		r.Format = telemetry.FormatLabel
		r.LabelSpecific = q.specific
		r.NLabels = uint8(n)
		for k := range n {
			r.Labels[k] = q.items[n-1-k]
		}
		f.sink.Label(f.now, r)
	}
	f.release(j)
}

// sourceRoutes turns Config.SourceRoutes into egress ports, checking that each path starts
// at the source's switch, follows links and ends at the destination's switch.
func (f *Fabric) sourceRoutes() error {
	t := f.topo
	if len(f.cfg.SourceRoutes) == 0 {
		return nil
	}
	f.srcPorts = make([][]uint8, f.nHosts*f.nHosts)
	port := func(u, v int) uint8 { // u's port towards v, 0 if none
		for p, li := range t.Nodes[u].Links {
			if l := &t.Links[li]; l.A+l.B-u == v {
				return uint8(p + 1)
			}
		}
		return 0
	}
	for pair, path := range f.cfg.SourceRoutes {
		src, dst := pair[0], pair[1]
		if src < 0 || src >= f.nHosts || dst < 0 || dst >= f.nHosts || src == dst {
			return fmt.Errorf("source route %d→%d: hosts out of range", src, dst)
		}
		if len(path) == 0 || len(path) > 255 {
			return fmt.Errorf("source route %d→%d: %d switches", src, dst, len(path))
		}
		hops := append(append([]int{t.Hosts[src]}, path...), t.Hosts[dst])
		ports := make([]uint8, len(path))
		for i, u := range path {
			if u < 0 || u >= len(t.Nodes) || t.Nodes[u].Kind != Switch {
				return fmt.Errorf("source route %d→%d: node %d is not a switch", src, dst, u)
			}
			if port(hops[i], u) == 0 {
				return fmt.Errorf("source route %d→%d: no link %s–%s", src, dst, t.Nodes[hops[i]].Name, t.Nodes[u].Name)
			}
			if ports[i] = port(u, hops[i+2]); ports[i] == 0 {
				return fmt.Errorf("source route %d→%d: no link %s–%s", src, dst, t.Nodes[u].Name, t.Nodes[hops[i+2]].Name)
			}
		}
		f.srcPorts[src*f.nHosts+dst] = ports
	}
	return nil
}
