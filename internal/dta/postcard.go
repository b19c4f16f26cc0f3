package dta

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Postcarding (DTA §4, A.2, A.6): the B postcards of a flow are gathered by the translator
// and written as one chunk of B b-bit slots to N chunks; hop i of flow x holds
// checksum(x, i) XOR g(v), and hops without a postcard hold the encoding of a blank value.
// A query decodes a chunk only when every slot XOR checksum(x, i) is g of a known value or
// of blank, through a lookup table of g over V ∪ {blank}: that is what makes wrong answers
// as rare as ((|V|+1)·2^-b)^B (eq. 8).
//
// V is shared through the region: a table of known values after the chunks, to which the
// translator adds every value it writes, so that a query process builds the same lookup
// table. Hash functions (docs/dta-layout.md), with h = Hash64(seed, key):
//   chunk j   = fmix64((h ^ 0x5043) + (j+1)·φ) mod C
//   checksum  = top 32 bits of fmix64(h + (i+1)·0xD6E8FEB86659FD93), cut to b bits
//   g(v)      = low 32 bits of hashU64(seed ^ 0x67, v), cut to b bits; blank is v = 2^32

// MaxHops is the largest postcard hop bound B.
const MaxHops = 16

const (
	pcChunkXor = 0x5043
	pcCheckMul = 0xD6E8FEB86659FD93
	pcGXor     = 0x67
	blankValue = 1 << 32
)

// Postcard is a Postcarding store over a region.
type Postcard struct {
	R      *Region
	base   unsafe.Pointer // &R.Data[0]: chunk offsets are masked, so never out of range
	mask   uint64
	stride uint64
	hops   int
	n      int
	bmask  uint32
	seed   uint64
	vals   uint64 // offset of the known-value table
	vmask  uint64
	gBlank uint32

	lk      atomic.Pointer[lookup]
	rebuild sync.Mutex
}

// PostcardHeader is the region header for a Postcarding configuration.
func PostcardHeader(c PostcardConfig, seed uint64) Header {
	h := Header{Primitive: PrimPostcard, Seed: seed, Slots: uint64(c.Chunks), Hops: uint32(c.Hops), MaxN: uint32(c.Redundancy),
		CheckBits: uint32(c.SlotBits), ValueBytes: 4, SlotBytes: uint32((4*c.Hops + 7) &^ 7), Capacity: uint64(c.Values)}
	h.DataLen = h.Slots*uint64(h.SlotBytes) + h.Capacity*8
	return h
}

// NewPostcard reads a Postcarding store's geometry from its region.
func NewPostcard(r *Region) (*Postcard, error) {
	if err := r.checkAs(PrimPostcard); err != nil {
		return nil, err
	}
	h := &r.Hdr
	p := &Postcard{R: r, base: unsafe.Pointer(unsafe.SliceData(r.Data)), mask: h.Slots - 1, stride: uint64(h.SlotBytes), hops: int(h.Hops), n: int(h.MaxN),
		bmask: uint32(uint64(1)<<h.CheckBits - 1), seed: h.Seed, vals: h.Slots * uint64(h.SlotBytes), vmask: h.Capacity - 1}
	p.gBlank = p.g(blankValue)
	return p, nil
}

// Hops is B.
func (p *Postcard) Hops() int { return p.hops }

// Seed is the store's hash seed.
func (p *Postcard) Seed() uint64 { return p.seed }

func (p *Postcard) g(v uint64) uint32 { return uint32(hashU64(p.seed^pcGXor, v)) & p.bmask }
func (p *Postcard) check(h uint64, i int) uint32 {
	return uint32(fmix64(h+uint64(i+1)*pcCheckMul)>>32) & p.bmask
}
func (p *Postcard) chunk(h uint64, j int) uint64 { return slotOf(h^pcChunkXor, j, p.mask) * p.stride }

