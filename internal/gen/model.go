package gen

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The network value model (Config.Model "network", the default). Values are the state of
// a network over generated time, as INT reports it: every queue (switch, queue id) has a
// hop latency and an occupancy of its own, every egress port a tx utilization, and a
// report carries them with a little jitter. Now and then something happens, placed in
// generated time by the seed alone (so a stream is the same whatever the report rate):
//   - a burst: a queue's occupancy jumps by a few hundred cells and drains within tens of
//     milliseconds, its hop latency with it (cellNs a cell);
//   - a build-up: a queue fills over a second or two to thousands of cells, above
//     BuildUpLevel, holds, and drains;
//   - a path change: a flow's traffic moves off one transit switch to another for a while
//     (the path's other switches and both ends stay), then back.
//
// Jitter is bounded so that a stable network raises no event at the event detector's
// default change threshold (changeThreshold): a hop latency moves within
// changeThreshold/Hops, so that a flow's latency, their sum, moves within changeThreshold;
// occupancy and utilization within occJitter and utilJitter. What raises events is what
// happens, as INTCollector's event detection intends: a stable network reports values and
// no events, and the reduction factor is the paper's two to three orders of magnitude.

// BuildUpLevel is the queue occupancy (cells) every build-up rises above and nothing else
// reaches: the level at which `intake demo` sets detect.above.queue_occupancy.
const BuildUpLevel = 1000

const (
	// changeThreshold is detect.DefaultConfig's change threshold T(m) for the latencies,
	// occupancy and utilization (INTCollector's 50); TestModelJitterUnderThreshold checks
	// that the two agree.
	changeThreshold = 50
	occJitter       = 40 // cells
	utilJitter      = 20
	cellNs          = 5 // hop latency per cell of occupancy above the queue's base

	// Base values, per queue and port, drawn once from the seed.
	baseLatMin, baseLatMax   = 500, 3000 // ns
	baseOccMax               = 40        // cells
	baseUtilMin, baseUtilMax = 5, 65

	// Bursts, network-wide: a mean gap between them (exponential), a length and the
	// occupancy they add (uniform), below BuildUpLevel with the base and jitter.
	burstEvery                 = time.Second
	burstMin, burstMax         = 5 * time.Millisecond, 40 * time.Millisecond
	burstPeakMin, burstPeakMax = 200, 700

	// Build-ups: the first within [buildFirstMin, buildFirstMax] of the start, then a mean
	// gap of buildEvery; rise, hold and fall times and the occupancy they add (uniform).
	buildFirstMin, buildFirstMax = 5 * time.Second, 20 * time.Second
	buildEvery                   = 30 * time.Second
	riseMin, riseMax             = time.Second, 2 * time.Second
	holdMin, holdMax             = 200 * time.Millisecond, 500 * time.Millisecond
	fallMin, fallMax             = 500 * time.Millisecond, time.Second
	buildPeakMin, buildPeakMax   = 1500, 3000

	// Path changes: the first within [pathFirstMin, pathFirstMax], then a mean gap of
	// pathEvery; each lasts [pathMin, pathMax].
	pathFirstMin, pathFirstMax = 5 * time.Second, 25 * time.Second
	pathEvery                  = 15 * time.Second
	pathMin, pathMax           = 5 * time.Second, 30 * time.Second
)

// netModel is the fixed part of the network model, shared by a topology's builders.
type netModel struct {
	qLat, qOcc []uint32  // base hop latency (ns) and occupancy (cells) per queue
	pUtil      []uint32  // base tx utilization per port
	latJitter  uint32    // a hop latency's jitter: Hops of them sum to at most changeThreshold
	alt        []altPath // per flow, the path it changes to; nil: no path changes

	// A switch's buffer (INT v2.x buffer id 0) holds its queues: qSwitch numbers each
	// queue's switch, swQueues lists a switch's queues, swOcc sums their base occupancies.
	qSwitch  []int32
	swQueues [][]int32
	swOcc    []uint32
}

// altPath is a flow's other path: the switch at position pos (a transit hop) replaced by
// node, with its queue q and egress port p, and the egress port prevP of the hop before it,
// toward node. in and out are node's ports from the hop before and toward the hop after;
// to is the port on which those two reach node.
type altPath struct {
	pos         int
	node        uint32
	q, p, prevP int32
	in, out, to uint16
}

// link is the port on which a switch reaches switch b (and receives from it).
func link(b uint32) uint16 { return uint16(1 + (b-1)%32) }

