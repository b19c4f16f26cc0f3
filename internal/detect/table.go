package detect

import (
	"sync"
	"sync/atomic"
	"unsafe"

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
}

// latAbove is a flow entry's above bit for its flow latency; bit i < MaxTrackedHops is hop i's.
const latAbove = 1 << MaxTrackedHops

type flowEntry struct {
	key         telemetry.FlowKey
	h           uint64 // FlowHash(key)
	first, last int64
	dev         uint64
	reports     uint64
	pathHash    uint64
	npath       uint8 // the path's true length
	hasLat      bool
	hopOK       uint8  // bit i: hop[i] holds a latency
	above       uint16 // bit i: hop[i] is above its level; latAbove: lat is
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
	numKinds
	kNone = 0xff // a free entry's key
)

type swKey struct {
	sw   uint32
	id   uint32
	kind uint8
}

// swEntry is one switch key's state: 64 bytes, one cache line (newShard aligns the table).
// A kSeq key keeps the last sequence number in v[1].ref, which its one value leaves free.
type swEntry struct {
	key   swKey
	has   uint8 // bit i: v[i] known
	above uint8 // bit 1 << i: v[i] is above its level
	seqOK bool
	// seqSpread: a kSeq key updated by more than one worker, whose gaps are counted through
	// its shard's window (seqwin.go).
	seqSpread bool
	last      int64
	dev       uint64
	v         [2]val
}

// seq is a kSeq key's last sequence number.
func (en *swEntry) seq() *uint64 { return &en.v[1].ref }

// seqWorker is the worker that last updated a kSeq key (in v[1].cur, also free).
func (en *swEntry) seqWorker() uint64 { return en.v[1].cur }

// lineAligned returns a slice of n Ts whose first element starts a cache line.
func lineAligned[T any](n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	s := make([]T, n+(64+size-1)/size)
	off := 0
	for uintptr(unsafe.Pointer(&s[off]))%64 != 0 {
		off++
	}
	return s[off : off+n : off+n]
}

// lruTick is the granularity of the LRU order, as a shift of a receive time in ns: 2^20 ns,
// about a millisecond. An entry updated again within the tick of its last update keeps its
// place in its LRU list, so that the list is in order of update time to the tick and the
// eviction takes the least recently updated key to the millisecond. A hot key (a switch's
// queue is updated by every report through it) is moved once a tick, not once an update:
// a move writes the links of the entry and of its old and new neighbours, three random lines.
const lruTick = 20

// sameTick reports whether receive times a and b are in the same LRU tick.
func sameTick(a, b int64) bool { return a>>lruTick == b>>lruTick }

// lru is an intrusive doubly linked list over a preallocated table's indexes, most recently
// updated first, with the unused indexes on a free list: the table never allocates after
// New, and eviction picks the least recently updated entry in O(1). A link's prev and next
// share a word, so a touch dirties one cache line per neighbour.
type lru struct {
	l          []link
	head, tail int32
	free       int32
	n          int
}

type link struct{ prev, next int32 }

func newLRU(n int) lru {
	l := lru{l: make([]link, n), head: -1, tail: -1}
	for i := range l.l {
		l.l[i].next = int32(i + 1)
	}
	l.l[n-1].next = -1
	return l
}

func (l *lru) alloc() int32 {
	i := l.free
	if i < 0 {
		return -1
	}
	l.free = l.l[i].next
	l.pushFront(i)
	l.n++
	return i
}