// Learn adds v to the shared set of known values V. It does not allocate; it returns false
// when the table is full.
func (p *Postcard) Learn(v uint32) bool {
	e := uint64(1)<<32 | uint64(v)
	i := hashU64(p.seed, uint64(v)) & p.vmask
	for probes := uint64(0); probes <= p.vmask; probes++ {
		w := p.R.atom(p.vals + i*8)
		switch cur := w.Load(); cur {
		case e:
			return true
		case 0:
			if w.CompareAndSwap(0, e) {
				p.R.counter(offValCount).Add(1)
				return true
			}
			if w.Load() == e {
				return true
			}
		}
		i = (i + 1) & p.vmask
	}
	return false
}

// Known is |V|, the number of known values: the region's counter, which another process
// writes, bounded by the table's capacity.
func (p *Postcard) Known() uint64 { return min(p.R.counter(offValCount).Load(), p.vmask+1) }

// Write writes flow key's chunk: vals[i] for the hops whose bit is in present, blank for the
// others. It does not allocate.
func (p *Postcard) Write(key []byte, vals *[MaxHops]uint32, present uint32) {
	p.writeHashed(Hash64(p.seed, key), vals, present)
}

func (p *Postcard) writeHashed(h uint64, vals *[MaxHops]uint32, present uint32) {
	var img [MaxHops * 4]byte
	for i := 0; i < p.hops; i++ {
		gv := p.gBlank
		if present&(1<<i) != 0 {
			gv = p.g(uint64(vals[i]))
		}
		binary.LittleEndian.PutUint32(img[4*i:], p.check(h, i)^gv)
	}
	words := int(p.stride / 8)
	for j := 0; j < p.n; j++ {
		off := p.chunk(h, j)
		for k := 0; k < words; k++ {
			*p.R.u64(off + uint64(8*k)) = binary.LittleEndian.Uint64(img[8*k:])
		}
	}
}

// PCResult is a Postcarding answer: Hops[i] for the hops in Present, blank elsewhere.
type PCResult struct {
	Status  string
	NHops   int // B
	Present uint32
	Hops    [MaxHops]uint32
	Valid   int // chunks that decoded
}

// lookup is the inverse of g over V ∪ {blank}: V's values with their encodings, g<<32 | v,
// sorted by g's top bits (a radix sort), and the start of each bucket of those bits, one or
// two values to a bucket, so that a slot's candidates are a word or two. It takes at most 12
// bytes per value of V, built by a sequential pass over the region's table and two
// or three radix passes: the hash table of (g, value) it replaced took 48 bytes per value,
// and 3 GiB and 25 s of scattered probes to build at V's largest size (2^26), on the
// query path.
type lookup struct {
	known  uint64 // |V| it was built from
	gBlank uint32
	shift  uint     // an encoding's bucket is g >> shift
	starts []uint32 // bucket i is es[starts[i]:starts[i+1]]
	es     []uint64
}

const (
	lkValue = 0
	lkBlank = 1
	lkClash = 2
)

// get returns the entry for encoding g: 0 when g is nobody's encoding, else 1<<40 | kind<<34
// | v, kind lkValue, lkBlank, or lkClash when two values (or a value and blank) share g.
func (t *lookup) get(g uint32) uint64 {
	var r uint64
	if g == t.gBlank {
		r = 1<<40 | lkBlank<<34
	}
	b := g >> t.shift
	for _, e := range t.es[t.starts[b]:t.starts[b+1]] {
		if uint32(e>>32) != g {
			continue
		}
		if v := 1<<40 | uint64(uint32(e)); r == 0 {
			r = v
		} else if r != v {
			return 1<<40 | lkClash<<34
		}
	}
	return r
}

// lookupBytes is the most the lookup tables of a table of capacity values take at once: a
// rebuild sorts the new one's entries through a second array (8 bytes a value each, and its
// bucket starts, 4) while queries may still hold the old one (12 bytes a value).
func lookupBytes(capacity int64) int64 { return 32*capacity + 16 }