// newNetModel builds the model's paths: each flow's alternative, where a path has a transit
// hop and a switch off the path exists, and nothing reports from a transit hop (in xd mode
// and for DTA postcards every hop reports on its own stream, which a path change would
// make another switch's). queue and port index the alternative's queue and ports.
func newNetModel(t *topology, queue func(node uint32, f int) int32, port func(node uint32, out uint16) int32) *netModel {
	n := &netModel{}
	H, S := t.cfg.Hops, t.cfg.Switches
	if t.everyHop || H < 3 || S <= H {
		return n
	}
	n.alt = make([]altPath, t.cfg.Flows)
	for f := range n.alt {
		rng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(f)|1<<62))
		path := t.nodes[f*H : (f+1)*H]
		a := &n.alt[f]
		a.pos = 1 + rng.IntN(H-2)
		for a.node = uint32(1 + rng.IntN(S)); slices.Contains(path, a.node); {
			a.node = uint32(1 + rng.IntN(S))
		}
		prev, next := path[a.pos-1], path[a.pos+1]
		a.in, a.out, a.to = link(prev), link(next), link(a.node)
		a.q, a.p, a.prevP = queue(a.node, f), port(a.node, a.out), port(prev, a.to)
	}
	return n
}

// baseValues draws every queue's and port's base values, and sets the latency jitter for
// paths of hops hops. queueNode is each queue's switch.
func (n *netModel) baseValues(seed uint64, queueNode []uint32, ports, hops int) {
	queues := len(queueNode)
	rng := rand.New(rand.NewPCG(seed, 0x6e6574776f726b)) // "network"
	n.qLat, n.qOcc, n.pUtil = make([]uint32, queues), make([]uint32, queues), make([]uint32, ports)
	for q := range queues {
		n.qLat[q] = baseLatMin + rng.Uint32N(baseLatMax-baseLatMin+1)
		n.qOcc[q] = rng.Uint32N(baseOccMax + 1)
	}
	for p := range ports {
		n.pUtil[p] = baseUtilMin + rng.Uint32N(baseUtilMax-baseUtilMin+1)
	}
	n.latJitter = uint32(changeThreshold / hops)
	n.qSwitch = make([]int32, queues)
	index := map[uint32]int32{}
	for q, node := range queueNode {
		sw, ok := index[node]
		if !ok {
			sw = int32(len(n.swQueues))
			index[node] = sw
			n.swQueues, n.swOcc = append(n.swQueues, nil), append(n.swOcc, 0)
		}
		n.qSwitch[q] = sw
		n.swQueues[sw] = append(n.swQueues[sw], int32(q))
		n.swOcc[sw] += n.qOcc[q]
	}
}

// route fills the builder's path of flow f at generated time rel: the topology's, or the
// flow's alternative while a path change lasts.
func (b *builder) route(f int, rel int64) {
	t := b.t
	H := t.cfg.Hops
	first := f * H
	copy(b.node[:H], t.nodes[first:first+H])
	copy(b.in[:H], t.in[first:first+H])
	copy(b.out[:H], t.out[first:first+H])
	if t.queueOf == nil {
		return
	}
	copy(b.qi[:H], t.queueOf[first:first+H])
	copy(b.pi[:H], t.portOf[first:first+H])
	if t.net == nil || t.net.alt == nil || b.sched.altUntil[f] <= rel {
		return
	}
	a := &t.net.alt[f]
	k := a.pos
	b.node[k], b.in[k], b.out[k], b.qi[k], b.pi[k] = a.node, a.in, a.out, a.q, a.p
	b.out[k-1], b.pi[k-1] = a.to, a.prevP
	b.in[k+1] = a.to
}

// netValues sets hop j's values at generated time rel: its queue's and port's base, the
// queue's burst or build-up, and jitter; with buffer, its switch's buffer occupancy too.
func (b *builder) netValues(j int, rel int64, buffer bool) {
	n := b.t.net
	q, p := b.qi[j], b.pi[j]
	extra := b.queues[q].anomaly.at(rel)
	b.occ[j] = n.qOcc[q] + b.rng.Uint32N(occJitter+1) + extra
	b.lat[j] = n.qLat[q] + b.rng.Uint32N(n.latJitter+1) + extra*cellNs
	b.util[j] = n.pUtil[p] + b.rng.Uint32N(utilJitter+1)
	b.buf[j] = b.occ[j]
	if buffer {
		sw := n.qSwitch[q]
		b.buf[j] = n.swOcc[sw] + b.rng.Uint32N(occJitter+1)
		for _, q := range n.swQueues[sw] {
			b.buf[j] += b.queues[q].anomaly.at(rel)
		}
	}
}

