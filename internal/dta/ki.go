package dta

import (
	"sync/atomic"
	"unsafe"
)

// Key-Increment (DTA §4, A.4): a count-min sketch. Each report adds its counter to N 64-bit
// slots (the RDMA fetch-and-add of the paper is an atomic add here); a query returns the
// minimum of the MaxN slots, an overestimate only through collisions. Slot addressing is
// Key-Write's (default or compat). A reset zeroes the whole region and bumps the header's
// epoch counter so that a reader can tell.

// KeyIncrement is a Key-Increment store over a region.
type KeyIncrement struct {
	R      *Region
	mask   uint64
	maxN   int
	compat bool
	seed   uint64
}

// KIHeader is the region header for a Key-Increment configuration.
func KIHeader(c KIConfig, seed uint64) Header {
	h := Header{Primitive: PrimKeyIncrement, Seed: seed, Slots: uint64(c.Slots), MaxN: uint32(c.MaxRedundancy), SlotBytes: 8, ValueBytes: 8}
	if c.Layout == "compat" {
		h.Layout, h.Hash, h.Seed = LayoutCompat, HashCRC32, 0
	}
	h.DataLen = h.Slots * 8
	return h
}

// NewKeyIncrement reads a Key-Increment store's geometry from its region.
func NewKeyIncrement(r *Region) (*KeyIncrement, error) {
	if err := r.checkAs(PrimKeyIncrement); err != nil {
		return nil, err
	}
	h := &r.Hdr
	return &KeyIncrement{R: r, mask: h.Slots - 1, maxN: int(h.MaxN), compat: h.Layout == LayoutCompat, seed: h.Seed}, nil
}

// MaxN is the store's maximum redundancy.
func (s *KeyIncrement) MaxN() int { return s.maxN }

// slotHash is what slot needs of the key: the compat checksum, or the key hash.
func (s *KeyIncrement) slotHash(key []byte) uint64 {
	if s.compat {
		return uint64(compatKey(key))
	}
	return Hash64(s.seed, key)
}

// slot is counter i's slot for the slotHash h.
func (s *KeyIncrement) slot(h uint64, i int) uint64 {
	if s.compat {
		return uint64(compatSlot(uint32(h), i)) & s.mask
	}
	return slotOf(h, i, s.mask)
}

// Add adds c to n of key's counters.
func (s *KeyIncrement) Add(key []byte, c uint64, n int) error {
	if s.compat && len(key) != 4 {
		return errKeyLen
	}
	s.AddHashed(s.slotHash(key), c, n)
	return nil
}

// AddHashed is Add of a key whose slot hash is h: Hash64 with the store's seed in the
// default layout (as KeyWrite.HashKey of a store with the same seed), the CRC checksum in
// the compat layout.
func (s *KeyIncrement) AddHashed(h, c uint64, n int) {
	for i := 0; i < n; i++ {
		atomic.AddUint64(s.R.u64(s.slot(h, i)*8), c)
	}
}

// Seed is the store's hash seed.
func (s *KeyIncrement) Seed() uint64 { return s.seed }

// Compat reports whether the store uses the prototype's layout (CRC hashes).
func (s *KeyIncrement) Compat() bool { return s.compat }

// Count returns the minimum over key's MaxN counters (n > 0: over n of them).
func (s *KeyIncrement) Count(key []byte, n int) (uint64, error) {
	if s.compat && len(key) != 4 {
		return 0, errKeyLen
	}
	if n <= 0 || n > s.maxN {
		n = s.maxN
	}
	h := s.slotHash(key)
	m := ^uint64(0)
	for i := 0; i < n; i++ {
		m = min(m, s.R.load64(s.slot(h, i)*8))
	}
	return m, nil
}

// Reset zeroes every counter (the periodic reset of §4) and bumps the epoch counter.
func (s *KeyIncrement) Reset() {
	d := s.R.Data
	for i := 0; i+8 <= len(d); i += 8 {
		atomic.StoreUint64(s.R.u64(uint64(i)), 0)
	}
	s.R.counter(offEpoch).Add(1)
}

// Epoch is the number of resets since the region was created.
func (s *KeyIncrement) Epoch() uint64 { return s.R.counter(offEpoch).Load() }

// slotAddrs appends the addresses of key hash h's MaxN counters to addrs[na:] (for
// prefetching) and returns the new count.
func (s *KeyIncrement) slotAddrs(h uint64, addrs []uintptr, na int) int {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s.R.Data)))
	for i := 0; i < s.maxN && na < len(addrs); i++ {
		addrs[na] = base + uintptr(s.slot(h, i)*8)
		na++
	}
	return na
}