// table returns the lookup table, rebuilt when V has grown.
func (p *Postcard) table() *lookup {
	known := p.Known()
	if t := p.lk.Load(); t != nil && t.known == known {
		return t
	}
	p.rebuild.Lock()
	defer p.rebuild.Unlock()
	if t := p.lk.Load(); t != nil && t.known == known {
		return t
	}
	// Size the table from the entries actually in the region (at most its capacity), never
	// from the counter: another process writes both, and a counter that disagrees with the
	// entries (a crashed writer, or a crafted file) would make the table too small or
	// enormous.
	entries := uint64(0)
	for i := uint64(0); i <= p.vmask; i++ {
		if p.R.load64(p.vals+i*8) != 0 {
			entries++
		}
	}
	es := make([]uint64, 0, entries)
	for i := uint64(0); i <= p.vmask && uint64(len(es)) < entries; i++ {
		if e := p.R.load64(p.vals + i*8); e != 0 {
			v := uint32(e)
			es = append(es, uint64(p.g(uint64(v)))<<32|uint64(v))
		} // entries added concurrently past the count wait for the next rebuild
	}
	b := uint(bits.Len32(p.bmask))
	kb := min(b, uint(max(bits.Len64(entries), 1)-1)) // one or two entries a bucket
	t := &lookup{known: known, gBlank: p.gBlank, shift: b - kb, starts: make([]uint32, 1<<kb+1)}
	t.es = radixSort(es, make([]uint64, len(es)), 32+t.shift, 32+b)
	for _, e := range t.es {
		t.starts[uint32(e>>32)>>t.shift+1]++
	}
	for i := 1; i < len(t.starts); i++ {
		t.starts[i] += t.starts[i-1]
	}
	p.lk.Store(t)
	return t
}

// radixSort sorts es by their bits lo to hi (LSD, 11 bits a pass, through tmp, as long as
// es) and returns the sorted one of the two.
func radixSort(es, tmp []uint64, lo, hi uint) []uint64 {
	for shift := lo; shift < hi; shift += 11 {
		mask := uint64(1)<<min(11, hi-shift) - 1
		var at [1<<11 + 1]int
		for _, e := range es {
			at[(e>>shift)&mask+1]++
		}
		for i := 1; i < len(at); i++ {
			at[i] += at[i-1]
		}
		for _, e := range es {
			d := (e >> shift) & mask
			tmp[at[d]] = e
			at[d]++
		}
		es, tmp = tmp, es
	}
	return es
}

// Query decodes flow key's chunks. It does not allocate once the lookup table is current.
func (p *Postcard) Query(key []byte) PCResult {
	var r PCResult
	p.queryHashed(p.table(), Hash64(p.seed, key), &r)
	return r
}

// QueryMany answers keys[i] into out[i] (len(out) ≥ len(keys)). It has the answers of Query
// but more queries in flight: a query waits on one or two cache misses per chunk, so keys
// are taken a group at a time, every chunk of the group is touched first, and then the
// chunks, in cache by then, are decoded.
func (p *Postcard) QueryMany(keys [][]byte, out []PCResult) {
	t := p.table()
	var hs [queryGroup]uint64
	for len(keys) > 0 {
		g := min(len(keys), queryGroup)
		for i := range g {
			hs[i] = Hash64(p.seed, keys[i])
			for j := 0; j < p.n; j++ {
				off := p.chunk(hs[i], j)
				atomic.LoadUint64(p.word(off))
				atomic.LoadUint64(p.word(off + p.stride - 8)) // a chunk may straddle two lines
			}
		}
		for i := range g {
			p.queryHashed(t, hs[i], &out[i])
		}
		keys, out = keys[g:], out[g:]
	}
}

// queryGroup is how many queries QueryMany keeps in flight: two misses each, within what a
// core tracks at once (about 20 outstanding misses on current x86 cores).
const queryGroup = 8

func (p *Postcard) word(off uint64) *uint64 { return (*uint64)(unsafe.Add(p.base, off)) }