// anomaly is a queue's burst or build-up: from start, its occupancy rises linearly by
// peak over rise, holds for hold, and drains linearly over fall (a burst: no rise, no
// hold). Times are generated ns from the stream's start.
type anomaly struct {
	start, rise, hold, fall int64
	peak                    uint32
}

// end is when the anomaly is over.
func (a *anomaly) end() int64 { return a.start + a.rise + a.hold + a.fall }

// at is the occupancy the anomaly adds at generated time t.
func (a *anomaly) at(t int64) uint32 {
	d := t - a.start
	switch {
	case a.peak == 0 || d < 0 || t >= a.end():
		return 0
	case d < a.rise:
		return uint32(int64(a.peak) * d / a.rise)
	case d < a.rise+a.hold:
		return a.peak
	}
	return uint32(int64(a.peak) * (a.end() - t) / a.fall)
}

// What the schedule places, each kind from its own generator so that each kind's
// sequence depends on the seed alone.
const (
	kBurst = iota
	kBuild
	kPath
	nKinds
)

// schedule places the network model's bursts, build-ups and path changes in generated
// time. advance applies, in time order, every one due by a report's time; what they
// change is kept in the builder's queue states and in altUntil.
type schedule struct {
	rng      [nKinds]*rand.Rand
	next     [nKinds]int64 // when the next of each kind starts (math.MaxInt64: never)
	altUntil []int64       // per flow: the end of its path change (≤ now: none)
}

func (s *schedule) init(t *topology) {
	for k := range s.rng {
		s.rng[k] = rand.New(rand.NewPCG(t.cfg.Seed, 0x7363686564<<8|uint64(k))) // "sched"
	}
	s.next[kBurst] = s.gap(kBurst, burstEvery)
	s.next[kBuild] = s.uniform(kBuild, buildFirstMin, buildFirstMax)
	s.next[kPath] = math.MaxInt64
	s.altUntil = nil
	if t.net.alt != nil {
		s.next[kPath] = s.uniform(kPath, pathFirstMin, pathFirstMax)
		s.altUntil = make([]int64, t.cfg.Flows)
	}
}

// uniform draws a duration uniformly from [lo, hi] from kind k's generator.
func (s *schedule) uniform(k int, lo, hi time.Duration) int64 {
	return int64(lo) + s.rng[k].Int64N(int64(hi-lo)+1)
}

// gap draws an exponential gap of the given mean from kind k's generator.
func (s *schedule) gap(k int, mean time.Duration) int64 {
	return int64(s.rng[k].ExpFloat64() * float64(mean))
}

// advance applies everything the schedule places at or before generated time now.
func (s *schedule) advance(b *builder, now int64) {
	for {
		k := kBurst
		for i := range s.next {
			if s.next[i] < s.next[k] {
				k = i
			}
		}
		at := s.next[k]
		if at > now {
			return
		}
		r := s.rng[k]
		switch k {
		case kBurst:
			q := r.IntN(len(b.queues))
			a := anomaly{start: at, fall: s.uniform(k, burstMin, burstMax), peak: burstPeakMin + r.Uint32N(burstPeakMax-burstPeakMin+1)}
			b.place(q, a)
			s.next[k] = at + s.gap(k, burstEvery)
		case kBuild:
			q := r.IntN(len(b.queues))
			a := anomaly{start: at, rise: s.uniform(k, riseMin, riseMax), hold: s.uniform(k, holdMin, holdMax),
				fall: s.uniform(k, fallMin, fallMax), peak: buildPeakMin + r.Uint32N(buildPeakMax-buildPeakMin+1)}
			b.place(q, a)
			s.next[k] = at + s.gap(k, buildEvery)
		case kPath:
			f := r.IntN(len(s.altUntil))
			if until := at + s.uniform(k, pathMin, pathMax); s.altUntil[f] <= at {
				s.altUntil[f] = until
			}
			s.next[k] = at + s.gap(k, pathEvery)
		}
	}
}

// place starts anomaly a on queue q unless the queue's last one is still going on.
func (b *builder) place(q int, a anomaly) {
	if cur := &b.queues[q].anomaly; cur.peak == 0 || cur.end() <= a.start {
		*cur = a
	}
}
