// Package gen owns intake's load generator: a reproducible stream of telemetry datagrams in
// every format package wire encodes that travels as a UDP payload (Telemetry Reports v0.5,
// v1.0 and v2.0 with INT-MD stacks or INT-XD per-hop metadata, DTA primitives and batches,
// INT-label exports), and a sender that blasts it at a socket with sendmmsg. In data mode
// (data.go) the stream's INT-MD stacks travel inside UDP data packets instead, Ethernet frames
// sent out of an interface, for an INT sink to strip.
//
// It exists so that intake can be measured and tested without a switch (docs/design.md;
// docs/gen.md). Two properties make it useful for that:
//   - Sending costs no encoding. Datagrams are prebuilt into a ring; a lap of the ring is
//     sent again with only the sequence numbers rewritten, so the send loop is a copy, a
//     patch and a sendmmsg, with no allocation.
//   - It knows exactly what it sent. The stream is a pure function of Config (seed
//     included), so Walk replays any prefix with the Reports each datagram carries, and
//     Truth counts reports per format, flow, node and (node, hw_id) sequence: a collector's
//     test can assert exact numbers, and sequence numbers advance per (node, hw_id) as a
//     switch's do, so a collector's gap counting can be checked too.
//
// Its values are a network's by default (the network model, model.go): steady, with
// jitter an event detector at INTCollector's thresholds ignores, and now and then a burst,
// a queue build-up or a path change, so that events mean what they do in a network; the
// draw model draws them from distributions instead (Config.Model).
//
// Fresh mode builds every datagram as it is sent instead, for tests that need values that
// never repeat and for the network model's whole course (intake demo).
package gen

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Generator is a built stream. It is safe for concurrent use by a Sender's workers.
type Generator struct {
	t      *topology
	maxLen int // the largest datagram, for send buffers

	// Ring mode: the first lap, built once.
	ring     []byte
	slots    []slot
	repFlows []uint32 // flow index of every report of the lap, in order
	lapSeqs  []uint32 // datagrams per stream in one lap: how far a lap moves its sequence
	lap      Truth

	// Fresh mode: one builder, whose order is the stream's.
	mu    sync.Mutex
	fresh builder
}

type slot struct {
	off, len uint32
	rep      uint32 // first report in repFlows
	n        uint16 // reports
	hops     uint16 // hop records (stack hops, reporter hops, label items)
	stream   int32
	seq      uint32
}