func (p *Postcard) queryHashed(t *lookup, h uint64, r *PCResult) {
	*r = PCResult{Status: NotFound, NHops: p.hops}
	var chk [MaxHops]uint32
	for i := 0; i < p.hops; i++ {
		chk[i] = p.check(h, i)
	}
	// Every word of every chunk is loaded before any is decoded: the decode branches on
	// each hop, and loads behind a mispredicted branch would wait for the first chunk's
	// miss before the second chunk's could start.
	nw := (p.hops + 1) / 2
	var ws [8][MaxHops / 2]uint64
	for j := 0; j < p.n; j++ {
		off := p.chunk(h, j)
		for k := 0; k < nw; k++ {
			ws[j][k] = atomic.LoadUint64(p.word(off + uint64(8*k)))
		}
	}
	for j := 0; j < p.n; j++ {
		var vals [MaxHops]uint32
		var present uint32
		ok := true
		for i := 0; i < p.hops && ok; i++ {
			s := uint32(ws[j][i/2] >> (32 * (i & 1)))
			e := t.get((s ^ chk[i]) & p.bmask)
			switch {
			case e == 0 || (e>>34)&3 == lkClash:
				ok = false
			case (e>>34)&3 == lkValue:
				vals[i], present = uint32(e), present|1<<i
			}
		}
		if !ok || present == 0 {
			continue
		}
		r.Valid++
		if r.Valid == 1 {
			r.Status, r.Hops, r.Present = Found, vals, present
		} else if r.Present != present || r.Hops != vals {
			r.Status = Ambiguous
		}
	}
	if r.Status != Found {
		r.Present, r.Hops = 0, [MaxHops]uint32{}
	}
}

// cacheEntry is one translator cache line: a flow's postcards so far.
type cacheEntry struct {
	lock    atomic.Uint32
	used    bool
	keyLen  uint8
	pathLen uint8
	seen    uint32
	h       uint64
	key     [40]byte
	vals    [MaxHops]uint32
}

// PostcardCache is the translator-side cache (DTA §4; the prototype's 32,768 entries indexed
// by a key hash). An entry is written as one chunk when it holds B postcards, when it holds
// the path length the egress switch reported, or when another flow takes its line (an early
// emission). Entries are locked one at a time with a spin lock: workers rarely meet on one.
type PostcardCache struct {
	P                             *Postcard
	mask                          uint64
	ents                          []cacheEntry
	Complete, Early, Flushed, Ovf atomic.Uint64
	down                          *atomic.Pointer[FaultError] // the stores' fault (fault.go); nil: none to watch
}

// NewCache makes a cache of size entries (a power of two).
func (p *Postcard) NewCache(size int) *PostcardCache {
	return &PostcardCache{P: p, mask: uint64(size - 1), ents: make([]cacheEntry, size)}
}

// MaxCacheKey is the longest postcard key the cache holds (an IPv6 5-tuple is 37 bytes).
const MaxCacheKey = 40

// Add records the postcard of hop (1-based, ≤ B) with value v for key; pathLen > 0 is the
// path length when the reporter knows it. It does not allocate.
func (c *PostcardCache) Add(key []byte, hop int, v uint32, pathLen int) {
	p := c.P
	p.Learn(v)
	h := Hash64(p.seed, key)
	e := c.lock(h)
	complete, early := c.add(e, key, h, hop, v, pathLen)
	e.lock.Store(0)
	if complete > 0 {
		c.Complete.Add(complete)
	}
	if early > 0 {
		c.Early.Add(early)
	}
}

// AddPath is Add of the postcards of hops 1 to B whose bit is in present (hop i+1's value
// is vals[i]), in hop order, all with path length pathLen, under one lock. h is the key's
// hash (Hash64 with the store's seed, Postcard.Seed); the caller has learned the values
// (Postcard.Learn) already. It returns the chunks written complete and early, for the
// caller to add to Complete and Early (the translator does once per batch). It does not
// allocate.
func (c *PostcardCache) AddPath(key []byte, h uint64, vals *[MaxHops]uint32, present uint32, pathLen int) (complete, early uint64) {
	e := c.lock(h)
	if pathLen > 0 && present == c.P.fullMask(pathLen) && !(e.used && e.h == h && bytes.Equal(e.key[:e.keyLen], key)) {
		// The whole path, and no postcard of this key waiting: the entry the adds would fill
		// is written at the last of them, so the path is written at once (an INT-MD trace).
		if e.used {
			c.P.writeHashed(e.h, &e.vals, e.seen)
			early++
			e.used = false
		}
		c.P.writeHashed(h, vals, present)
		e.lock.Store(0)
		return 1, early
	}
	complete, early = c.addHops(e, key, h, vals, present, pathLen)
	e.lock.Store(0)
	return complete, early
}

