package dta

import (
	"encoding/binary"
	"math/bits"
	"runtime"
	"testing"
)

// Benchmarks of the store paths, each beside a baseline of plain random 8-byte writes into
// a region of the same size (same run, same memory): the ratio says what the primitive costs
// beyond touching memory. Run one core: go test ./internal/dta -run XXX -bench . -cpu 1.

const benchSlots = 1 << 22 // 32 MiB of 8-byte slots: well beyond the caches

// cpuClock reports the benchmarking thread's CPU time per op (cpu-ns/op) beside the wall
// clock's ns/op: on a shared machine the wall clock also counts the time other processes
// hold the core, the thread's CPU clock only the time this loop ran (stalls on memory
// included). Use: defer cpuClock(b)() after the set-up.
func cpuClock(b *testing.B) func() {
	runtime.LockOSThread() // the thread CPU clock follows one thread
	start := threadCPU()
	return func() {
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}

// baseline writes random 8-byte words into a region of its own as large as r's data: never
// into r itself, whose contents the measured path then reads (a baseline that scribbled over
// the postcard value table once made the lookup table overflow and the query loop hang).
func baseline(b *testing.B, r *Region) {
	words := 1 << (bits.Len(uint(len(r.Data)/8)) - 1) // the largest power of two that fits
	br, err := AnonRegion(Header{DataLen: uint64(words) * 8})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	clear(br.Data) // fault the pages in before the clock starts, as the store's are
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuClock(b)()
	x := uint64(1)
	mask := uint64(words - 1)
	for i := 0; i < b.N; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		*br.u64((x >> 20 & mask) * 8) = x
	}
}

func benchKW(b *testing.B) *KeyWrite {
	s := anonKW(b, KWConfig{Layout: "default", Slots: benchSlots, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 4, Threshold: 1})
	return s
}

func BenchmarkKWInsertN2(b *testing.B) {
	s := benchKW(b)
	b.Run("baseline", func(b *testing.B) { baseline(b, s.R) })
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuClock(b)()
		var k, v [4]byte
		for i := 0; i < b.N; i++ {
			binary.LittleEndian.PutUint32(k[:], uint32(i))
			binary.LittleEndian.PutUint32(v[:], uint32(i))
			s.Insert(k[:], v[:], 2)
		}
	})
}

// keyBatch is 64 4-byte keys in place, refilled per batch without allocating.
type keyBatch struct {
	buf  [64][4]byte
	keys [64][]byte
}

func newKeyBatch() *keyBatch {
	kb := &keyBatch{}
	for i := range kb.keys {
		kb.keys[i] = kb.buf[i][:]
	}
	return kb
}

// fill sets the keys to first, first+1, ... (masked), little-endian, and returns them.
func (kb *keyBatch) fill(first, mask int) [][]byte {
	for i := range kb.buf {
		binary.LittleEndian.PutUint32(kb.buf[i][:], uint32((first+i)&mask))
	}
	return kb.keys[:]
}

// benchMany queries keys 0, 1, ... (masked) 64 at a time through query and reports the
// share found.
func benchMany[R any](b *testing.B, mask int, query func(keys [][]byte, out []R), found func(*R) bool) {
	b.ReportAllocs()
	defer cpuClock(b)()
	kb := newKeyBatch()
	var out [64]R
	n := 0
	for i := 0; i < b.N; i += 64 {
		keys := kb.fill(i, mask)[:min(64, b.N-i)]
		query(keys, out[:])
		for j := range keys {
			if found(&out[j]) {
				n++
			}
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "found/op")
}

func BenchmarkKWQueryN2(b *testing.B) {
	s := benchKW(b)
	var k, v [4]byte
	for i := 0; i < benchSlots/2; i++ {
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		s.Insert(k[:], v[:], 2)
	}
	b.Run("baseline", func(b *testing.B) { baseline(b, s.R) })
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuClock(b)()
		found := 0
		for i := 0; i < b.N; i++ {
			binary.LittleEndian.PutUint32(k[:], uint32(i)&(benchSlots/2-1))
			if r, _ := s.Query(k[:], 2, 1); r.Status == Found {
				found++
			}
		}
		b.ReportMetric(float64(found)/float64(b.N), "found/op")
	})
	b.Run("query-many", func(b *testing.B) {
		benchMany(b, benchSlots/2-1, func(keys [][]byte, out []KWResult) { s.QueryMany(keys, 2, 1, out) },
			func(r *KWResult) bool { return r.Status == Found })
	})
}

func BenchmarkAppend(b *testing.B) {
	a := anonAppend(b, AppendConfig{Lists: 16, Entries: benchSlots * 2 / 16, ValueBytes: 4, Batch: 16})
	b.Run("baseline", func(b *testing.B) { baseline(b, a.R) })
	b.Run("append-batch16", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuClock(b)()
		bt := a.NewBatcher(16)
		var v [4]byte
		for i := 0; i < b.N; i++ {
			binary.BigEndian.PutUint32(v[:], uint32(i))
			bt.Add(i>>10&15, v[:])
		}
		bt.Flush()
	})
}

func BenchmarkPostcardQuery(b *testing.B) {
	c := PostcardConfig{Chunks: benchSlots / 4, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 32768, Values: 1 << 12}
	r, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
	defer r.Close()
	p, _ := NewPostcard(r)
	for v := uint32(1); v <= 1000; v++ {
		p.Learn(v)
	}
	var k [4]byte
	var vals [MaxHops]uint32
	const flows = 1 << 19
	for i := 0; i < flows; i++ {
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		for h := range 5 {
			vals[h] = uint32(1 + (i+h)%1000)
		}
		p.Write(k[:], &vals, 31)
	}
	b.Run("baseline", func(b *testing.B) { baseline(b, r) })
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuClock(b)()
		found := 0
		for i := 0; i < b.N; i++ {
			binary.LittleEndian.PutUint32(k[:], uint32(i)&(flows-1))
			if p.Query(k[:]).Status == Found {
				found++
			}
		}
		b.ReportMetric(float64(found)/float64(b.N), "found/op")
	})
	b.Run("query-many", func(b *testing.B) {
		benchMany(b, flows-1, p.QueryMany, func(r *PCResult) bool { return r.Status == Found })
	})
}
