package flowcache

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// The table H_P is one []uint64: rows one after the other, each a header followed by its
// buckets. Nothing in it is a pointer, so the GC never scans it (docs/design.md, "Rules for the hot path").
//
// Row header (hdrWords words, a multiple of 8 so that it fills whole 64-byte lines): a
// 32-bit spin lock, then one 32-bit tag per bucket. A tag is the high half of the flow's
// hash with the low bit set, 0 for an empty bucket: a lookup reads the header's line and
// touches a bucket only when its tag matches.
//
// Bucket (bucketWords words): bucketHdr, then MaxHops hopSlots, source first.

// bucketHdr is a bucket's flow-level part (80 bytes).
type bucketHdr struct {
	Key       telemetry.FlowKey // 38 bytes
	NHops     uint8             // hops kept (≤ MaxHops)
	Trunc     uint8             // 1 when a report's path was longer than MaxHops
	Packets   uint32            // reports since the flow entered the cache
	LatCount  uint32            // reports that carried at least one hop latency
	Last      int64             // receive time (Unix ns) of the last update: the LRU order
	First     int64             // receive time of the first report
	LatLatest uint64            // end-to-end latency (sum of hop latencies) of the last report
	LatSum    uint64
}

// hopSlot is one hop's latest values and sums (56 bytes), indexed by Metric.
type hopSlot struct {
	NodeID uint32
	Latest [record.NumMetrics]uint32
	Count  [record.NumMetrics]uint32
	_      uint32
	Sum    [record.NumMetrics]uint64
}

const (
	hdrBytes = int(unsafe.Sizeof(bucketHdr{}))
	hopBytes = int(unsafe.Sizeof(hopSlot{}))
)

func init() {
	if hdrBytes != 80 || hopBytes != 56 {
		panic("flowcache: bucket layout changed")
	}
}

func headerWords(buckets int) int { return ((1+buckets+1)/2 + 7) &^ 7 }
func bucketWords(hops int) int    { return (hdrBytes + hops*hopBytes) / 8 }
func rowWords(buckets, hops int) int {
	return headerWords(buckets) + buckets*bucketWords(hops)
}

// table is H_P.
type table struct {
	rows, buckets, hops int
	mask                uint64
	hdrW, bktW, rowW    int
	mem                 []uint64

	flows atomic.Int64 // occupied buckets
}

func newTable(rows, buckets, hops int) *table {
	t := &table{rows: rows, buckets: buckets, hops: hops, mask: uint64(rows - 1),
		hdrW: headerWords(buckets), bktW: bucketWords(hops), rowW: rowWords(buckets, hops)}
	var mapping []byte
	t.mem, mapping = allocWords(rows * t.rowW)
	if mapping != nil {
		runtime.AddCleanup(t, unmapWords, mapping)
	}
	return t
}

func (t *table) rowOff(row uint64) int { return int(row) * t.rowW }

// prefault writes to every page of the table (an atomic add of 0: a table in use keeps its
// contents), so that no update takes the first-touch fault of its page: with huge pages
// requested and the kernel's defrag policy "madvise" (Debian's default), such a fault may
// compact memory on the spot, and the worker that takes it stalls for milliseconds while
// its socket overflows.
func (t *table) prefault() {
	const pageWords = 4096 / 8
	for i := 0; i < len(t.mem); i += pageWords {
		atomic.AddUint64(&t.mem[i], 0)
	}
}

// lockRow takes row's spin lock. Critical sections are a few dozen ns, so spinning beats
// parking; Gosched keeps a preempted holder from stalling a spinner for a whole slice.
func (t *table) lockRow(off int) *uint32 {
	p := (*uint32)(unsafe.Pointer(&t.mem[off]))
	for i := 0; !atomic.CompareAndSwapUint32(p, 0, 1); i++ {
		if i > 16 {
			runtime.Gosched()
		}
	}
	return p
}

func unlockRow(p *uint32) { atomic.StoreUint32(p, 0) }

// tags returns row's tag array. It is read under the row lock, and also without it by the
// batch path's staging (ProcessBatch), which only uses it to know what to prefetch: tags are
// therefore written with atomic stores (setTag), and that unlocked read is atomic.
func (t *table) tags(off int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(&t.mem[off])), 1+t.buckets)[1:]
}

// setTag sets tag i of a row (under the row lock).
func setTag(tags []uint32, i int, tag uint32) { atomic.StoreUint32(&tags[i], tag) }

func (t *table) bucketOff(rowOff, i int) int { return rowOff + t.hdrW + i*t.bktW }

func (t *table) hdr(boff int) *bucketHdr { return (*bucketHdr)(unsafe.Pointer(&t.mem[boff])) }