// New validates cfg and builds the generator (in ring mode, the whole ring).
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := newTopology(cfg)
	if err != nil {
		return nil, err
	}
	g := &Generator{t: t, maxLen: t.maxLen}
	ring := cfg.Ring
	if cfg.Events > 0 {
		s, err := newEventSchedule(&cfg, t.batch)
		if err != nil {
			return nil, err
		}
		if !cfg.Fresh {
			if ring, err = eventRing(s, ring); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Fresh {
		g.fresh.init(t, 0)
		return g, nil
	}
	var b builder
	b.init(t, 0)
	g.slots = make([]slot, 0, ring)
	g.lapSeqs = make([]uint32, len(t.streams))
	g.lap = g.newTruth()
	for i := 0; i < ring; i++ {
		off := len(g.ring)
		var d dgram
		if g.ring, d, err = b.next(g.ring); err != nil {
			return nil, fmt.Errorf("gen: encode datagram %d: %w", i, err)
		}
		s := slot{off: uint32(off), len: uint32(len(g.ring) - off), rep: uint32(len(g.repFlows)),
			n: uint16(d.n), stream: d.stream, seq: d.seq}
		for _, r := range b.rs[:d.n] {
			s.hops += uint16(r.NHops) + uint16(r.NLabels)
		}
		for _, p := range b.pos[:d.n] {
			g.repFlows = append(g.repFlows, p/uint32(cfg.Hops))
		}
		g.slots = append(g.slots, s)
		g.lapSeqs[d.stream]++
		g.maxLen = max(g.maxLen, int(s.len))
		g.lap.add(g, &s, g.repFlows[s.rep:s.rep+uint32(s.n)], 1)
	}
	return g, nil
}

// Config returns the configuration the generator was built from.
func (g *Generator) Config() Config { return g.t.cfg }

// WireConfig returns the wire configuration that decodes the stream.
func (g *Generator) WireConfig() wire.Config { return g.t.cfg.WireConfig() }

// Input returns what the stream's datagrams hold, for a decoder.
func (g *Generator) Input() wire.Input { return g.t.cfg.Input() }

// Len returns the number of distinct prebuilt datagrams (0 in fresh mode).
func (g *Generator) Len() int { return len(g.slots) }

// Batch returns the reports per datagram after the MTU cut.
func (g *Generator) Batch() int { return g.t.batch }

// MaxLen returns the size of the largest datagram the stream holds.
func (g *Generator) MaxLen() int { return g.maxLen }

// Flows returns the number of flows.
func (g *Generator) Flows() int { return g.t.cfg.Flows }

// Flow returns flow i's 5-tuple and path (node ids in travel order).
func (g *Generator) Flow(i int) (telemetry.FlowKey, []uint32) {
	H := g.t.cfg.Hops
	return g.t.keys[i], g.t.nodes[i*H : (i+1)*H : (i+1)*H]
}

// String summarizes the stream.
func (g *Generator) String() string { return g.t.String() }

// Stream is one reporter's sequence-number space.
type Stream struct {
	Node uint32
	HWID uint8
}

// Truth is what a prefix of the stream holds.
type Truth struct {
	Datagrams uint64
	Reports   uint64
	Hops      uint64 // per-hop records: INT stack hops, reporter hops, INT-label items
	Bytes     uint64
	ByFormat  map[string]uint64 // reports per format name (one format per generator)
	ByFlow    []uint64          // reports per flow index
	ByNode    map[uint32]uint64 // reports per reporting node
	ByStream  map[Stream]uint64 // datagrams per (node, hw_id): each advanced its sequence by as many
}

func (g *Generator) newTruth() Truth {
	return Truth{ByFormat: map[string]uint64{}, ByFlow: make([]uint64, g.t.cfg.Flows),
		ByNode: map[uint32]uint64{}, ByStream: map[Stream]uint64{}}
}

// add counts times copies of datagram s whose reports belong to flows.
func (tr *Truth) add(g *Generator, s *slot, flows []uint32, times uint64) {
	st := &g.t.streams[s.stream]
	tr.Datagrams += times
	tr.Reports += uint64(s.n) * times
	tr.Hops += uint64(s.hops) * times
	tr.Bytes += uint64(s.len) * times
	tr.ByFormat[g.t.cfg.Format] += uint64(s.n) * times
	tr.ByNode[st.node] += uint64(s.n) * times
	tr.ByStream[Stream{st.node, st.hw}] += times
	for _, f := range flows {
		tr.ByFlow[f] += times
	}
}

// Truth returns what the first n datagrams of the stream hold.
func (g *Generator) Truth(n uint64) Truth {
	tr := g.newTruth()
	if g.t.cfg.Fresh {
		g.Walk(n, func(i uint64, b []byte, rs []telemetry.Report) error { return nil }, &tr)
		return tr
	}
	L := uint64(len(g.slots))
	laps, rem := n/L, n%L
	if laps > 0 {
		for i := range g.slots {
			s := &g.slots[i]
			tr.add(g, s, g.repFlows[s.rep:s.rep+uint32(s.n)], laps)
		}
	}
	for i := range g.slots[:rem] {
		s := &g.slots[i]
		tr.add(g, s, g.repFlows[s.rep:s.rep+uint32(s.n)], 1)
	}
	return tr
}

// DefaultDecoded returns the reports of the first n datagrams of the default stream over
// flows flows (0: the default's number), as a listener decodes them (the stream's own wire
// configuration): the reports a fabric sends, for benchmarks of what comes after the
// decoder. A datagram that does not decode, or decodes with errors, is an error.
func DefaultDecoded(flows int, n uint64) ([]telemetry.Report, error) {
	c := DefaultConfig()
	if flows > 0 {
		c.Flows = flows
	}
	g, err := New(c)
	if err != nil {
		return nil, err
	}
	dec, err := wire.NewDecoder(g.WireConfig())
	if err != nil {
		return nil, err
	}
	var rs []telemetry.Report
	err = g.Walk(n, func(i uint64, d []byte, _ []telemetry.Report) error {
		got, errs := dec.DecodeAll(g.Input(), d)
		if len(errs) != 0 {
			return fmt.Errorf("gen: datagram %d: %v", i, errs[0])
		}
		rs = append(rs, got...)
		return nil
	}, nil)
	return rs, err
}

// Walk rebuilds the first n datagrams of the stream, exactly as a Sender sends them, and
// calls fn with each and the reports it carries (both valid during the call only). It
// stops at fn's first error. When tr is not nil, Walk also counts into it. Walk encodes
// every datagram again: it is for tests and tools, not for the send path.
func (g *Generator) Walk(n uint64, fn func(i uint64, b []byte, rs []telemetry.Report) error, tr *Truth) error {
	var b builder
	var buf []byte
	L := uint64(len(g.slots))
	for i := uint64(0); i < n; i++ {
		if i == 0 || !g.t.cfg.Fresh && i%L == 0 {
			b.init(g.t, 0) // a lap of the ring repeats the stream's start
		}
		var d dgram
		var err error
		if buf, d, err = b.next(buf[:0]); err != nil {
			return fmt.Errorf("gen: encode datagram %d: %w", i, err)
		}
		if !g.t.cfg.Fresh {
			if seq := g.lapSeq(d, i/L); seq != d.seq {
				g.t.patch(buf, seq)
				for j := range b.rs[:d.n] {
					if b.rs[j].Format == telemetry.FormatDTA {
						b.rs[j].DTA.Seq = uint8(seq)
					} else {
						b.rs[j].Seq = seq
					}
				}
			}
			if lap := i / L; lap > 0 && g.t.format == telemetry.FormatLabel {
				shift := g.lapShift(lap)
				patchLabelTimes(buf, shift)
				for j := range b.rs[:d.n] {
					for k := range b.rs[j].LabelList() {
						it := &b.rs[j].Labels[k]
						it.IngressTS, it.EgressTS = (it.IngressTS+shift)&mask48, (it.EgressTS+shift)&mask48
						it.EnqTS += uint32(shift)
					}
				}
			}
		}
		if tr != nil {
			s := slot{len: uint32(len(buf)), n: uint16(d.n), stream: d.stream}
			for _, r := range b.rs[:d.n] {
				s.hops += uint16(r.NHops) + uint16(r.NLabels)
			}
			for _, p := range b.pos[:d.n] {
				tr.ByFlow[p/uint32(g.t.cfg.Hops)]++
			}
			tr.add(g, &s, nil, 1)
		}
		if err := fn(i, buf, b.rs[:d.n]); err != nil {
			return err
		}
	}
	return nil
}

// lapSeq is the sequence number of a ring datagram in lap lap: each lap continues its
// stream's sequence where the previous one ended, as a switch's would.
func (g *Generator) lapSeq(d dgram, lap uint64) uint32 {
	return (d.seq + uint32(lap)*g.lapSeqs[d.stream]) & g.t.seqMask
}

// lapShift is how far lap lap of the ring moves the virtual clock: the generated time of
// a lap's reports, lap times.
func (g *Generator) lapShift(lap uint64) uint64 {
	return lap * uint64(len(g.repFlows)) * uint64(g.t.cfg.Interval)
}

// The INT-label export's layout (docs/wire-dta-label.md): a 2-byte option whose second
// byte counts the 32-byte items; an item's ingress and egress (label) timestamps are 48
// bits at offsets 4 and 10, its enqueue timestamp 32 bits at 16.
const labelOption, labelItem = 2, 32

// patchLabelTimes moves the timestamps of an encoded INT-label export by d ns, as the
// export of the same packet d later would carry them. A ring's later laps do so, so that a
// collector keeping each port's newest item (INT-label Algorithm 4) takes every lap's
// items as new, as it would a switch's.
func patchLabelTimes(b []byte, d uint64) {
	for i := range int(b[1]) {
		it := b[labelOption+i*labelItem:]
		for _, off := range [...]int{4, 10} {
			v := uint64(binary.BigEndian.Uint16(it[off:]))<<32 | uint64(binary.BigEndian.Uint32(it[off+2:]))
			v = (v + d) & mask48
			binary.BigEndian.PutUint16(it[off:], uint16(v>>32))
			binary.BigEndian.PutUint32(it[off+2:], uint32(v))
		}
		binary.BigEndian.PutUint32(it[16:], binary.BigEndian.Uint32(it[16:])+uint32(d))
	}
}

// patch writes a sequence number into an encoded datagram.
func (t *topology) patch(b []byte, seq uint32) {
	switch {
	case t.format == telemetry.FormatTR05:
		binary.BigEndian.PutUint32(b[4:], seq)
	case t.format == telemetry.FormatTR10:
		binary.BigEndian.PutUint32(b[8:], seq)
	case t.format == telemetry.FormatTR20:
		w := binary.BigEndian.Uint32(b)
		binary.BigEndian.PutUint32(b, w&^(1<<22-1)|seq&(1<<22-1))
	case t.format == telemetry.FormatDTA && t.seqMask != 0:
		b[1] = uint8(seq) // the 3-byte base header: opcode, sequence number, flags
	}
}

// copyOut writes datagram i of a ring stream into dst (which must hold MaxLen bytes) and
// returns its length and the reports it carries. It allocates nothing.
func (g *Generator) copyOut(dst []byte, i uint64) (n int, reports int) {
	L := uint64(len(g.slots))
	s := &g.slots[i%L]
	n = copy(dst, g.ring[s.off:s.off+s.len])
	if lap := i / L; lap > 0 && g.t.seqMask != 0 {
		g.t.patch(dst[:n], g.lapSeq(dgram{stream: s.stream, seq: s.seq}, lap))
	} else if lap > 0 && g.t.format == telemetry.FormatLabel {
		patchLabelTimes(dst[:n], g.lapShift(lap))
	}
	return n, int(s.n)
}

// buildFresh appends the next datagram of a fresh stream to dst[:0]; the caller holds g.mu.
func (g *Generator) buildFresh(dst []byte) ([]byte, int, error) {
	b, d, err := g.fresh.next(dst[:0])
	return b, d.n, err
}
