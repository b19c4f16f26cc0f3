//go:build !race

package flowcache

import "unsafe"

// prefetch reads, without the row lock, the lines an update of the flow with this tag will
// touch: the row header, then every line of the bucket whose tag matches (or of the first
// free bucket). The loads are independent, so their cache misses overlap instead of
// following one another behind the lock's serializing CAS. The values are discarded (the
// update re-reads everything under the lock); a torn read is harmless. The race detector
// would rightly see these reads as racing with locked writers, so race builds skip them
// (prefetch_race.go): they change timing, never results.
func (t *table) prefetch(off int, tag uint32) uint64 {
	tags := unsafe.Slice((*uint32)(unsafe.Pointer(&t.mem[off])), 1+t.buckets)[1:]
	var acc uint64
	bi := -1
	for i, g := range tags {
		if g == tag || g == 0 && bi < 0 {
			bi = i
			if g == tag {
				break
			}
		}
	}
	if bi < 0 {
		return uint64(tags[0])
	}
	b := t.mem[t.bucketOff(off, bi):]
	for w := 0; w < t.bktW; w += 8 {
		acc += b[w]
	}
	return acc
}
