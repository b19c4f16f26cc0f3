package dta

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
)

// The public prototype's CRC test vectors (dta-int-label-intcollector.md §2).
func TestCompatVectors(t *testing.T) {
	for _, v := range []struct {
		key, csum uint32
		slot      [4]uint32
	}{
		{0x00000001, 0x99f8b879, [4]uint32{0xfb42dead, 0x8c45ee3b, 0x154cbf81, 0x624b8f17}},
		{0x0000007b, 0x9d7af881, [4]uint32{0x482026c3, 0x3f271655, 0xa62e47ef, 0xd1297779}},
		{0xdeadbeef, 0x1a5a601f, [4]uint32{0x5f10b818, 0x2817888e, 0xb11ed934, 0xc619e9a2}},
	} {
		if c := CompatChecksum(v.key); c != v.csum {
			t.Errorf("checksum(%#x) = %#x, want %#x", v.key, c, v.csum)
		}
		for n, want := range v.slot {
			if s := CompatSlotHash(v.key, n); s != want {
				t.Errorf("slot(%#x, %d) = %#x, want %#x", v.key, n, s, want)
			}
		}
	}
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func anonKW(t testing.TB, c KWConfig) *KeyWrite {
	r, err := AnonRegion(KWHeader(c, DefaultSeed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s, err := NewKeyWrite(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The compat layout puts the bytes exactly where the prototype's translator does.
func TestCompatLayout(t *testing.T) {
	s := anonKW(t, KWConfig{Layout: "compat", Slots: 1 << 16, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4, Threshold: 1})
	s.Insert(be32(0xdeadbeef), []byte{1, 2, 3, 4}, 4)
	for n, h := range []uint32{0x5f10b818, 0x2817888e, 0xb11ed934, 0xc619e9a2} {
		off := int(h&0xffff) * 8
		want := []byte{0x1f, 0x60, 0x5a, 0x1a, 1, 2, 3, 4}
		if got := s.R.Data[off : off+8]; !bytes.Equal(got, want) {
			t.Errorf("copy %d at slot %#x: % x, want % x", n, h&0xffff, got, want)
		}
	}
	r, _ := s.Query(be32(0xdeadbeef), 0, 0)
	if r.Status != Found || r.Votes != 4 || !bytes.Equal(r.Bytes(), []byte{1, 2, 3, 4}) {
		t.Errorf("query: %+v", r)
	}
	if r, _ := s.Query(be32(7), 0, 0); r.Status != NotFound {
		t.Errorf("absent key: %+v", r)
	}
}

func TestKeyWriteVotes(t *testing.T) {
	s := anonKW(t, KWConfig{Layout: "default", Slots: 1 << 12, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 8, Threshold: 1})
	key := []byte("10.0.0.1,10.0.0.2,6")
	s.Insert(key, []byte{9}, 4)
	r, _ := s.Query(key, 0, 0)
	if r.Status != Found || r.Votes != 4 || !bytes.Equal(r.Bytes(), []byte{0, 0, 0, 0, 0, 0, 0, 9}) {
		t.Fatalf("4 copies: %+v", r)
	}
	// Redundancy 2 then 4 with another value in copies 2-3 only: the copies disagree 2:2.
	s.Insert(key, []byte{5}, 2)
	if r, _ := s.Query(key, 0, 0); r.Status != Ambiguous || r.Votes != 2 || r.Candidates != 4 {
		t.Fatalf("2:2 tie: %+v", r)
	}
	// Overwrite copy 0 with a third value: 1 (v7) : 1 (v5) : 2 (v9) → 9 wins with 2 votes.
	h := Hash64(s.seed, key)
	var img [40]byte
	img[11] = 7
	binary.LittleEndian.PutUint32(img[:4], checkOf(h)^s.valueMix(img[4:12]))
	off := slotOf(h, 0, s.mask) * s.stride
	copy(s.R.Data[off:off+s.stride], img[:s.stride])
	r, _ = s.Query(key, 0, 0)
	if r.Status != Found || r.Votes != 2 || r.Value[7] != 9 || r.Candidates != 4 {
		t.Fatalf("plurality: %+v", r)
	}
	if r, _ := s.Query(key, 0, 3); r.Status != Ambiguous || r.Votes != 2 {
		t.Fatalf("T=3: %+v", r)
	}
	if r, _ := s.Query([]byte("absent"), 0, 0); r.Status != NotFound || r.Candidates != 0 {
		t.Fatalf("absent: %+v", r)
	}
}

// A slot torn by two writers (one key's checksum word, another value) fails the check.
func TestKeyWriteTornSlot(t *testing.T) {
	s := anonKW(t, KWConfig{Layout: "default", Slots: 1 << 10, MaxRedundancy: 1, ChecksumBits: 32, ValueBytes: 20, Threshold: 1})
	key := []byte{1, 2, 3, 4, 5}
	val := bytes.Repeat([]byte{0xab}, 20)
	s.Insert(key, val, 1)
	if r, _ := s.Query(key, 0, 0); r.Status != Found || !bytes.Equal(r.Bytes(), val) {
		t.Fatalf("before tearing: %+v", r)
	}
	off := slotOf(Hash64(s.seed, key), 0, s.mask) * s.stride
	s.R.Data[off+12] ^= 0xff // a later word from another write
	if r, _ := s.Query(key, 0, 0); r.Status != NotFound {
		t.Fatalf("torn slot answered: %+v", r)
	}
}

func TestKeyIncrement(t *testing.T) {
	r, _ := AnonRegion(KIHeader(KIConfig{Layout: "default", Slots: 1 << 10, MaxRedundancy: 2}, DefaultSeed))
	defer r.Close()
	s, _ := NewKeyIncrement(r)
	s.Add([]byte("a"), 5, 2)
	s.Add([]byte("a"), 7, 2)
	if c, _ := s.Count([]byte("a"), 0); c != 12 {
		t.Errorf("count %d, want 12", c)
	}
	if c, _ := s.Count([]byte("b"), 0); c != 0 {
		t.Errorf("absent count %d", c)
	}
	s.Reset()
	if c, _ := s.Count([]byte("a"), 0); c != 0 || s.Epoch() != 1 {
		t.Errorf("after reset %d, epoch %d", c, s.Epoch())
	}
}

func anonAppend(t testing.TB, c AppendConfig) *Append {
	r, err := AnonRegion(AppendHeader(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	a, err := NewAppend(r)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAppendWrapAndOverwritten(t *testing.T) {
	a := anonAppend(t, AppendConfig{Lists: 2, Entries: 64, ValueBytes: 4, Batch: 3})
	dst := make([]byte, 64*4)
	if n, next, over, err := a.Poll(1, 0, 64, dst); n != 0 || next != 0 || over != 0 || err != nil {
		t.Fatalf("empty list: %d %d %d %v", n, next, over, err)
	}
	b := a.NewBatcher(3)
	for i := uint32(0); i < 100; i++ { // 0 is ordinary data
		b.Add(1, be32(i))
	}
	b.Flush()
	if h := a.Head(1); h != 100 {
		t.Fatalf("head %d", h)
	}
	// 100 entries in a ring of 64: 36 overwritten, then entries 36..99 in order, no batch
	// lost at the wrap.
	n, next, over, err := a.Poll(1, 0, 64, dst)
	if err != nil || n != 64 || next != 100 || over != 36 {
		t.Fatalf("poll: %d %d %d %v", n, next, over, err)
	}
	for i := 0; i < n; i++ {
		if v := binary.BigEndian.Uint32(dst[4*i:]); v != uint32(36+i) {
			t.Fatalf("entry %d = %d, want %d", i, v, 36+i)
		}
	}
	if n, next, over, _ := a.Poll(1, 90, 5, dst); n != 5 || next != 95 || over != 0 || binary.BigEndian.Uint32(dst) != 90 {
		t.Fatalf("cursor 90: %d %d %d", n, next, over)
	}
	if _, _, _, err := a.Poll(1, 101, 5, dst); err != ErrCursor {
		t.Fatalf("cursor past head: %v", err)
	}
	if a.Head(0) != 0 {
		t.Fatal("list 0 written")
	}
	// A batch in flight: reserve raised past what the reader copied.
	a.reserve(1).Store(104)
	if n, next, over, _ := a.Poll(1, 36, 10, dst); n != 6 || next != 46 || over != 4 || binary.BigEndian.Uint32(dst) != 40 {
		t.Fatalf("racing batch: %d %d %d first %d", n, next, over, binary.BigEndian.Uint32(dst))
	}
}

func TestPostcard(t *testing.T) {
	c := PostcardConfig{Chunks: 1 << 10, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 64, Values: 1 << 10}
	r, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
	defer r.Close()
	p, err := NewPostcard(r)
	if err != nil {
		t.Fatal(err)
	}
	cache := p.NewCache(c.Cache)
	key := []byte("flow-1")
	for hop, v := range []uint32{11, 12, 13} {
		cache.Add(key, hop+1, v, 3) // path length 3: written when hop 3 arrives
	}
	q := p.Query(key)
	if q.Status != Found || q.Present != 7 || q.Hops[0] != 11 || q.Hops[2] != 13 || q.Valid != 2 || cache.Complete.Load() != 1 {
		t.Fatalf("query: %+v", q)
	}
	if q := p.Query([]byte("flow-2")); q.Status != NotFound {
		t.Fatalf("absent: %+v", q)
	}
	// Early emission: another key takes the line of a partial flow.
	var k2 []byte
	for i := 0; ; i++ {
		k2 = fmt.Appendf(nil, "other-%d", i)
		if Hash64(p.seed, k2)>>24&cache.mask == Hash64(p.seed, []byte("flow-3"))>>24&cache.mask {
			break
		}
	}
	cache.Add([]byte("flow-3"), 2, 22, 0)
	cache.Add(k2, 1, 33, 0)
	if cache.Early.Load() != 1 {
		t.Fatal("no early emission")
	}
	if q := p.Query([]byte("flow-3")); q.Status != Found || q.Present != 2 || q.Hops[1] != 22 {
		t.Fatalf("early-emitted: %+v", q)
	}
	// A value outside V makes a chunk undecodable.
	var vals [MaxHops]uint32
	vals[0] = 999
	p.Write([]byte("flow-4"), &vals, 1)
	if q := p.Query([]byte("flow-4")); q.Status != NotFound {
		t.Fatalf("unknown value decoded: %+v", q)
	}
	p.Learn(999)
	if q := p.Query([]byte("flow-4")); q.Status != Found || q.Hops[0] != 999 {
		t.Fatalf("after learning: %+v", q)
	}
}

// A region file survives a restart, and a second read-only mapping sees writes as they land.
func TestRegionPersistAndReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kw.dta")
	c := KWConfig{Layout: "default", Slots: 1 << 10, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 4, Threshold: 1}
	w, err := CreateRegion(path, KWHeader(c, DefaultSeed), true)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := NewKeyWrite(w)
	ro, err := OpenRegion(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewKeyWrite(ro)
	if err != nil {
		t.Fatal(err)
	}
	ws.Insert(be32(1), be32(0xcafe), 2)
	if r, _ := rs.Query(be32(1), 0, 0); r.Status != Found || binary.BigEndian.Uint32(r.Bytes()) != 0xcafe {
		t.Fatalf("reader: %+v", r)
	}
	w.Close()
	ro.Close()
	w, err = CreateRegion(path, KWHeader(c, DefaultSeed), false)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ = NewKeyWrite(w)
	if r, _ := ws.Query(be32(1), 0, 0); r.Status != Found || binary.BigEndian.Uint32(r.Bytes()) != 0xcafe {
		t.Fatalf("after restart: %+v", r)
	}
	w.Close()
	c.Slots = 1 << 11
	if _, err := CreateRegion(path, KWHeader(c, DefaultSeed), false); err == nil {
		t.Fatal("geometry change accepted")
	}
}
