package flowcache

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// A processor of a consumer group (package group, docs/scale-out.md) owns the flows of the
// partitions it is assigned and hands them to the next owner when a partition moves:
// Snapshot gives the buckets of the flows it selects as images, Adopt puts an image back in
// a cache. An image is the bucket as the table holds it (the flow's key, counts, receive
// times, end-to-end latency and its hops' latest values and sums), so a flow carries on
// where it was, exactly. An image is the bucket's words, little-endian, and has the size of
// the table's buckets (flowcache.max_hops): ImageSize tells a loader whether one fits.

// ImageSize is the size of a bucket image in bytes.
func (f *FlowCache) ImageSize() int { return f.t.bktW * 8 }

// Snapshot passes the image of every flow for which take(key) is true to emit, with its key
// (emit must keep neither), and removes those flows when remove is set (a partition handed
// over). It returns the number of flows. Rows are locked one at a time: reports being
// processed meanwhile land before or after their flow's image.
func (f *FlowCache) Snapshot(take func(*telemetry.FlowKey) bool, remove bool, emit func(k *telemetry.FlowKey, img []byte)) int {
	n := 0
	img := make([]byte, f.t.bktW*8)
	f.t.walk(math.MinInt64, func(b []uint64, h *bucketHdr) bool {
		if !take(&h.Key) {
			return false
		}
		for i, w := range b {
			binary.LittleEndian.PutUint64(img[i*8:], w)
		}
		emit(&h.Key, img)
		n++
		return remove
	})
	return n
}

// Adopt puts the flow of image img in the cache, replacing the flow's bucket when the cache
// has it. A full row gives up its least recently updated flow to the eviction ring, as a
// report of a new flow does.
func (f *FlowCache) Adopt(img []byte) error {
	t := f.t
	if len(img) != t.bktW*8 {
		return fmt.Errorf("flowcache: a flow image of %d bytes, this cache's are %d (flowcache.max_hops differs)", len(img), t.bktW*8)
	}
	words := make([]uint64, t.bktW)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(img[i*8:])
	}
	hdr := (*bucketHdr)(unsafe.Pointer(&words[0]))
	if int(hdr.NHops) > t.hops || hdr.Packets == 0 {
		return fmt.Errorf("flowcache: a flow image with %d hops and %d packets", hdr.NHops, hdr.Packets)
	}
	h := telemetry.FlowHash(&hdr.Key)
	row := h & t.mask
	tag := uint32(h>>32) | 1
	off := t.rowOff(row)
	lk := t.lockRow(off)
	defer unlockRow(lk)
	tags := t.tags(off)
	at, free := -1, -1
	for i, g := range tags {
		if g == tag && t.hdr(t.bucketOff(off, i)).Key == hdr.Key {
			at = i
			break
		}
		if g == 0 && free < 0 {
			free = i
		}
	}
	if at < 0 {
		if free < 0 {
			oldest := int64(math.MaxInt64)
			for i := range tags {
				if l := t.hdr(t.bucketOff(off, i)).Last; l < oldest {
					oldest, free = l, i
				}
			}
			boff := t.bucketOff(off, free)
			f.rings.push(row, t.mem[boff:boff+t.bktW], record.ReasonCollision)
			f.collisions.Add(1)
		} else {
			t.flows.Add(1)
		}
		at = free
		setTag(tags, at, tag)
	}
	copy(t.mem[t.bucketOff(off, at):], words)
	return nil
}
