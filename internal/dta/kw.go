package dta

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"
)

// Key-Write (DTA §4 and A.1, A.5; DART §3): N copies of (checksum, value) at N hashed slots,
// written without locks; a query gathers the N slots, keeps those whose checksum matches
// and answers by plurality vote, optionally requiring T votes.
//
// In the default layout the stored checksum is the key's b-bit checksum XOR a hash of the
// value (the "XOR each value with a pseudorandom value" of A.5): a slot torn by two racing
// writers — one key's checksum word beside another's value words — then fails the check
// instead of answering with a mixed value. The error analysis is unchanged: a foreign slot
// matches with probability 2^-b either way.

// Query statuses, as in the HTTP API.
const (
	Found     = "found"
	NotFound  = "not_found"
	Ambiguous = "ambiguous"
)

// KWResult is a Key-Write answer. Value holds ValueLen bytes (right-aligned, big-endian).
type KWResult struct {
	Status     string
	Value      [32]byte
	ValueLen   int
	Votes      int // votes for the winner (or the top count when ambiguous)
	Candidates int // slots whose checksum matched
}

// Bytes returns the value's bytes.
func (r *KWResult) Bytes() []byte { return r.Value[:r.ValueLen] }

// KeyWrite is a Key-Write store over a region.
type KeyWrite struct {
	R      *Region
	base   unsafe.Pointer // &R.Data[0]: slot offsets are masked, so never out of range
	mask   uint64
	stride uint64
	maxN   int
	cmask  uint32
	vbytes int
	compat bool
	seed   uint64
}

// KWHeader is the region header for a Key-Write configuration.
func KWHeader(c KWConfig, seed uint64) Header {
	h := Header{Primitive: PrimKeyWrite, Seed: seed, Slots: uint64(c.Slots), MaxN: uint32(c.MaxRedundancy),
		CheckBits: uint32(c.ChecksumBits), ValueBytes: uint32(c.ValueBytes)}
	if c.Layout == "compat" {
		h.Layout, h.Hash, h.Seed = LayoutCompat, HashCRC32, 0
	}
	h.SlotBytes = uint32((4 + c.ValueBytes + 7) &^ 7)
	h.DataLen = h.Slots * uint64(h.SlotBytes)
	return h
}

// NewKeyWrite reads a Key-Write store's geometry from its region.
func NewKeyWrite(r *Region) (*KeyWrite, error) {
	if err := r.checkAs(PrimKeyWrite); err != nil {
		return nil, err
	}
	h := &r.Hdr
	return &KeyWrite{R: r, base: unsafe.Pointer(unsafe.SliceData(r.Data)), mask: h.Slots - 1, stride: uint64(h.SlotBytes), maxN: int(h.MaxN),
		cmask: uint32(uint64(1)<<h.CheckBits - 1), vbytes: int(h.ValueBytes), compat: h.Layout == LayoutCompat, seed: h.Seed}, nil
}

// MaxN is the store's maximum redundancy.
func (s *KeyWrite) MaxN() int { return s.maxN }

// ValueBytes is the value width.
func (s *KeyWrite) ValueBytes() int { return s.vbytes }

// Compat reports whether the store uses the prototype's layout.
func (s *KeyWrite) Compat() bool { return s.compat }

var errKeyLen = errors.New("compat layout: keys are 4 bytes")

// word is the 8-byte word at off in the data area.
func (s *KeyWrite) word(off uint64) *uint64 { return (*uint64)(unsafe.Add(s.base, off)) }

// valueMix is the hash XORed into the default layout's checksum.
func (s *KeyWrite) valueMix(v []byte) uint32 { return uint32(Hash64(s.seed^csumXor, v)) }

// Insert writes key → value as n copies (1 ≤ n ≤ MaxN, checked by the caller). value is
// right-aligned into the value width; a longer value keeps its last ValueBytes bytes. It does
// not allocate.
//
// Slots of one word (values up to 4 bytes: the compat layout and the DTA wire's default)
// take a path that builds the word in registers: the stores to random slots miss the cache,
// and every store to the stack queues behind them in the store buffer, so the fewer stores
// an insert makes besides its N slot writes, the more inserts are in flight at once.
func (s *KeyWrite) Insert(key, value []byte, n int) error {
	if len(value) > s.vbytes {
		value = value[len(value)-s.vbytes:]
	}
	if s.compat {
		if len(key) != 4 {
			return errKeyLen
		}
		csum := compatKey(key)
		w := uint64(csum) | valueWord(value, 4)<<32
		for i := 0; i < n; i++ {
			*s.word(uint64(compatSlot(csum, i)) & s.mask * 8) = w
		}
		return nil
	}
	h := Hash64(s.seed, key)
	if s.stride == 8 {
		vw := valueWord(value, s.vbytes)
		w := uint64((checkOf(h)^uint32(hashTail(s.seed^csumXor, vw, s.vbytes)))&s.cmask) | vw<<32
		for i := 0; i < n; i++ {
			*s.word(slotOf(h, i, s.mask) * 8) = w
		}
		return nil
	}
	var img [40]byte // checksum word + value, as stored
	vb := img[4 : 4+s.vbytes]
	copy(vb[s.vbytes-len(value):], value)
	binary.LittleEndian.PutUint32(img[:4], (checkOf(h)^s.valueMix(vb))&s.cmask)
	s.write(h, n, &img)
	return nil
}

