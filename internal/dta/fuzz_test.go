package dta

import (
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Fuzz targets for the stores as untrusted input: each opens arbitrary bytes as one store
// kind, read-only as `intake query --store` does, and, when that succeeds, reopens the file
// as a writer whose configuration is the file's geometry (what serve does with a store it
// finds), then writes, queries and serves the HTTP answers over it. Nothing may panic or
// fault; the seeds are small valid stores with content, and the crafted headers of
// TestCraftedGeometryRefused.
//
// An input is the header's first 128 bytes (every field and counter; the rest of the 4 KiB
// header is zero) followed by the data area, so that the fuzzer's mutations land on fields.
// The corpus is kept in testdata/fuzz/<target>.

const fuzzHdr = 128

// fuzzFile is the region file an input stands for.
func fuzzFile(in []byte) []byte {
	n := min(len(in), fuzzHdr)
	b := make([]byte, headerSize+len(in)-n)
	copy(b, in[:n])
	copy(b[headerSize:], in[n:])
	return b
}

// fuzzInput is the input that stands for a region file.
func fuzzInput(file []byte) []byte {
	return append(append([]byte(nil), file[:fuzzHdr]...), file[headerSize:]...)
}

// fuzzSeed builds a small store of geometry h, lets fill write into it, and adds it to the
// corpus with the other arguments.
func fuzzSeed(f *testing.F, h Header, fill func(r *Region), args ...any) {
	path := filepath.Join(f.TempDir(), "seed.dta")
	r, err := CreateRegion(path, h, false)
	if err != nil {
		f.Fatal(err)
	}
	fill(r)
	r.Close()
	file, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]any{fuzzInput(file)}, args...)...)
}

// fuzzCrafted adds a crafted header (DataLen as given) with data bytes after it.
func fuzzCrafted(f *testing.F, h Header, data int, args ...any) {
	b := make([]byte, headerSize+data)
	h.put(b)
	f.Add(append([]any{fuzzInput(b)}, args...)...)
}