// fullMask is the postcards of a whole path of pathLen hops (0: unknown, B).
func (p *Postcard) fullMask(pathLen int) uint32 {
	if pathLen <= 0 {
		return uint32(1)<<p.hops - 1
	}
	return uint32(1)<<min(pathLen, p.hops) - 1
}

// addHops is AddPath's work on entry e, locked by the caller, a hop at a time.
func (c *PostcardCache) addHops(e *cacheEntry, key []byte, h uint64, vals *[MaxHops]uint32, present uint32, pathLen int) (complete, early uint64) {
	for i := 0; present != 0; i++ {
		if present&1 != 0 {
			c1, e1 := c.add(e, key, h, i+1, vals[i], pathLen)
			complete, early = complete+c1, early+e1
		}
		present >>= 1
	}
	return complete, early
}

// lock takes the spin lock of key hash h's entry and returns the entry.
func (c *PostcardCache) lock(h uint64) *cacheEntry {
	e := &c.ents[(h>>24)&c.mask]
	for !e.lock.CompareAndSwap(0, 1) {
		c.checkDown()
	}
	return e
}

// checkDown panics errOffline, for the caller's guard (fault.go), when the stores went
// offline: a writer that faulted holding an entry's lock never releases it.
func (c *PostcardCache) checkDown() {
	if c.down != nil && c.down.Load() != nil {
		panic(errOffline)
	}
}

// add is Add's work on entry e, which the caller has locked; it returns the chunks it
// wrote complete and early.
func (c *PostcardCache) add(e *cacheEntry, key []byte, h uint64, hop int, v uint32, pathLen int) (complete, early uint64) {
	p := c.P
	if e.used && (e.h != h || !bytes.Equal(e.key[:e.keyLen], key)) {
		p.writeHashed(e.h, &e.vals, e.seen)
		early++
		e.used = false
	}
	if !e.used {
		e.used, e.h, e.keyLen, e.seen, e.pathLen = true, h, uint8(copy(e.key[:], key)), 0, 0
	}
	e.vals[hop-1] = v
	e.seen |= 1 << (hop - 1)
	if pathLen > 0 {
		e.pathLen = uint8(min(pathLen, p.hops))
	}
	if full := p.fullMask(int(e.pathLen)); e.seen&full == full {
		p.writeHashed(h, &e.vals, e.seen)
		complete++
		e.used = false
	}
	return complete, early
}

// Flush writes every partial entry (at stop: nothing is left in the cache).
func (c *PostcardCache) Flush() {
	for i := range c.ents {
		e := &c.ents[i]
		for !e.lock.CompareAndSwap(0, 1) {
			c.checkDown()
		}
		if e.used {
			c.P.writeHashed(e.h, &e.vals, e.seen)
			c.Flushed.Add(1)
			e.used = false
		}
		e.lock.Store(0)
	}
}

// chunkAddrs appends the addresses of the lines of key hash h's chunks to addrs[na:] (for
// prefetching) and returns the new count.
func (p *Postcard) chunkAddrs(h uint64, addrs []uintptr, na int) int {
	for j := 0; j < p.n && na+1 < len(addrs); j++ {
		off := p.chunk(h, j)
		addrs[na] = uintptr(p.base) + uintptr(off)
		na++
		if (off+p.stride-1)/64 != off/64 {
			addrs[na] = uintptr(p.base) + uintptr(off+p.stride-1)
			na++
		}
	}
	return na
}

// entryAddrs appends the addresses of the lines of key hash h's cache entry to addrs[na:]
// (for prefetching) and returns the new count.
func (c *PostcardCache) entryAddrs(h uint64, addrs []uintptr, na int) int {
	e := uintptr(unsafe.Pointer(&c.ents[(h>>24)&c.mask]))
	for l := e &^ 63; l < e+unsafe.Sizeof(cacheEntry{}) && na < len(addrs); l += 64 {
		addrs[na] = l
		na++
	}
	return na
}