// HashKey is the key hash Insert and Query compute (default layout; the compat layout's
// keys are hashed by CRC and have no such hash). A caller that writes one key to several
// stores of the same seed hashes it once.
func (s *KeyWrite) HashKey(key []byte) uint64 { return Hash64(s.seed, key) }

// Seed is the store's hash seed.
func (s *KeyWrite) Seed() uint64 { return s.seed }

// InsertHashed is Insert of a key whose hash (HashKey) is h, in the default layout.
func (s *KeyWrite) InsertHashed(h uint64, value []byte, n int) {
	if len(value) > s.vbytes {
		value = value[len(value)-s.vbytes:]
	}
	if s.stride == 8 {
		vw := valueWord(value, s.vbytes)
		w := uint64((checkOf(h)^uint32(hashTail(s.seed^csumXor, vw, s.vbytes)))&s.cmask) | vw<<32
		for i := 0; i < n; i++ {
			*s.word(slotOf(h, i, s.mask) * 8) = w
		}
		return
	}
	var img [40]byte // checksum word + value, as stored
	vb := img[4 : 4+s.vbytes]
	copy(vb[s.vbytes-len(value):], value)
	binary.LittleEndian.PutUint32(img[:4], (checkOf(h)^s.valueMix(vb))&s.cmask)
	s.write(h, n, &img)
}

// valueWord is the little-endian word of value (at most w ≤ 4 bytes) right-aligned into w
// bytes: the value bytes of a one-word slot.
func valueWord(value []byte, w int) uint64 {
	if len(value) == 0 {
		return 0
	}
	return loadTail(value) << (8 * (w - len(value)))
}

// write stores the slot image into copies 0..n-1. The first word (checksum and the first
// value bytes) goes last, so that a reader sees a new checksum only with most of its value;
// the value-mixed checksum catches the rest.
func (s *KeyWrite) write(h uint64, n int, img *[40]byte) {
	words := int(s.stride / 8)
	w0 := binary.LittleEndian.Uint64(img[:8])
	for i := 0; i < n; i++ {
		off := slotOf(h, i, s.mask) * s.stride
		for j := 1; j < words; j++ {
			*s.word(off + uint64(8*j)) = binary.LittleEndian.Uint64(img[8*j:])
		}
		*s.word(off) = w0
	}
}

// Query answers key with threshold t (0: 1), gathering n slots (0: MaxN). It does not
// allocate.
func (s *KeyWrite) Query(key []byte, n, t int) (KWResult, error) {
	if n <= 0 || n > s.maxN {
		n = s.maxN
	}
	if s.compat {
		if len(key) != 4 {
			return KWResult{}, errKeyLen
		}
		return s.queryCompat(compatKey(key), n, t), nil
	}
	return s.queryHashed(Hash64(s.seed, key), n, t), nil
}

// QueryMany answers keys[i] into out[i] (len(out) ≥ len(keys)) with Query's answers, but
// with more queries in flight: each waits on N cache misses, so keys are taken a group at a
// time, every slot of the group is touched first, and then the slots, in cache by then, are
// read and voted on. It does not allocate.
func (s *KeyWrite) QueryMany(keys [][]byte, n, t int, out []KWResult) error {
	if n <= 0 || n > s.maxN {
		n = s.maxN
	}
	var hs [queryGroup]uint64
	for len(keys) > 0 {
		g := min(len(keys), queryGroup)
		for i := range g {
			if s.compat {
				if len(keys[i]) != 4 {
					return errKeyLen
				}
				hs[i] = uint64(compatKey(keys[i]))
				for j := 0; j < n; j++ {
					atomic.LoadUint64(s.word(uint64(compatSlot(uint32(hs[i]), j)) & s.mask * 8))
				}
				continue
			}
			hs[i] = Hash64(s.seed, keys[i])
			for j := 0; j < n; j++ {
				off := slotOf(hs[i], j, s.mask) * s.stride
				atomic.LoadUint64(s.word(off))
				atomic.LoadUint64(s.word(off + s.stride - 8)) // a slot may straddle two lines
			}
		}
		for i := range g {
			if s.compat {
				out[i] = s.queryCompat(uint32(hs[i]), n, t)
			} else {
				out[i] = s.queryHashed(hs[i], n, t)
			}
		}
		keys, out = keys[g:], out[g:]
	}
	return nil
}