// fuzzOpen writes the input's file as name in dir and opens it read-only; nil when it is
// refused, as it should be for most inputs, or is a valid region of another primitive than
// prim (which the store's constructor refuses: stores.go).
func fuzzOpen(t *testing.T, dir, name string, prim uint32, in []byte) *Region {
	path := filepath.Join(dir, name)
	os.Remove(path)
	if err := os.WriteFile(path, fuzzFile(in), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRegion(path)
	if err != nil {
		return nil
	}
	if r.Hdr.Primitive != prim {
		r.Close()
		return nil
	}
	return r
}

// fuzzWriter reopens r's file for writing with r's geometry as the configuration.
func fuzzWriter(t *testing.T, r *Region) *Region {
	w, err := CreateRegion(r.Path, r.Hdr, false)
	if err != nil {
		t.Fatalf("a region that opened read-only does not open for writing: %v", err)
	}
	return w
}

// serveGet answers GET path from the stores' HTTP API, as serve does.
func serveGet(st *Stores, path string) {
	mux := http.NewServeMux()
	a := NewAPI(st, 4)
	mux.HandleFunc("GET /api/v1/dta/kw/{key}", a.handleKW)
	mux.HandleFunc("GET /api/v1/dta/ki/{key}", a.handleKI)
	mux.HandleFunc("GET /api/v1/dta/postcard/{key}", a.handlePostcard)
	mux.HandleFunc("GET /api/v1/dta/list/{id}", a.handleList)
	mux.HandleFunc("GET /api/v1/dta/stats", a.handleStats)
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/dta/stats", nil))
}

func hexKey(key []byte) string {
	if len(key) == 0 {
		return "0"
	}
	const digits = "0123456789abcdef"
	s := []byte("0x")
	for _, b := range key {
		s = append(s, digits[b>>4], digits[b&15])
	}
	return string(s)
}

func FuzzKeyWriteStore(f *testing.F) {
	for _, c := range []KWConfig{
		{Layout: "default", Slots: 16, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4},
		{Layout: "default", Slots: 8, MaxRedundancy: 8, ChecksumBits: 7, ValueBytes: 20},
		{Layout: "compat", Slots: 16, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4},
	} {
		fuzzSeed(f, KWHeader(c, DefaultSeed), func(r *Region) {
			s, _ := NewKeyWrite(r)
			for i := range uint32(5) {
				s.Insert(be32(i), be32(0xa0+i), 1+int(i)%c.MaxRedundancy)
			}
		}, be32(3), uint8(2), uint8(1), []byte{1, 2, 3})
	}
	fuzzCrafted(f, Header{Primitive: PrimKeyWrite, Slots: 1 << 61, SlotBytes: 8, MaxN: 2, CheckBits: 32, ValueBytes: 4}, 0, be32(1), uint8(0), uint8(0), []byte{1})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in, key []byte, n, thr uint8, val []byte) {
		r := fuzzOpen(t, dir, FileKW, PrimKeyWrite, in)
		if r == nil {
			return
		}
		defer r.Close()
		for _, reg := range []*Region{r, fuzzWriter(t, r)} {
			s, err := NewKeyWrite(reg)
			if err != nil {
				t.Fatalf("an open region is not a key-write store: %v", err)
			}
			if !reg.ReadOnly {
				defer reg.Close()
				s.Insert(key, val, 1+int(n)%s.MaxN())
			}
			s.Query(key, int(n), int(thr))
			out := make([]KWResult, 9)
			s.QueryMany([][]byte{key, val, key, key, val, key, key, key, val}, int(n), int(thr), out)
			st := &Stores{KW: s, Paths: s, Threshold: 1, PathsThreshold: 1, regions: []*Region{reg}}
			st.QueryKW("paths", key, "k", int(thr)%9)
			serveGet(st, "/api/v1/dta/kw/"+hexKey(key)+"?t="+strconv.Itoa(1+int(thr)%8))
		}
	})
}

func FuzzKeyIncrementStore(f *testing.F) {
	for _, c := range []KIConfig{
		{Layout: "default", Slots: 16, MaxRedundancy: 2},
		{Layout: "compat", Slots: 16, MaxRedundancy: 4},
	} {
		fuzzSeed(f, KIHeader(c, DefaultSeed), func(r *Region) {
			s, _ := NewKeyIncrement(r)
			for i := range uint32(5) {
				s.Add(be32(i), uint64(i)+1, c.MaxRedundancy)
			}
			s.Reset()
			s.Add(be32(1), 9, c.MaxRedundancy)
		}, be32(1), uint64(3), uint8(1))
	}
	fuzzCrafted(f, Header{Primitive: PrimKeyIncrement, Slots: 1 << 61, SlotBytes: 8, MaxN: 2, ValueBytes: 8}, 0, be32(1), uint64(1), uint8(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in, key []byte, c uint64, n uint8) {
		r := fuzzOpen(t, dir, FileKI, PrimKeyIncrement, in)
		if r == nil {
			return
		}
		defer r.Close()
		for _, reg := range []*Region{r, fuzzWriter(t, r)} {
			s, err := NewKeyIncrement(reg)
			if err != nil {
				t.Fatalf("an open region is not a key-increment store: %v", err)
			}
			if !reg.ReadOnly {
				defer reg.Close()
				s.Add(key, c, 1+int(n)%s.MaxN())
				if n == 255 {
					s.Reset()
				}
			}
			s.Count(key, int(n))
			st := &Stores{KI: s, regions: []*Region{reg}}
			st.QueryKI(key, "k")
			serveGet(st, "/api/v1/dta/ki/"+hexKey(key))
		}
	})
}