func (l *lru) pushFront(i int32) {
	l.l[i] = link{prev: -1, next: l.head}
	if l.head >= 0 {
		l.l[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

func (l *lru) unlink(i int32) {
	k := l.l[i]
	if k.prev >= 0 {
		l.l[k.prev].next = k.next
	} else {
		l.head = k.next
	}
	if k.next >= 0 {
		l.l[k.next].prev = k.prev
	} else {
		l.tail = k.prev
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
	l.l[i].next = l.free
	l.free = i
	l.n--
}

// index is an open-addressing hash index (linear probing) from a key's hash to its entry in
// a shard's table: a slot holds the hash's low 32 bits (the home position and a tag that
// spares most key comparisons) and the entry index + 1; 0 is empty. It has at least twice as
// many slots as entries, so probes stay short, and a removal shifts the following slots back
// (no tombstones), so lookups never slow down with churn. It replaces a Go map: the hash is
// computed once per key (it also picks the shard) and nothing is rehashed or allocated.
type index struct {
	slots []uint64
	mask  uint64
}

func newIndex(n int) index {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return index{slots: make([]uint64, size), mask: uint64(size - 1)}
}

func slotOf(h uint64, i int32) uint64 { return uint64(uint32(h))<<32 | uint64(uint32(i)+1) }

// insert adds entry i under hash h; the caller knows it is absent. Slots are written with
// atomic stores: the batch path's staging reads them without the shard's lock (only to
// know what to prefetch).
func (x *index) insert(h uint64, i int32) {
	p := h & x.mask
	for x.slots[p] != 0 {
		p = (p + 1) & x.mask
	}
	atomic.StoreUint64(&x.slots[p], slotOf(h, i))
}

// remove deletes entry i, which is present under hash h, and closes the gap: a later slot
// of the same probe run moves into the hole when its home is not after the hole.
func (x *index) remove(h uint64, i int32) {
	want := slotOf(h, i)
	p := h & x.mask
	for x.slots[p] != want {
		p = (p + 1) & x.mask
	}
	for q := p; ; {
		q = (q + 1) & x.mask
		s := x.slots[q]
		if s == 0 {
			atomic.StoreUint64(&x.slots[p], 0)
			return
		}
		if home := (s >> 32) & x.mask; (q-home)&x.mask >= (q-p)&x.mask {
			atomic.StoreUint64(&x.slots[p], s)
			p = q
		}
	}
}

// shardCap is the entries each shard's table holds for max_flows or max_keys of n over
// shards: an even share, plus a quarter and 8 more. A hash spreads keys unevenly (a share's
// standard deviation is about its square root: 23 for 512), and a shard that is full evicts
// even while the others have room; without the headroom, 32768 flows in the default 32768
// entries evicted on more than half the reports. Each shard is bounded on its own, so that
// which key is evicted never depends on the order in which workers reach different shards.
// One shard needs no headroom.
func shardCap(n, shards int) int {
	per := max(1, (n+shards-1)/shards)
	if shards == 1 {
		return per
	}
	return per + per/4 + 8
}

// shard is one lock's worth of state. Flow keys go to the shard of their flow hash, switch
// keys to the shard of their switch id, so that one hop's queue, port and buffer keys are
// updated under one lock.
type shard struct {
	mu   sync.Mutex
	fidx index
	fe   []flowEntry
	fl   lru
	sidx index
	se   []swEntry
	sl   lru
	hops []hopMemo // the hop memo, direct mapped by the hash of memoAt
	hmsk uint64

	// seqw holds the windows of the kSeq keys updated by several workers (seqwin.go), made
	// when a key first is: one per reporter and hardware id held in se (dropWindow).
	seqw map[swKey]*seqWin

	evictedFlows, evictedKeys, expired uint64       // under mu
	resident                           atomic.Int32 // flows held (fl.n), read without mu
	residentKeys                       atomic.Int32 // switch keys held (sl.n), read without mu
	_                                  [64]byte
}

// window returns kSeq key k's window, made if need be; the caller holds s's lock.
func (s *shard) window(k swKey) *seqWin {
	w := s.seqw[k]
	if w == nil {
		if s.seqw == nil {
			s.seqw = map[swKey]*seqWin{}
		}
		w = &seqWin{}
		s.seqw[k] = w
	}
	return w
}

// memoSlots is the size of the hop memo of a shard of keys switch keys.
func memoSlots(keys int) int {
	nh := 64
	for nh < 4*keys {
		nh <<= 1
	}
	return nh
}

func newShard(flows, keys int) *shard {
	nh := memoSlots(keys)
	return &shard{
		fidx: newIndex(flows),
		fe:   make([]flowEntry, flows),
		fl:   newLRU(flows),
		sidx: newIndex(keys),
		se:   lineAligned[swEntry](keys),
		sl:   newLRU(keys),
		hops: make([]hopMemo, nh),
		hmsk: uint64(nh - 1),
	}
}

// hopMemo is the hop memo's slot: the entries (index + 1, 0 for none) of the queue key and
// the port key that a hop of some (switch, queue, port) last used. The memo makes a hop one
// lookup, not one per key (the target of one lookup per switch a report: docs/performance.md,
// "Targets"). It is a cache, never
// the truth: a slot is only believed when the entries it names hold the hop's keys, so a
// collision, an eviction or a reused entry costs the general path (swIndex, which refills
// the slot), never a wrong entry. It holds 4 slots per key the shard can hold: a switch's
// (queue, port) pairs outnumber its keys.
type hopMemo struct{ q, p int32 }

// memoAt is the hop memo's slot of hop h, under its switch's hash hsw. It hashes the hop's
// queue id and egress port as they are, with the fields it carries: an absent field's stale
// value only picks another slot, since the keys are checked against the entries.
func (s *shard) memoAt(hsw uint64, h *telemetry.Hop) *hopMemo {
	const fields = telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FQueueCongestion | telemetry.FTxUtil | telemetry.FEgressPort
	x := hsw ^ (uint64(h.EgressPort)<<32|uint64(h.QueueID)<<16|uint64(h.Fields&fields))*k3
	return &s.hops[(x^x>>29)&s.hmsk]
}

// lookupFlow returns the index of flow k (hash h), or -1.
func (s *shard) lookupFlow(h uint64, k *telemetry.FlowKey) int32 {
	x := &s.fidx
	tag := uint32(h)
	for p := h & x.mask; ; p = (p + 1) & x.mask {
		sl := x.slots[p]
		if sl == 0 {
			return -1
		}
		if uint32(sl>>32) == tag {
			if i := int32(uint32(sl)) - 1; s.fe[i].key == *k {
				return i
			}
		}
	}
}

// flow returns the entry for k (hash h) updated at now, creating it (evicting the least
// recently updated flow when the shard is full); isNew says it was created. An entry
// already updated in now's tick keeps its LRU position (sameTick).
func (s *shard) flow(h uint64, k *telemetry.FlowKey, now int64) (e *flowEntry, isNew bool) {
	if i := s.lookupFlow(h, k); i >= 0 {
		if !sameTick(s.fe[i].last, now) {
			s.fl.touch(i)
		}
		return &s.fe[i], false
	}
	i := s.fl.alloc()
	if i < 0 {
		i = s.fl.tail
		s.fidx.remove(s.fe[i].h, i)
		s.fl.touch(i)
		s.evictedFlows++
	} else {
		s.resident.Add(1)
	}
	s.fidx.insert(h, i)
	e = &s.fe[i]
	*e = flowEntry{key: *k, h: h}
	return e, true
}

// removeFlow forgets entry i.
func (s *shard) removeFlow(i int32) {
	s.fidx.remove(s.fe[i].h, i)
	s.fl.remove(i)
	s.resident.Add(-1)
}

// swIndex returns the index of the entry for switch key k (hash h, k.hash()) updated at now,
// creating it (evicting the least recently updated switch key when the shard is full); as
// flow, an entry already updated in now's tick keeps its LRU position.
func (s *shard) swIndex(k swKey, h uint64, now int64) int32 {
	x := &s.sidx
	tag := uint32(h)
	for p := h & x.mask; ; p = (p + 1) & x.mask {
		sl := x.slots[p]
		if sl == 0 {
			break
		}
		if uint32(sl>>32) == tag {
			if i := int32(uint32(sl)) - 1; s.se[i].key == k {
				if !sameTick(s.se[i].last, now) {
					s.sl.touch(i)
				}
				return i
			}
		}
	}
	i := s.sl.alloc()
	if i < 0 {
		i = s.sl.tail
		s.sidx.remove(s.se[i].key.hash(), i)
		s.dropWindow(i)
		s.sl.touch(i)
		s.evictedKeys++
	} else {
		s.residentKeys.Add(1)
	}
	s.sidx.insert(h, i)
	s.se[i] = swEntry{key: k}
	return i
}

// removeSw forgets entry i. Its key is cleared: a free entry holds no key.
func (s *shard) removeSw(i int32) {
	s.sidx.remove(s.se[i].key.hash(), i)
	s.dropWindow(i)
	s.sl.remove(i)
	s.residentKeys.Add(-1)
	s.se[i].key = swKey{kind: kNone}
}

// dropWindow forgets the window of entry i's key, if it has one, as the entry goes: the
// windows are then at most the shard's keys (the detector's budget counts them so), not
// one for every reporter ever seen.
func (s *shard) dropWindow(i int32) {
	if en := &s.se[i]; en.seqSpread {
		delete(s.seqw, en.key)
	}
}

// Hashes are fixed (docs/design.md, "Rules for the hot path": no per-process seed), so that shard placement is reproducible.
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

func switchHash(sw uint32) uint64 { return mix(uint64(sw) * k1) }

// hash is a switch key's hash within its shard (the shard is picked by switchHash).
func (k swKey) hash() uint64 { return swKeyHash(switchHash(k.sw), k.id, k.kind) }

// swKeyHash is the hash of key (sw, id, kind) from hsw, switchHash(sw): the switch's keys
// cost one multiply each beyond the switch's hash, which picks their shard anyway. The
// fold mixes the high bits of the product into the low ones, the index position and tag.
func swKeyHash(hsw uint64, id uint32, kind uint8) uint64 {
	x := hsw ^ (uint64(id)<<3|uint64(kind))*k2
	return x ^ x>>29
}

// shardOf picks a shard from a hash's bits 40 and up, leaving the low 32 bits (the index
// position within the shard) independent of the shard.
func shardOf(h, mask uint64) uint64 { return (h >> 40) & mask }