func (t *table) hopSlots(boff int) []hopSlot {
	return unsafe.Slice((*hopSlot)(unsafe.Pointer(&t.mem[boff+hdrBytes/8])), t.hops)
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// update applies one report to its flow's bucket: found, or a free bucket, or the row's
// least recently updated bucket evicted to ring (the paper's two operations, §III-B).
// lat/nlat are the report's end-to-end latency and the count of hop latencies in it.
// It returns what it did.
func (t *table) update(r *telemetry.Report, lat uint64, nlat int, rings *ringSet) (inserted, evicted bool) {
	return t.updateHashed(r, telemetry.FlowHash(&r.Flow), lat, nlat, rings)
}

// updateHashed is update with the flow's hash h already computed.
func (t *table) updateHashed(r *telemetry.Report, h, lat uint64, nlat int, rings *ringSet) (inserted, evicted bool) {
	row := h & t.mask
	tag := uint32(h>>32) | 1
	off := t.rowOff(row)
	lk := t.lockRow(off)
	tags := t.tags(off)
	bi, free := -1, -1
	for i, g := range tags {
		if g == tag {
			if t.hdr(t.bucketOff(off, i)).Key == r.Flow {
				bi = i
				break
			}
		} else if g == 0 && free < 0 {
			free = i
		}
	}
	var b *bucketHdr
	var boff int
	if bi < 0 {
		inserted = true
		if free < 0 {
			// Full row: the least recently updated bucket goes to the eviction ring.
			oldest := int64(1<<63 - 1)
			for i := range tags {
				if l := t.hdr(t.bucketOff(off, i)).Last; l < oldest {
					oldest, free = l, i
				}
			}
			boff = t.bucketOff(off, free)
			rings.push(row, t.mem[boff:boff+t.bktW], record.ReasonCollision)
			evicted = true
		} else {
			t.flows.Add(1)
			boff = t.bucketOff(off, free)
		}
		setTag(tags, free, tag)
		b = t.hdr(boff)
		*b = bucketHdr{Key: r.Flow, First: r.RecvTime}
	} else {
		boff = t.bucketOff(off, bi)
		b = t.hdr(boff)
	}
	b.Packets++
	b.Last = r.RecvTime
	if nlat > 0 {
		b.LatLatest = lat
		b.LatSum += lat
		b.LatCount++
	}
	n := int(r.NHops)
	kept := min(n, t.hops)
	if n > t.hops {
		b.Trunc = 1
	}
	slots := t.hopSlots(boff)
	for i := 0; i < kept; i++ {
		hp := &r.Hops[n-1-i] // hops are newest first; the path is source first
		s := &slots[i]
		if i >= int(b.NHops) || s.NodeID != hp.NodeID {
			// A hop new to the flow's path starts its averages afresh.
			*s = hopSlot{NodeID: hp.NodeID}
		}
		f := hp.Fields
		if f&telemetry.FHopLatency != 0 {
			s.Latest[record.HopLatency] = hp.HopLatency
			s.Sum[record.HopLatency] += uint64(hp.HopLatency)
			s.Count[record.HopLatency]++
		}
		if f&telemetry.FQueueOccupancy != 0 {
			s.Latest[record.QueueOccupancy] = hp.QueueOccupancy
			s.Sum[record.QueueOccupancy] += uint64(hp.QueueOccupancy)
			s.Count[record.QueueOccupancy]++
		}
		if f&telemetry.FTxUtil != 0 {
			s.Latest[record.TxUtil] = hp.TxUtil
			s.Sum[record.TxUtil] += uint64(hp.TxUtil)
			s.Count[record.TxUtil]++
		}
	}
	b.NHops = uint8(kept)
	unlockRow(lk)
	return inserted, evicted
}

// lookup copies flow k's bucket into rec.
func (t *table) lookup(k *telemetry.FlowKey, rec *record.Record) bool {
	h := telemetry.FlowHash(k)
	tag := uint32(h>>32) | 1
	off := t.rowOff(h & t.mask)
	lk := t.lockRow(off)
	defer unlockRow(lk)
	for i, g := range t.tags(off) {
		if g == tag {
			boff := t.bucketOff(off, i)
			if t.hdr(boff).Key == *k {
				t.decode(t.mem[boff:boff+t.bktW], rec)
				return true
			}
		}
	}
	return false
}

// walk calls fn for every occupied bucket whose last update is ≥ since, one row at a time
// under that row's lock; fn must not keep the slice. When fn returns evict, the bucket is
// freed (the ager).
func (t *table) walk(since int64, fn func(b []uint64, h *bucketHdr) (evict bool)) {
	for row := 0; row < t.rows; row++ {
		off := t.rowOff(uint64(row))
		lk := t.lockRow(off)
		tags := t.tags(off)
		for i, g := range tags {
			if g == 0 {
				continue
			}
			boff := t.bucketOff(off, i)
			h := t.hdr(boff)
			if h.Last < since {
				continue
			}
			if fn(t.mem[boff:boff+t.bktW], h) {
				setTag(tags, i, 0)
				t.flows.Add(-1)
			}
		}
		unlockRow(lk)
	}
}

// decode turns a bucket image (from the table or an eviction ring) into a Record.
func (t *table) decode(b []uint64, rec *record.Record) {
	h := (*bucketHdr)(unsafe.Pointer(&b[0]))
	rec.Flow, rec.Packets, rec.First, rec.Last = h.Key, uint64(h.Packets), h.First, h.Last
	rec.LatLatest, rec.LatSum, rec.LatCount = h.LatLatest, h.LatSum, uint64(h.LatCount)
	rec.Truncated = h.Trunc != 0
	slots := unsafe.Slice((*hopSlot)(unsafe.Pointer(&b[hdrBytes/8])), t.hops)
	rec.Hops = rec.Hops[:0]
	for i := 0; i < int(h.NHops); i++ {
		s := &slots[i]
		hr := record.HopRecord{NodeID: s.NodeID}
		for m := range record.NumMetrics {
			hr.Latest[m], hr.Count[m], hr.Sum[m] = uint64(s.Latest[m]), uint64(s.Count[m]), s.Sum[m]
		}
		rec.Hops = append(rec.Hops, hr)
	}
}