func FuzzPostcardStore(f *testing.F) {
	for _, c := range []PostcardConfig{
		{Chunks: 16, Hops: 5, Redundancy: 2, SlotBits: 32, Values: 16},
		{Chunks: 8, Hops: 16, Redundancy: 8, SlotBits: 5, Values: 8},
	} {
		fuzzSeed(f, PostcardHeader(c, DefaultSeed), func(r *Region) {
			p, _ := NewPostcard(r)
			cache := p.NewCache(4)
			for i := range uint32(6) {
				cache.Add(be32(i%3), 1+int(i)%c.Hops, 100+i, 0)
			}
			cache.Flush()
		}, be32(1), uint32(101), uint8(2), uint8(0))
	}
	fuzzCrafted(f, Header{Primitive: PrimPostcard, Slots: 1 << 61, Hops: 2, SlotBytes: 8, MaxN: 2, CheckBits: 32, ValueBytes: 4, Capacity: 1 << 61}, 0, be32(1), uint32(1), uint8(1), uint8(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in, key []byte, v uint32, hop, pathLen uint8) {
		r := fuzzOpen(t, dir, FilePostcard, PrimPostcard, in)
		if r == nil {
			return
		}
		defer r.Close()
		for _, reg := range []*Region{r, fuzzWriter(t, r)} {
			p, err := NewPostcard(reg)
			if err != nil {
				t.Fatalf("an open region is not a postcard store: %v", err)
			}
			if !reg.ReadOnly {
				defer reg.Close()
				if len(key) > MaxCacheKey {
					key = key[:MaxCacheKey]
				}
				cache := p.NewCache(2)
				cache.Add(key, 1+int(hop)%p.Hops(), v, int(pathLen)%(p.Hops()+1))
				cache.Add(val32(v), 1, v^1, 0)
				cache.Flush()
			}
			p.Query(key)
			out := make([]PCResult, 9)
			p.QueryMany([][]byte{key, key, key, key, key, key, key, key, key}, out)
			st := &Stores{PC: p, regions: []*Region{reg}}
			st.QueryPostcard(key, "k")
			serveGet(st, "/api/v1/dta/postcard/"+hexKey(key))
		}
	})
}

func val32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func FuzzAppendStore(f *testing.F) {
	for _, c := range []AppendConfig{
		{Lists: 2, Entries: 64, ValueBytes: 4},
		{Lists: 3, Entries: 64, ValueBytes: 7},
	} {
		fuzzSeed(f, AppendHeader(c), func(r *Region) {
			a, _ := NewAppend(r)
			b := a.NewBatcher(4)
			for i := range uint32(70) {
				b.Add(int(i)%c.Lists, be32(i))
			}
			b.Flush()
		}, uint8(1), uint64(3), uint16(10), []byte{9})
	}
	fuzzCrafted(f, Header{Primitive: PrimAppend, Slots: 1, Capacity: 1 << 62, ValueBytes: 4, SlotBytes: 4, DataLen: 64}, 64, uint8(0), uint64(0), uint16(5), []byte{1})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte, list uint8, cursor uint64, limit uint16, data []byte) {
		r := fuzzOpen(t, dir, FileAppend, PrimAppend, in)
		if r == nil {
			return
		}
		defer r.Close()
		for _, reg := range []*Region{r, fuzzWriter(t, r)} {
			a, err := NewAppend(reg)
			if err != nil {
				t.Fatalf("an open region is not an append store: %v", err)
			}
			l := int(list) % a.Lists()
			if !reg.ReadOnly {
				defer reg.Close()
				b := a.NewBatcher(1 + int(limit)%MaxAppendBatch)
				for range 3 {
					b.Add(l, data)
				}
				b.Flush()
			}
			st := &Stores{AP: a, regions: []*Region{reg}}
			st.PollList(l, cursor, 1+int(limit)%1000)
			st.PollList(l, a.Head(l)-min(a.Head(l), uint64(limit)), 1+int(limit)%1000)
			serveGet(st, "/api/v1/dta/list/"+strconv.Itoa(int(list))+"?cursor="+strconv.FormatUint(cursor, 10)+"&limit="+strconv.Itoa(1+int(limit)))
		}
	})
}
