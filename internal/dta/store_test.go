package dta

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The public prototype's CRC test vectors (jonlanglet/DTA; docs/dta-layout.md, "Hash
// functions").
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

// TestAppendConcurrentWriters: writers append to one list at once, without a lock (as the
// XDP program and the translator do with dta.kernel). Every entry is written exactly once,
// each writer's in its order; a reader polling meanwhile only ever gets written entries
// (never a claimed position not yet written: entry values are never 0); at rest head,
// reserve and done are the total. A slow writer's outstanding claim holds the head back until
// it commits; a reopened store settles a claim left unfinished.
func TestAppendConcurrentWriters(t *testing.T) {
	const writers, perWriter = 4, 20000
	a := anonAppend(t, AppendConfig{Lists: 2, Entries: 1 << 17, ValueBytes: 4, Batch: 1})
	stop := make(chan struct{})
	polled := make(chan error, 1)
	go func() { // a reader, following the head
		dst := make([]byte, 64*4)
		var cur uint64
		for {
			select {
			case <-stop:
				polled <- nil
				return
			default:
			}
			n, next, over, err := a.Poll(1, cur, 64, dst)
			if err != nil || over != 0 {
				polled <- fmt.Errorf("poll at %d: %v, %d overwritten", cur, err, over)
				return
			}
			for i := range n {
				if binary.BigEndian.Uint32(dst[4*i:]) == 0 {
					polled <- fmt.Errorf("entry %d read before it was written", cur+uint64(i))
					return
				}
			}
			cur = next
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var e [3 * 4]byte
			for i := 0; i < perWriter; {
				k := 1 + i%3 // batches of 1, 2 and 3 entries
				k = min(k, perWriter-i)
				for j := range k {
					binary.BigEndian.PutUint32(e[4*j:], uint32(w+1)<<24|uint32(i+j))
				}
				a.WriteBatch(1, e[:4*k], k)
				i += k
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
	const total = writers * perWriter
	if h, r, d := a.Head(1), a.reserve(1).Load(), a.done(1).Load(); h != total || r != total || d != total {
		t.Fatalf("head %d, reserve %d, done %d; want %d", h, r, d, total)
	}
	dst := make([]byte, total*4)
	n, _, _, _ := a.Poll(1, 0, total, dst)
	next := make([]uint32, writers)
	for i := range n {
		v := binary.BigEndian.Uint32(dst[4*i:])
		w := v>>24 - 1
		if w >= writers || v&0xffffff != next[w] {
			t.Fatalf("entry %d = %#x: writer %d's next is %d", i, v, w, next[w])
		}
		next[w]++
	}
	if n != total {
		t.Fatalf("%d entries, want %d", n, total)
	}
	// A slow writer: its claim is outstanding while a later one is written and committed.
	// The later entries are not published until the slow writer commits, since the head
	// would then pass an entry not written yet.
	slow := a.claim(0, 2)
	a.WriteBatch(0, append(be32(3), be32(4)...), 2)
	if h := a.Head(0); h != 0 {
		t.Fatalf("head %d with positions 0 and 1 claimed and not written: want 0", h)
	}
	a.write(0, slow, append(be32(1), be32(2)...), 2)
	a.commit(0, 2)
	if n, next, _, _ := a.Poll(0, 0, 8, dst); n != 4 || next != 4 || binary.BigEndian.Uint32(dst) != 1 || binary.BigEndian.Uint32(dst[12:]) != 4 {
		t.Fatalf("after the slow writer's commit: %d entries to %d, first %d", n, next, binary.BigEndian.Uint32(dst))
	}

	// A writer that stopped between its claim and its commit: the reopened store forgets the
	// claim, and the next batch takes its positions.
	a.claim(0, 3)
	b, err := NewAppend(a.R)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteBatch(0, be32(42), 1)
	if h, r, d := b.Head(0), b.reserve(0).Load(), b.done(0).Load(); h != 5 || r != 5 || d != 5 {
		t.Fatalf("after a reopen: head %d, reserve %d, done %d; want 5", h, r, d)
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

// Hash64 as docs/dta-layout.md defines it, one byte at a time: the reference the fast
// paths (loadTail, hashTail) must agree with on every length.
func refHash64(seed uint64, key []byte) uint64 {
	h := seed ^ uint64(len(key))*phi
	for i := 0; i < len(key); i += 8 {
		var w uint64
		for j := i; j < min(i+8, len(key)); j++ {
			w |= uint64(key[j]) << (8 * (j - i))
		}
		h = bits.RotateLeft64(h^w*mulK, 31) * mulK2
	}
	return fmix64(h)
}

func TestHash64(t *testing.T) {
	// Pinned: a change here changes every default-layout region on disk.
	for _, v := range []struct {
		key  string
		want uint64
	}{
		{"", 0xe3466e179c45194d},
		{"a", 0x5c2daa764544d612},
		{"abcd", 0xd349616235a54b7e},
		{"10.0.0.1", 0xb4192b9b3a4e3337},
		{"0123456789abc", 0x3039b964fcfdd9be},
		{"a 5-tuple key of 37 bytes, more or less", 0xe3dd5582efef862a},
	} {
		if h := Hash64(DefaultSeed, []byte(v.key)); h != v.want {
			t.Errorf("Hash64(%q) = %#x, want %#x", v.key, h, v.want)
		}
	}
	if h := hashU64(DefaultSeed^pcGXor, 12345); h != 0xdef6da5c4b82df21 {
		t.Errorf("hashU64 = %#x", h)
	}
	key := make([]byte, 41)
	for i := range key {
		key[i] = byte(0xa5 ^ i*37)
	}
	for n := 0; n <= len(key); n++ {
		if h, want := Hash64(7, key[:n]), refHash64(7, key[:n]); h != want {
			t.Errorf("length %d: %#x, reference %#x", n, h, want)
		}
		if n >= 1 && n <= 8 {
			var w uint64
			for j := 0; j < n; j++ {
				w |= uint64(key[j]) << (8 * j)
			}
			if h := hashTail(7, w, n); h != refHash64(7, key[:n]) {
				t.Errorf("hashTail, length %d: %#x", n, h)
			}
		}
	}
}

// The one-word insert path stores exactly the image the generic path builds, for every
// value width up to 4 bytes and every shorter value.
func TestKeyWriteWordPath(t *testing.T) {
	for vb := 1; vb <= 4; vb++ {
		s := anonKW(t, KWConfig{Layout: "default", Slots: 1 << 10, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: vb, Threshold: 1})
		for vl := 0; vl <= 6; vl++ {
			key := fmt.Appendf(nil, "key-%d-%d", vb, vl)
			val := []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66}[:vl]
			s.Insert(key, val, 2)
			var img [40]byte
			v := val[max(0, vl-vb):]
			copy(img[4+vb-len(v):4+vb], v)
			h := Hash64(s.seed, key)
			binary.LittleEndian.PutUint32(img[:4], checkOf(h)^s.valueMix(img[4:4+vb]))
			for n := 0; n < 2; n++ {
				off := slotOf(h, n, s.mask) * 8
				if got := s.R.Data[off : off+8]; !bytes.Equal(got, img[:8]) {
					t.Errorf("value bytes %d, value % x, copy %d: % x, want % x", vb, val, n, got, img[:8])
				}
			}
			r, _ := s.Query(key, 0, 0)
			if r.Status != Found || r.Votes != 2 || !bytes.Equal(r.Bytes(), img[4:4+vb]) {
				t.Errorf("value bytes %d, value % x: query %+v", vb, val, r)
			}
		}
	}
}

// QueryMany answers exactly as Query, key by key, in every layout and over a group boundary.
func TestQueryMany(t *testing.T) {
	for _, c := range []KWConfig{
		{Layout: "compat", Slots: 1 << 8, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4, Threshold: 1},
		{Layout: "default", Slots: 1 << 8, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 4, Threshold: 1},
		{Layout: "default", Slots: 1 << 8, MaxRedundancy: 3, ChecksumBits: 8, ValueBytes: 20, Threshold: 1},
	} {
		s := anonKW(t, c)
		var keys [][]byte
		for i := range 300 { // beyond the store's size: found, not_found and ambiguous answers
			k := be32(uint32(i * 7919))
			keys = append(keys, k)
			if i < 250 {
				s.Insert(k, be32(uint32(i)), 1+i%c.MaxRedundancy)
			}
		}
		out := make([]KWResult, len(keys))
		if err := s.QueryMany(keys, 0, 1, out); err != nil {
			t.Fatal(err)
		}
		status := map[string]int{}
		for i, k := range keys {
			want, _ := s.Query(k, 0, 1)
			if out[i] != want {
				t.Errorf("%s key %d: QueryMany %+v, Query %+v", c.Layout, i, out[i], want)
			}
			status[want.Status]++
		}
		if status[Found] == 0 || status[NotFound] == 0 {
			t.Errorf("%s: answers %v: the test needs found and not_found keys", c.Layout, status)
		}
	}
	pc := PostcardConfig{Chunks: 1 << 6, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 64, Values: 1 << 8}
	r, _ := AnonRegion(PostcardHeader(pc, DefaultSeed))
	defer r.Close()
	p, _ := NewPostcard(r)
	var keys [][]byte
	for i := range 100 {
		k := be32(uint32(i))
		keys = append(keys, k)
		var vals [MaxHops]uint32
		for h := range 5 {
			vals[h] = uint32(i + h)
			p.Learn(vals[h])
		}
		if i < 80 {
			p.Write(k, &vals, uint32(1)<<(1+i%5)-1)
		}
	}
	out := make([]PCResult, len(keys))
	p.QueryMany(keys, out)
	found := 0
	for i, k := range keys {
		if want := p.Query(k); out[i] != want {
			t.Errorf("postcard key %d: QueryMany %+v, Query %+v", i, out[i], want)
		} else if want.Status == Found {
			found++
		}
	}
	if found == 0 || found == len(keys) {
		t.Errorf("postcard: %d of %d found: the test needs both", found, len(keys))
	}
}

// A value table that disagrees with its counter (a crashed or foreign writer) makes a query
// slower, never endless: the lookup table is sized from the entries present.
func TestPostcardFullValueTable(t *testing.T) {
	c := PostcardConfig{Chunks: 1 << 6, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 64, Values: 1 << 10}
	r, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
	defer r.Close()
	p, _ := NewPostcard(r)
	p.Learn(5)
	var vals [MaxHops]uint32
	vals[0] = 5
	p.Write([]byte("k"), &vals, 1)
	for i := uint64(0); i <= p.vmask; i++ { // every entry used, the counter still says 1
		binary.LittleEndian.PutUint64(r.Data[p.vals+i*8:], 1<<32|uint64(1000+i))
	}
	done := make(chan PCResult)
	go func() { done <- p.Query([]byte("k")) }()
	select {
	case q := <-done:
		if q.Status != NotFound { // 5 is no longer in the table
			t.Errorf("query %+v", q)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("query did not return")
	}
}

// TestFill: a store's fill is the share of slots holding data, counted exactly up to
// fillSample slots and from evenly spaced ones beyond.
func TestFill(t *testing.T) {
	s := anonKW(t, KWConfig{Slots: 1 << 10, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4, Threshold: 1})
	if f, ok := s.R.Fill(); !ok || f != 0 {
		t.Fatalf("empty store: %v %v", f, ok)
	}
	s.Insert(be32(7), []byte{1, 2, 3, 4}, 2) // two copies, in two slots (or one, if they collide)
	used := 0
	for i := 0; i < len(s.R.Data); i += 8 {
		if binary.LittleEndian.Uint64(s.R.Data[i:]) != 0 {
			used++
		}
	}
	if used < 1 || used > 2 {
		t.Fatalf("%d slots written", used)
	}
	if f, _ := s.R.Fill(); f != float64(used)/1024 {
		t.Errorf("fill %v, want %d/1024", f, used)
	}
	// A store larger than the sample: every 4th slot is read; filling slots 0, 4, 8, ...
	// fills the sample, writing only the others leaves it empty.
	big := anonKW(t, KWConfig{Slots: 4 * fillSample, MaxRedundancy: 1, ChecksumBits: 32, ValueBytes: 4, Threshold: 1})
	for i := 1; i < len(big.R.Data)/8; i += 4 {
		big.R.Data[i*8] = 1
	}
	if f, _ := big.R.Fill(); f != 0 {
		t.Errorf("odd slots written: fill %v, want 0 (sampled)", f)
	}
	for i := 0; i < len(big.R.Data)/8; i += 8 {
		big.R.Data[i*8] = 1
	}
	if f, _ := big.R.Fill(); f != 0.5 {
		t.Errorf("every 8th slot written: fill %v, want 0.5", f)
	}
}

// TestAddPathWhole: AddPath writes a whole path at once (no postcard of its key waiting)
// exactly as adding its postcards one at a time does: the same store bytes and the same
// complete and early counts, over a mix of whole paths, partial paths and single postcards
// on a small cache whose lines are shared.
func TestAddPathWhole(t *testing.T) {
	c := PostcardConfig{Chunks: 1 << 8, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 8, Values: 1 << 10}
	var stores [2]*Postcard
	var caches [2]*PostcardCache
	for i := range stores {
		r, _ := AnonRegion(PostcardHeader(c, DefaultSeed))
		defer r.Close()
		p, err := NewPostcard(r)
		if err != nil {
			t.Fatal(err)
		}
		stores[i], caches[i] = p, p.NewCache(c.Cache)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var complete, early [2]uint64
	for step := 0; step < 20000; step++ {
		key := fmt.Appendf(nil, "flow-%d", rng.IntN(40))
		var vals [MaxHops]uint32
		for i := range vals {
			vals[i] = uint32(100 + rng.IntN(50))
		}
		pathLen := 1 + rng.IntN(5)
		present := uint32(1)<<pathLen - 1
		switch rng.IntN(4) {
		case 0: // a partial path
			present &= rng.Uint32()
		case 1: // a single postcard, path length unknown now and then
			hop := 1 + rng.IntN(5)
			pl := pathLen
			if rng.IntN(2) == 0 {
				pl = 0
			}
			for i := range caches {
				caches[i].Add(key, hop, vals[hop-1], pl)
			}
			continue
		}
		if present == 0 {
			continue
		}
		for i, p := range stores {
			h := Hash64(p.seed, key)
			if i == 0 {
				c1, e1 := caches[i].AddPath(key, h, &vals, present, pathLen)
				complete[i], early[i] = complete[i]+c1, early[i]+e1
				continue
			}
			e := caches[i].lock(h) // the reference: a postcard at a time
			c1, e1 := caches[i].addHops(e, key, h, &vals, present, pathLen)
			e.lock.Store(0)
			complete[i], early[i] = complete[i]+c1, early[i]+e1
		}
	}
	for i := range caches {
		caches[i].Flush()
	}
	if complete[0] != complete[1] || early[0] != early[1] || complete[0] == 0 || early[0] == 0 {
		t.Fatalf("complete %v, early %v: want equal and non-zero", complete, early)
	}
	if !bytes.Equal(stores[0].R.Data, stores[1].R.Data) {
		t.Fatal("the stores differ")
	}
}