func (s *KeyWrite) queryCompat(csum uint32, n, t int) KWResult {
	var ws [8]uint64
	for i := 0; i < n; i++ { // every load before any compare: the cache misses overlap
		ws[i] = atomic.LoadUint64(s.word(uint64(compatSlot(csum, i)) & s.mask * 8))
	}
	nc := 0
	for i := 0; i < n; i++ {
		if uint32(ws[i]) == csum {
			ws[nc] = ws[i]
			nc++
		}
	}
	return s.voteWords(&ws, nc, t)
}

func (s *KeyWrite) queryHashed(h uint64, n, t int) KWResult {
	want := checkOf(h) & s.cmask
	if s.stride == 8 {
		var ws [8]uint64
		for i := 0; i < n; i++ { // every load before any compare: the cache misses overlap
			ws[i] = atomic.LoadUint64(s.word(slotOf(h, i, s.mask) * 8))
		}
		vmask := uint64(1)<<(8*s.vbytes) - 1
		nc := 0
		for i := 0; i < n; i++ {
			w := ws[i]
			if (uint32(w)^uint32(hashTail(s.seed^csumXor, w>>32&vmask, s.vbytes)))&s.cmask == want {
				ws[nc] = w
				nc++
			}
		}
		return s.voteWords(&ws, nc, t)
	}
	var cands [8][40]byte
	nc := 0
	words := int(s.stride / 8)
	for i := 0; i < n; i++ {
		off := slotOf(h, i, s.mask) * s.stride
		c := &cands[nc]
		for j := 0; j < words; j++ {
			binary.LittleEndian.PutUint64(c[8*j:], atomic.LoadUint64(s.word(off+uint64(8*j))))
		}
		if (binary.LittleEndian.Uint32(c[:4])^s.valueMix(c[4:4+s.vbytes]))&s.cmask == want {
			nc++
		}
	}
	r := KWResult{ValueLen: s.vbytes, Candidates: nc}
	if best := Plurality(cands[:nc], t, &r); best >= 0 {
		copy(r.Value[:], cands[best][4:4+s.vbytes])
	}
	return r
}

// voteWords is the vote over one-word slot images.
func (s *KeyWrite) voteWords(ws *[8]uint64, nc, t int) KWResult {
	r := KWResult{ValueLen: s.vbytes, Candidates: nc}
	if best := Plurality(ws[:nc], t, &r); best >= 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], ws[best])
		copy(r.Value[:], b[4:4+s.vbytes])
	}
	return r
}

// Plurality is the vote of A.5 over the slot images whose checksum matched: it sets r's
// Status and Votes and returns the winner's index, or -1 when nothing is found (no
// candidate: not_found; a tie for the most votes, or fewer than t votes: ambiguous).
// Exported for sim/dtasim's compact model of the store, which votes over its own images.
func Plurality[T comparable](c []T, t int, r *KWResult) int {
	t = max(t, 1)
	r.Status = NotFound
	if len(c) == 0 {
		return -1
	}
	best, bestVotes, tie := -1, 0, false
	for i := range c {
		v := 0
		for j := range c {
			if c[i] == c[j] {
				v++
			}
		}
		switch {
		case v > bestVotes:
			best, bestVotes, tie = i, v, false
		case v == bestVotes && c[i] != c[best]:
			tie = true
		}
	}
	r.Votes = bestVotes
	if tie || bestVotes < t {
		r.Status = Ambiguous
		return -1
	}
	r.Status = Found
	return best
}

// slotAddrs appends the addresses of the lines of key hash h's MaxN slots (default layout)
// to addrs[na:] (for prefetching) and returns the new count.
func (s *KeyWrite) slotAddrs(h uint64, addrs []uintptr, na int) int {
	for i := 0; i < s.maxN && na+1 < len(addrs); i++ {
		off := slotOf(h, i, s.mask) * s.stride
		addrs[na] = uintptr(s.base) + uintptr(off)
		na++
		if (off+s.stride-1)/64 != off/64 { // the slot straddles two lines
			addrs[na] = uintptr(s.base) + uintptr(off+s.stride-1)
			na++
		}
	}
	return na
}
