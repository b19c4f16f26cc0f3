package dta

import (
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Store files are untrusted input (docs/dta.md, "Data directory and store files"): these
// reproduce the crafted files that crashed `intake query --store` and serve.

// craftRegion writes name in dir: header h as given (DataLen included, not computed) and
// data bytes after it.
func craftRegion(t *testing.T, dir, name string, h Header, data []byte) {
	t.Helper()
	b := make([]byte, headerSize+len(data))
	h.put(b)
	copy(b[headerSize:], data)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Headers whose sizes overflow 64 bits when multiplied out, so that the old size check
// (DataLen == Slots·SlotBytes) passed on a 4 KiB file: each is refused before it is mapped,
// with the field named.
func TestCraftedGeometryRefused(t *testing.T) {
	head := make([]byte, 64)
	binary.LittleEndian.PutUint64(head, 5) // an Append head, so that a poll reads the ring
	for _, tc := range []struct {
		name string
		h    Header
		data []byte
		want string
	}{
		{FileKW, Header{Primitive: PrimKeyWrite, Slots: 1 << 61, SlotBytes: 8, MaxN: 2, CheckBits: 32, ValueBytes: 4, DataLen: 0}, nil,
			"slots 2305843009213693952: allowed is a power of two up to 2^34"},
		{FileKI, Header{Primitive: PrimKeyIncrement, Slots: 1 << 61, SlotBytes: 8, MaxN: 2, ValueBytes: 8, DataLen: 0}, nil,
			"slots 2305843009213693952: allowed is a power of two up to 2^34"},
		{FilePostcard, Header{Primitive: PrimPostcard, Slots: 1 << 61, Hops: 2, SlotBytes: 8, MaxN: 2, CheckBits: 32, ValueBytes: 4, Capacity: 1 << 61, DataLen: 0}, nil,
			"chunks 2305843009213693952: allowed is a power of two up to 2^32"},
		{FileAppend, Header{Primitive: PrimAppend, Slots: 1, Capacity: 1 << 62, ValueBytes: 4, SlotBytes: 4, DataLen: 64}, head,
			"entries 4611686018427387904: allowed is a power of two from 64 to 2^30"},
		// Within every bound but the data length: the file is as long as the header says, the
		// geometry needs more.
		{FileKW, Header{Primitive: PrimKeyWrite, Slots: 1 << 10, SlotBytes: 8, MaxN: 2, CheckBits: 32, ValueBytes: 4, DataLen: 64}, make([]byte, 64),
			"data length 64: the geometry (primitive 1 layout 0 slots 1024 slot_bytes 8 n 2 b 32 value_bytes 4 hops 0 capacity 0 seed 0x0) gives 8192"},
		{FileKI, Header{Primitive: PrimKeyIncrement, Slots: 1 << 4, SlotBytes: 8, MaxN: 9, ValueBytes: 8, DataLen: 128}, make([]byte, 128),
			"redundancy 9: allowed is 1 to 8"},
		{FilePostcard, Header{Primitive: PrimPostcard, Slots: 1 << 4, Hops: 17, SlotBytes: 72, MaxN: 2, CheckBits: 32, ValueBytes: 4, Capacity: 1 << 4, DataLen: 1280}, make([]byte, 1280),
			"hops 17: allowed is 1 to 16"},
		{FileAppend, Header{Primitive: PrimAppend, Slots: 1, Capacity: 64, ValueBytes: 4, SlotBytes: 1 << 31, DataLen: 64 + 64<<31}, nil,
			"slot_bytes 2147483648: allowed is 4 (value_bytes rounded up to 4)"},
		{FileKW, Header{Primitive: 7}, nil,
			"primitive 7: allowed are 1 (key-write), 2 (append), 3 (key-increment) and 4 (postcard)"},
	} {
		dir := t.TempDir()
		craftRegion(t, dir, tc.name, tc.h, tc.data)
		st, err := OpenStoresReadOnly(dir)
		if want := filepath.Join(dir, tc.name) + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s %s: %v, want %s", tc.name, &tc.h, err, want)
		}
		if err == nil {
			st.Close()
		}
	}
}

// A region whose header says one thing and whose file another is refused with both named.
func TestRegionFileSizeMismatch(t *testing.T) {
	dir := t.TempDir()
	h := KWHeader(KWConfig{Layout: "default", Slots: 1 << 4, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 4}, DefaultSeed)
	craftRegion(t, dir, FileKW, h, make([]byte, 64)) // 128 needed
	_, err := OpenRegion(filepath.Join(dir, FileKW))
	if want := filepath.Join(dir, FileKW) + ": header says 128 data bytes, the file has 64"; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
}

// allocDuring returns the bytes f allocates.
func allocDuring(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A postcard store whose known-values counter (header offset 104) says 2^31 opens, and its
// queries size the lookup table from the entries present: the 32 GiB table the counter
// asked for is not allocated, by `intake query --store`, by a writer reopening the file, or
// by GET /api/v1/dta/postcard/{key}; the counter is reported bounded by the table's capacity.
func TestPostcardKnownValuesCounter(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.PC.Learn(7)
	var vals [MaxHops]uint32
	vals[0], vals[1] = 7, 7
	st.PC.Write(be32(42), &vals, 3)
	st.Close()
	path := filepath.Join(dir, FilePostcard)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(binary.LittleEndian.AppendUint64(nil, 1<<31), offValCount)
	f.Close()

	check := func(what string, p *Postcard) {
		t.Helper()
		var q PCResult
		if n := allocDuring(func() { q = p.Query(be32(42)) }); n > 1<<20 {
			t.Errorf("%s: a query allocated %d bytes", what, n)
		}
		if q.Status != Found || q.Present != 3 || q.Hops[0] != 7 || q.Hops[1] != 7 {
			t.Errorf("%s: %+v", what, q)
		}
		if k := p.Known(); k != uint64(cfg.Postcard.Values) {
			t.Errorf("%s: known %d, want the capacity %d", what, k, cfg.Postcard.Values)
		}
	}
	ro, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	check("read-only", ro.PC)

	mux := http.NewServeMux()
	a := NewAPI(ro, 4)
	mux.HandleFunc("GET /api/v1/dta/postcard/{key}", a.handlePostcard)
	rec := httptest.NewRecorder()
	if n := allocDuring(func() { mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/dta/postcard/43", nil)) }); n > 1<<20 {
		t.Errorf("GET allocated %d bytes", n)
	}
	want := "{\n  \"key\": \"43\",\n  \"status\": \"not_found\",\n  \"hops\": [],\n  \"valid_chunks\": 0\n}"
	if body := strings.TrimSpace(rec.Body.String()); rec.Code != 200 || body != want {
		t.Errorf("GET: %d %s", rec.Code, body)
	}

	w, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	check("writer", w.PC)
}

// Append heads and reserves are the file's: a poll near the top of the 64-bit range neither
// wraps its end below the cursor nor slices past its buffer.
func TestAppendPollHugeCounters(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	const h = ^uint64(0) - 99
	st.AP.head(0).Store(h)
	st.AP.reserve(0).Store(^uint64(0))
	st.Close()
	ro, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	a, err := ro.PollList(0, h-10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// Entries h-10 .. h-1 read, then all counted overwritten by the batch the reserve says
	// began (it reaches 2^64-1-64): 10 plus the 35 between the head and that.
	if len(a.Entries) != 0 || a.Overwritten != 45 || a.NextCursor != ^uint64(0)-64 || a.Head != h {
		t.Errorf("%+v", a)
	}
}

// kwOnly opens read-only a directory that holds only a small Key-Write store of layout.
func kwOnly(t *testing.T, layout string) *Stores {
	t.Helper()
	dir := t.TempDir()
	h := KWHeader(KWConfig{Layout: layout, Slots: 1 << 4, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 4}, DefaultSeed)
	craftRegion(t, dir, FileKW, h, make([]byte, h.DataLen))
	st, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The HTTP answers over a read-only directory that holds only some of the stores: the
// missing ones are a 400 that says the store's file is not there, never a nil store
// dereferenced. (They said "parameter key: \"1\": must be no postcard store".)
func TestAPIMissingStores(t *testing.T) {
	st := kwOnly(t, "default")
	mux := http.NewServeMux()
	a := NewAPI(st, 4)
	mux.HandleFunc("GET /api/v1/dta/kw/{key}", a.handleKW)
	mux.HandleFunc("GET /api/v1/dta/ki/{key}", a.handleKI)
	mux.HandleFunc("GET /api/v1/dta/postcard/{key}", a.handlePostcard)
	mux.HandleFunc("GET /api/v1/dta/list/{id}", a.handleList)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/dta/kw/1", 200, `"status": "not_found"`},
		{"/api/v1/dta/kw/1?store=paths", 400, `"error": "no paths store: paths.dta is not in the data directory"`},
		{"/api/v1/dta/ki/1", 400, `"error": "no key-increment store: ki.dta is not in the data directory"`},
		{"/api/v1/dta/postcard/1", 400, `"error": "no postcard store: postcard.dta is not in the data directory"`},
		{"/api/v1/dta/list/0", 400, `"error": "parameter id: \"0\": must be a list id of the append store (there is none)"`},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.path, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}

// TestAPICompatKeyLen: a key of another length than a compat store's 4 bytes is a 400 that
// says what the key must be. It said "must be compat layout: keys are 4 bytes".
func TestAPICompatKeyLen(t *testing.T) {
	st := kwOnly(t, "compat")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/dta/kw/{key}", NewAPI(st, 8).handleKW)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/dta/kw/1", nil))
	if want := `"error": "parameter key: \"1\": must be a 4-byte key: the store has the compat layout"`; rec.Code != 400 || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("%d %s, want 400 with %s", rec.Code, rec.Body.String(), want)
	}
}
