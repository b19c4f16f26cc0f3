package flowcache

import (
	"sync/atomic"

	"github.com/intake-int/intake/record"
)

// ring is one eviction ring R_G (§III-B): a bounded multi-producer ring of bucket images in
// one pointer-free []uint64 (a slot is a sequence word, the reason, then the bucket's
// words), after Vyukov's bounded queue so that ingest workers push without a lock. There is
// one reader, the drain goroutine. A full ring drops the record and counts it: the paper's
// "inaccurate if the ring buffer overflows", made visible.
type ring struct {
	mask  uint64
	slotW int
	mem   []uint64
	_     [64]byte
	enq   atomic.Uint64
	_     [56]byte
	deq   atomic.Uint64
	_     [56]byte

	pushed   atomic.Uint64
	overflow atomic.Uint64
}

func newRing(entries, bucketW int) *ring {
	r := &ring{mask: uint64(entries - 1), slotW: 2 + bucketW}
	r.mem = make([]uint64, entries*r.slotW)
	for i := 0; i < entries; i++ {
		r.mem[i*r.slotW] = uint64(i)
	}
	return r
}

func (r *ring) seq(pos uint64) *uint64 { return &r.mem[int(pos&r.mask)*r.slotW] }

// push copies b into the ring; false when the ring is full (counted).
func (r *ring) push(b []uint64, why record.Reason) bool {
	pos := r.enq.Load()
	for {
		s := r.seq(pos)
		switch d := int64(atomic.LoadUint64(s) - pos); {
		case d == 0:
			if r.enq.CompareAndSwap(pos, pos+1) {
				i := int(pos&r.mask) * r.slotW
				r.mem[i+1] = uint64(why)
				copy(r.mem[i+2:i+r.slotW], b)
				atomic.StoreUint64(s, pos+1)
				r.pushed.Add(1)
				return true
			}
			pos = r.enq.Load()
		case d < 0:
			r.overflow.Add(1)
			return false
		default:
			pos = r.enq.Load()
		}
	}
}

// pop calls fn with the oldest record, if any (single reader).
func (r *ring) pop(fn func(b []uint64, why record.Reason)) bool {
	pos := r.deq.Load()
	s := r.seq(pos)
	if atomic.LoadUint64(s) != pos+1 {
		return false
	}
	i := int(pos&r.mask) * r.slotW
	fn(r.mem[i+2:i+r.slotW], record.Reason(r.mem[i+1]))
	atomic.StoreUint64(s, pos+r.mask+1)
	r.deq.Store(pos + 1)
	return true
}

func (r *ring) len() int { return int(r.enq.Load() - r.deq.Load()) }

// ringSet is the R_G rings; a row's evictions go to ring row mod len.
type ringSet struct {
	rings []*ring
	mask  uint64
	// kick wakes the drain (FlowCache.drainLoop) when a ring fills past a quarter: the
	// drain backs off while the rings stay empty, and a burst must not wait for it.
	kick chan struct{}
}

func newRingSet(n, entries, bucketW int) *ringSet {
	s := &ringSet{rings: make([]*ring, n), mask: uint64(n - 1), kick: make(chan struct{}, 1)}
	for i := range s.rings {
		s.rings[i] = newRing(entries, bucketW)
	}
	return s
}

func (s *ringSet) push(row uint64, b []uint64, why record.Reason) bool {
	r := s.rings[row&s.mask]
	ok := r.push(b, why)
	if ok && uint64(r.len()) == (r.mask+1)/4 {
		select {
		case s.kick <- struct{}{}:
		default: // a kick is pending already
		}
	}
	return ok
}

// RingStats are the eviction rings' counters.
type RingStats struct {
	Count    int    `json:"count"`
	Entries  int    `json:"entries"`
	Pushed   uint64 `json:"pushed"`
	Drops    uint64 `json:"drops"`
	Pending  int    `json:"pending"`
	Exported uint64 `json:"exported"`
}

func (s *ringSet) stats() RingStats {
	st := RingStats{Count: len(s.rings), Entries: int(s.rings[0].mask + 1)}
	for _, r := range s.rings {
		st.Pushed += r.pushed.Load()
		st.Drops += r.overflow.Load()
		st.Pending += r.len()
	}
	return st
}
