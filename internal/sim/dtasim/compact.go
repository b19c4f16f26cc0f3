package dtasim

import (
	"runtime/debug"

	"github.com/intake-int/intake/internal/dta"
)

// kwSim is the Key-Write store a Monte Carlo writes key i (simKey, simValue) into and
// queries: the real store (realKW) or its compact model (compactKW), which give the same
// answer to every query (TestCompactMatchesStore).
type kwSim interface {
	insert(i int)
	// query answers the keys of indices ids into out[:len(ids)], t = 1.
	query(ids []int, out []dta.KWResult)
	// size is the real store's region in bytes (header and slots).
	size() int
	close()
}

// The stores a SimConfig can name.
const (
	StoreCompact = "compact" // the default ("")
	StoreReal    = "real"
)

func newKWSim(c SimConfig) (kwSim, error) {
	kc := dta.KWConfig{Layout: "default", Slots: c.Slots, MaxRedundancy: c.N, ChecksumBits: c.Bits, ValueBytes: c.ValueBytes, Threshold: 1}
	h := dta.KWHeader(kc, c.Seed)
	if c.Store == StoreReal {
		r, err := dta.AnonRegion(h)
		if err != nil {
			return nil, err
		}
		s, err := dta.NewKeyWrite(r)
		if err != nil {
			r.Close()
			return nil, err
		}
		m := &realKW{s: s, r: r, c: c}
		for j := range m.p {
			m.p[j] = m.k[j][:]
		}
		return m, nil
	}
	m := &compactKW{slots: make([]uint32, c.Slots), mask: uint64(c.Slots - 1), seed: c.Seed,
		cmask: uint32(uint64(1)<<c.Bits - 1), vbytes: c.ValueBytes, n: c.N, bytes: regionHeader + int(h.DataLen)}
	var zero [32]byte
	m.empty = image{check: uint32(dta.Hash64(c.Seed^csumXor, zero[:c.ValueBytes])) & m.cmask}
	return m, nil
}

// realKW is package dta's store in anonymous memory: 24 bytes a slot for a 5-hop path.
type realKW struct {
	s *dta.KeyWrite
	r *dta.Region
	c SimConfig
	k [queryGroup][8]byte
	p [queryGroup][]byte // p[j] is k[j][:]
}

const queryGroup = 64

func (m *realKW) insert(i int) {
	k, v := simKey(m.c.Seed, i), simValue(m.c.Seed, i, m.c.ValueBytes)
	m.s.Insert(k[:], v[:m.c.ValueBytes], m.c.N)
}

// query goes through QueryMany, which keeps the misses of a group's slots in flight together.
func (m *realKW) query(ids []int, out []dta.KWResult) {
	for j, i := range ids {
		m.k[j] = simKey(m.c.Seed, i)
	}
	m.s.QueryMany(m.p[:len(ids)], m.c.N, 1, out)
}

func (m *realKW) size() int { return m.r.Size() }
func (m *realKW) close()    { m.r.Close() }

// compactKW is the same store in 4 bytes a slot: a simulated key and its value are functions
// of the key's index, so a slot holds only the index of the key that wrote it last, plus 1
// (0: never written), and the checksum word and value a reader would see are rebuilt from
// it. Addresses, checksums and the vote are the default layout's (docs/dta-layout.md). At
// the aging figure's 2^27 slots it takes 512 MiB where the real store takes 3 GiB.
type compactKW struct {
	slots  []uint32
	mask   uint64
	seed   uint64
	cmask  uint32
	vbytes int
	n      int
	bytes  int
	empty  image // what a never-written slot reads as: a zero checksum word and value
	sink   uint32
}

// regionHeader is the 4 KiB header of a store's region, in the real store's size.
const regionHeader = 4096

// The default layout's hashing (docs/dta-layout.md), as package dta computes it: copy n of
// key hash h lives at fmix64(h + (n+1)·φ) mod M; the checksum is the top 32 bits of
// fmix64(h ^ csumXor), XORed with the low 32 bits of Hash64(seed ^ csumXor, value).
const (
	phi     = 0x9E3779B97F4A7C15
	csumXor = 0xC2B2AE3D27D4EB4F
)

func slotOf(h uint64, n int, mask uint64) uint64 { return mix64(h+uint64(n+1)*phi) & mask }
func checkOf(h uint64) uint32                    { return uint32(mix64(h^csumXor) >> 32) }

// image is what a slot reads as: its value, and the key checksum a reader recovers from it
// (the stored checksum XOR the value's hash, cut to b bits). Two slots read alike when their
// images are equal: the stored checksum is a function of both.
type image struct {
	check uint32
	v     [32]byte
}

func (m *compactKW) image(idx uint32) image {
	if idx == 0 {
		return m.empty
	}
	i := int(idx - 1)
	k := simKey(m.seed, i)
	im := image{v: simValue(m.seed, i, m.vbytes)}
	clear(im.v[m.vbytes:])
	im.check = checkOf(dta.Hash64(m.seed, k[:])) & m.cmask
	return im
}

func (m *compactKW) insert(i int) {
	k := simKey(m.seed, i)
	h := dta.Hash64(m.seed, k[:])
	for j := 0; j < m.n; j++ {
		m.slots[slotOf(h, j, m.mask)] = uint32(i + 1)
	}
}

func (m *compactKW) query(ids []int, out []dta.KWResult) {
	var hs [queryGroup]uint64
	var sink uint32
	for j, i := range ids { // every slot of the group loaded first: the misses overlap
		k := simKey(m.seed, i)
		hs[j] = dta.Hash64(m.seed, k[:])
		for c := 0; c < m.n; c++ {
			sink += m.slots[slotOf(hs[j], c, m.mask)]
		}
	}
	m.sink = sink
	for j := range ids {
		out[j] = m.answer(hs[j])
	}
}

// answer is the real store's query: the slots whose checksum matches the key's are the
// candidates, and the store's own vote over their images decides (t = 1).
func (m *compactKW) answer(h uint64) dta.KWResult {
	want := checkOf(h) & m.cmask
	var cands [8]image
	nc := 0
	for c := 0; c < m.n; c++ {
		if im := m.image(m.slots[slotOf(h, c, m.mask)]); im.check == want {
			cands[nc] = im
			nc++
		}
	}
	r := dta.KWResult{ValueLen: m.vbytes, Candidates: nc}
	if best := dta.Plurality(cands[:nc], 1, &r); best >= 0 {
		r.Value = cands[best].v
	}
	return r
}

func (m *compactKW) size() int { return m.bytes }

// close gives a large table back to the system at once: the aging figure's runs come one
// after another, and two tables of 512 MiB at a time would double the peak.
func (m *compactKW) close() {
	large := len(m.slots) >= 1<<24
	m.slots = nil
	if large {
		debug.FreeOSMemory()
	}
}
