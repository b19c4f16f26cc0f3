package detect

import (
	"encoding/binary"
	"sync"

	"github.com/intake-int/intake/telemetry"
)

// MaxTrackedHops is the number of hops whose per-hop latency a flow entry keeps (INTCollector
// keeps 6). A longer path is tracked by its first MaxTrackedHops hops from the source; its
// path hash, and the path carried in events (event.MaxPath), cover more.
const MaxTrackedHops = 8

// val is one metric value's state: ref is V(t1), the value last exported (an event or the
// key's first value), against which |V(t2) − V(t1)| > T(m) is tested, so that a slow drift
// is caught once it adds up to T (INTCollector §III-D: between events the stored value is
// within ±T of the real one); cur is the latest value, for the periodic push and the API.
type val struct {
	ref, cur uint64
	above    bool
}

type flowEntry struct {
	key         telemetry.FlowKey
	first, last int64
	dev         uint64
	reports     uint64
	pathHash    uint64
	npath       uint8 // the path's true length
	hasLat      bool
	hopOK       uint8 // bit i: hop[i] holds a latency
	path        [MaxTrackedHops]uint32
	lat         val
	hop         [MaxTrackedHops]val
}

// switch-key kinds: which component of a switch a swKey names.
const (
	kQueue  uint8 = iota // id: queue id; v[0] occupancy, v[1] congestion
	kPort                // id: egress port; v[0] tx utilization
	kBuffer              // id: buffer id; v[0] occupancy
	kDrop                // id: drop reason; v[0] count
	kSeq                 // id: hw_id; v[0] missing reports
)

type swKey struct {
	sw   uint32
	id   uint32
	kind uint8
}

type swEntry struct {
	key         swKey
	first, last int64
	dev         uint64
	has         uint8 // bit i: v[i] known
	seqOK       bool
	seq         uint32
	v           [2]val
}

// lru is an intrusive doubly linked list over a preallocated table's indexes, most recently
// updated first, with the unused indexes on a free list: the table never allocates after
// New, and eviction picks the least recently updated entry in O(1).
type lru struct {
	prev, next []int32
	head, tail int32
	free       int32
	n          int
}

func newLRU(n int) lru {
	l := lru{prev: make([]int32, n), next: make([]int32, n), head: -1, tail: -1}
	for i := range l.next {
		l.next[i] = int32(i + 1)
	}
	l.next[n-1] = -1
	return l
}

func (l *lru) alloc() int32 {
	i := l.free
	if i < 0 {
		return -1
	}
	l.free = l.next[i]
	l.pushFront(i)
	l.n++
	return i
}

func (l *lru) pushFront(i int32) {
	l.prev[i], l.next[i] = -1, l.head
	if l.head >= 0 {
		l.prev[l.head] = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

func (l *lru) unlink(i int32) {
	p, n := l.prev[i], l.next[i]
	if p >= 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n >= 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
}

func (l *lru) touch(i int32) {
	if l.head != i {
		l.unlink(i)
		l.pushFront(i)
	}
}

func (l *lru) remove(i int32) {
	l.unlink(i)
	l.next[i] = l.free
	l.free = i
	l.n--
}

// shard is one lock's worth of state. Flow keys go to the shard of their flow hash, switch
// keys to the shard of their switch id, so that one hop's queue, port and buffer keys are
// updated under one lock.
type shard struct {
	mu    sync.Mutex
	flows map[telemetry.FlowKey]int32
	fe    []flowEntry
	fl    lru
	sws   map[swKey]int32
	se    []swEntry
	sl    lru

	evictedFlows, evictedKeys, expired uint64 // under mu
	_                                  [64]byte
}

func newShard(flows, keys int) *shard {
	return &shard{
		flows: make(map[telemetry.FlowKey]int32, flows),
		fe:    make([]flowEntry, flows),
		fl:    newLRU(flows),
		sws:   make(map[swKey]int32, keys),
		se:    make([]swEntry, keys),
		sl:    newLRU(keys),
	}
}

// flow returns the entry for k, creating it (evicting the least recently updated flow when
// the shard is full); isNew says it was created.
func (s *shard) flow(k *telemetry.FlowKey) (e *flowEntry, isNew bool) {
	if i, ok := s.flows[*k]; ok {
		s.fl.touch(i)
		return &s.fe[i], false
	}
	i := s.fl.alloc()
	if i < 0 {
		i = s.fl.tail
		delete(s.flows, s.fe[i].key)
		s.fl.touch(i)
		s.evictedFlows++
	}
	s.flows[*k] = i
	e = &s.fe[i]
	*e = flowEntry{key: *k}
	return e, true
}

func (s *shard) sw(k swKey) *swEntry {
	if i, ok := s.sws[k]; ok {
		s.sl.touch(i)
		return &s.se[i]
	}
	i := s.sl.alloc()
	if i < 0 {
		i = s.sl.tail
		delete(s.sws, s.se[i].key)
		s.sl.touch(i)
		s.evictedKeys++
	}
	s.sws[k] = i
	e := &s.se[i]
	*e = swEntry{key: k}
	return e
}

// Hashes are fixed (DESIGN.md: no per-process seed), so that shard placement is reproducible.
const (
	k1 = 0x9e3779b97f4a7c15
	k2 = 0xc2b2ae3d27d4eb4f
	k3 = 0x165667b19e3779f9
	k4 = 0xd6e8feb86659fd93
)

// mix is SplitMix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// FlowHash is the fixed hash that places a flow key in a shard.
func FlowHash(k *telemetry.FlowKey) uint64 {
	le := binary.LittleEndian
	a := le.Uint64(k.Src[8:]) * k1
	b := le.Uint64(k.Dst[8:]) * k2
	c := (le.Uint64(k.Src[:8]) ^ le.Uint64(k.Dst[:8])<<1) * k3
	d := (uint64(k.SrcPort) | uint64(k.DstPort)<<16 | uint64(k.Proto)<<32) * k4
	return mix(a ^ b ^ c ^ d)
}

func switchHash(sw uint32) uint64 { return mix(uint64(sw) * k1) }
