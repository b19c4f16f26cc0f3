package dta

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	h := &r.Hdr
	if h.Primitive != PrimKeyWrite {
		return nil, fmt.Errorf("%s: primitive %d is not key-write", r.Path, h.Primitive)
	}
	if !pow2(int(h.Slots)) || h.SlotBytes%8 != 0 || h.SlotBytes < 4+h.ValueBytes || h.ValueBytes > 32 ||
		h.CheckBits < 1 || h.CheckBits > 32 || h.MaxN < 1 || h.MaxN > 8 || h.DataLen != h.Slots*uint64(h.SlotBytes) {
		return nil, fmt.Errorf("%s: inconsistent key-write geometry (%s)", r.Path, h)
	}
	s := &KeyWrite{R: r, mask: h.Slots - 1, stride: uint64(h.SlotBytes), maxN: int(h.MaxN),
		cmask: uint32(uint64(1)<<h.CheckBits - 1), vbytes: int(h.ValueBytes), compat: h.Layout == LayoutCompat, seed: h.Seed}
	if s.compat && (h.SlotBytes != 8 || h.ValueBytes != 4) {
		return nil, fmt.Errorf("%s: compat layout needs 8-byte slots", r.Path)
	}
	return s, nil
}

// MaxN is the store's maximum redundancy.
func (s *KeyWrite) MaxN() int { return s.maxN }

// ValueBytes is the value width.
func (s *KeyWrite) ValueBytes() int { return s.vbytes }

// Compat reports whether the store uses the prototype's layout.
func (s *KeyWrite) Compat() bool { return s.compat }

var errKeyLen = errors.New("compat layout: keys are 4 bytes")

// valueMix is the hash XORed into the default layout's checksum.
func (s *KeyWrite) valueMix(v []byte) uint32 { return uint32(Hash64(s.seed^csumXor, v)) }

// Insert writes key → value as n copies (1 ≤ n ≤ MaxN, checked by the caller). value is
// right-aligned into the value width (longer values keep their last bytes... callers pass
// at most ValueBytes). It does not allocate.
func (s *KeyWrite) Insert(key, value []byte, n int) error {
	var img [40]byte // checksum word + value, as stored
	vb := img[4 : 4+s.vbytes]
	if len(value) > s.vbytes {
		value = value[len(value)-s.vbytes:]
	}
	copy(vb[s.vbytes-len(value):], value)
	if s.compat {
		if len(key) != 4 {
			return errKeyLen
		}
		k := binary.BigEndian.Uint32(key)
		binary.LittleEndian.PutUint32(img[:4], CompatChecksum(k))
		w := binary.LittleEndian.Uint64(img[:8])
		for i := 0; i < n; i++ {
			*s.R.u64(uint64(CompatSlotHash(k, i)) & s.mask * 8) = w
		}
		return nil
	}
	h := Hash64(s.seed, key)
	binary.LittleEndian.PutUint32(img[:4], (checkOf(h)^s.valueMix(vb))&s.cmask)
	s.write(h, n, &img)
	return nil
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
			*s.R.u64(off + uint64(8*j)) = binary.LittleEndian.Uint64(img[8*j:])
		}
		*s.R.u64(off) = w0
	}
}

// InsertHashed is Insert for a caller that already holds the key hash and the checksum of
// the value (the Monte Carlo): default layout only.
func (s *KeyWrite) insertHashed(h uint64, value []byte, n int) {
	var img [40]byte
	vb := img[4 : 4+s.vbytes]
	copy(vb, value)
	binary.LittleEndian.PutUint32(img[:4], (checkOf(h)^s.valueMix(vb))&s.cmask)
	s.write(h, n, &img)
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
		k := binary.BigEndian.Uint32(key)
		want := CompatChecksum(k)
		var cands [8][40]byte
		nc := 0
		for i := 0; i < n; i++ {
			w := s.R.load64(uint64(CompatSlotHash(k, i)) & s.mask * 8)
			if uint32(w) == want {
				binary.LittleEndian.PutUint64(cands[nc][:8], w)
				nc++
			}
		}
		return s.vote(&cands, nc, t), nil
	}
	return s.queryHashed(Hash64(s.seed, key), n, t), nil
}

func (s *KeyWrite) queryHashed(h uint64, n, t int) KWResult {
	want := checkOf(h) & s.cmask
	var cands [8][40]byte
	nc := 0
	words := int(s.stride / 8)
	for i := 0; i < n; i++ {
		off := slotOf(h, i, s.mask) * s.stride
		c := &cands[nc]
		for j := 0; j < words; j++ {
			binary.LittleEndian.PutUint64(c[8*j:], s.R.load64(off+uint64(8*j)))
		}
		if (binary.LittleEndian.Uint32(c[:4])^s.valueMix(c[4:4+s.vbytes]))&s.cmask == want {
			nc++
		}
	}
	return s.vote(&cands, nc, t)
}

// vote is the plurality vote of A.5 over the nc matching slot images.
func (s *KeyWrite) vote(cands *[8][40]byte, nc, t int) KWResult {
	if t < 1 {
		t = 1
	}
	r := KWResult{Status: NotFound, Candidates: nc, ValueLen: s.vbytes}
	if nc == 0 {
		return r
	}
	best, bestVotes, tie := -1, 0, false
	for i := 0; i < nc; i++ {
		v := 0
		for j := 0; j < nc; j++ {
			if cands[i] == cands[j] {
				v++
			}
		}
		switch {
		case v > bestVotes:
			best, bestVotes, tie = i, v, false
		case v == bestVotes && cands[i] != cands[best]:
			tie = true
		}
	}
	r.Votes = bestVotes
	if tie || bestVotes < t {
		r.Status = Ambiguous
		return r
	}
	r.Status = Found
	copy(r.Value[:], cands[best][4:4+s.vbytes])
	return r
}
