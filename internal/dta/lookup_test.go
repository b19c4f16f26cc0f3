package dta

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// TestPostcardLookupBounded: a query over a full table of known values allocates at most
// lookupBytes of it (what the budget counts; the hash table it replaced took 48 bytes a
// value, 3 GiB and 25 s at 2^26 values) and still decodes every value, blank and a clash.
func TestPostcardLookupBounded(t *testing.T) {
	c := PostcardConfig{Chunks: 1 << 6, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 64, Values: 1 << 22}
	r, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
	defer r.Close()
	p, _ := NewPostcard(r)
	for i := uint64(0); i <= p.vmask; i++ { // every entry used, as a crafted or long-run file
		binary.LittleEndian.PutUint64(r.Data[p.vals+i*8:], 1<<32|(1000+i))
	}
	vals := [MaxHops]uint32{1000, 0, 1000 + uint32(p.vmask), 2_000_000}
	p.Write([]byte("k"), &vals, 1|4|8)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	q := p.Query([]byte("k"))
	runtime.ReadMemStats(&m1)
	if got, most := int64(m1.TotalAlloc-m0.TotalAlloc), lookupBytes(int64(c.Values)); got > most {
		t.Errorf("the query allocated %d bytes, the budget counts %d", got, most)
	}
	if q.Status != Found || q.Present != 1|4|8 || q.Hops[0] != 1000 || q.Hops[2] != 1000+uint32(p.vmask) || q.Hops[3] != 2_000_000 || q.Valid != 2 {
		t.Errorf("query %+v", q)
	}
	// Two values with one encoding (8-bit slots) make a chunk that holds either
	// undecodable; blank is found by its own encoding.
	c.SlotBits, c.Values = 8, 1<<10
	r2, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
	defer r2.Close()
	p2, _ := NewPostcard(r2)
	p2.Learn(1)
	lk := p2.table()
	g := p2.g(1)
	if lk.get(g) != 1<<40|1 || (g != p2.gBlank && lk.get(p2.gBlank) != 1<<40|lkBlank<<34) {
		t.Fatalf("get %x, blank %x", lk.get(g), lk.get(p2.gBlank))
	}
	for v := uint32(2); ; v++ {
		if p2.g(uint64(v)) == g {
			p2.Learn(v)
			if lk = p2.table(); lk.get(g) != 1<<40|lkClash<<34 {
				t.Errorf("clash: get %x", lk.get(g))
			}
			break
		}
	}
}
