package dta

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/intake-int/intake/telemetry"
)

// Queries as the HTTP API and `intake query` answer them: the same JSON from a collector
// and from a store directory opened read-only.

// KeyForms is what a key may be, as ParseKey's errors and the API's say it.
const KeyForms = `decimal, 0x-hex, an IPv4 or IPv6 address, or a 5-tuple ("SRC:SPORT > DST:DPORT PROTO" or src,dst,sport,dport,proto)`

// ParseKey reads a key as written in a URL or on the command line (docs/dta.md):
//   - decimal or 0x-hex that fits keyLen bytes: the number, big-endian in keyLen bytes (the
//     DTA wire's key width, 4 by default), so 32-bit keys read as numbers;
//   - 0x-hex longer than that: the bytes as written;
//   - an IPv4 or IPv6 address: its 4 or 16 bytes, the low keyLen bytes when the key is
//     shorter and zero-padded in front when it is longer (gen keys a flow's DTA reports by
//     its source address this way);
//   - a 5-tuple, "SRC:SPORT > DST:DPORT PROTO" as intake writes flows, or
//     src,dst,sport,dport,proto (telemetry.ParseFlowKey): encoded as FlowKeyBytes.
//
// Its errors read after "must be": the key's forms, or why this one does not fit.
func ParseKey(s string, keyLen int) ([]byte, error) {
	if strings.ContainsAny(s, ",>") {
		k, err := telemetry.ParseFlowKey(s)
		if err != nil {
			return nil, fmt.Errorf("%s (%v)", KeyForms, err)
		}
		var b [40]byte
		return append([]byte(nil), FlowKeyBytes(&b, &k)...), nil
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		if len(h)%2 == 1 {
			h = "0" + h
		}
		b, err := hex.DecodeString(h)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("%s (0x is followed by hex digits)", KeyForms)
		}
		return fit(b, keyLen, false), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return fit(a.AsSlice(), keyLen, true), nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, errors.New(KeyForms)
	}
	if keyLen < 8 && n>>(8*keyLen) != 0 {
		return nil, fmt.Errorf("a number that fits the %d-byte key (at most %d)", keyLen, uint64(1)<<(8*keyLen)-1)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return fit(b[:], min(keyLen, 8), true), nil // wider keys take numbers as 8 bytes, as before
}

// fit widens b to keyLen bytes with leading zeros and, when trim is set, keeps its low keyLen
// bytes when it is longer.
func fit(b []byte, keyLen int, trim bool) []byte {
	switch {
	case len(b) < keyLen:
		return append(make([]byte, keyLen-len(b)), b...)
	case trim && len(b) > keyLen && keyLen > 0:
		return append([]byte(nil), b[len(b)-keyLen:]...)
	}
	return append([]byte(nil), b...)
}

// KWAnswer is the JSON of a Key-Write query.
type KWAnswer struct {
	Store      string   `json:"store"`
	Key        string   `json:"key"`
	Status     string   `json:"status"`
	Value      string   `json:"value,omitempty"`
	Votes      int      `json:"votes"`
	Candidates int      `json:"candidates"`
	Threshold  int      `json:"threshold"`
	Path       []uint32 `json:"path,omitempty"` // the paths store: node ids from the source
}

// KIAnswer is the JSON of a Key-Increment query.
type KIAnswer struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
	Epoch uint64 `json:"epoch"`
}

// PCAnswer is the JSON of a Postcarding query: hops in hop order, null for a blank hop.
type PCAnswer struct {
	Key         string    `json:"key"`
	Status      string    `json:"status"`
	Hops        []*uint32 `json:"hops"`
	ValidChunks int       `json:"valid_chunks"`
}

// ListAnswer is the JSON of an Append poll.
type ListAnswer struct {
	List        int      `json:"list"`
	Entries     []string `json:"entries"`
	NextCursor  uint64   `json:"next_cursor"`
	Overwritten uint64   `json:"overwritten"`
	Head        uint64   `json:"head"`
}

func hex0x(b []byte) string { return "0x" + hex.EncodeToString(b) }

// ErrNoStore is the error of a query on a store that is not open: a data directory opened
// read-only (intake query --store) without the store's file.
var ErrNoStore = errors.New("is not in the data directory")

// noStore is the query error for a store whose file is not in the data directory.
func noStore(name, file string) error {
	return fmt.Errorf("no %s store: %s %w", name, file, ErrNoStore)
}

// QueryKW answers a Key-Write query on store "kw" or "paths" (t 0: the store's default).
func (s *Stores) QueryKW(store string, key []byte, keyText string, t int) (KWAnswer, error) {
	kw, def, file := s.KW, s.Threshold, FileKW
	if store == "paths" {
		kw, def, file = s.Paths, s.PathsThreshold, FilePaths
	}
	if kw == nil {
		return KWAnswer{}, noStore(store, file)
	}
	if t == 0 {
		t = def
	}
	r, err := kw.Query(key, 0, t)
	if err != nil {
		return KWAnswer{}, err
	}
	a := KWAnswer{Store: store, Key: keyText, Status: r.Status, Votes: r.Votes, Candidates: r.Candidates, Threshold: t}
	if r.Status == Found {
		a.Value = hex0x(r.Bytes())
		if store == "paths" {
			for i := 0; i+4 <= r.ValueLen; i += 4 {
				if id := binary.BigEndian.Uint32(r.Value[i:]); id != 0 {
					a.Path = append(a.Path, id)
				}
			}
		}
	}
	return a, nil
}

// QueryKI answers a Key-Increment query.
func (s *Stores) QueryKI(key []byte, keyText string) (KIAnswer, error) {
	if s.KI == nil {
		return KIAnswer{}, noStore("key-increment", FileKI)
	}
	c, err := s.KI.Count(key, 0)
	return KIAnswer{Key: keyText, Count: c, Epoch: s.KI.Epoch()}, err
}

// QueryPostcard answers a Postcarding query.
func (s *Stores) QueryPostcard(key []byte, keyText string) (PCAnswer, error) {
	if s.PC == nil {
		return PCAnswer{}, noStore("postcard", FilePostcard)
	}
	r := s.PC.Query(key)
	a := PCAnswer{Key: keyText, Status: r.Status, ValidChunks: r.Valid, Hops: []*uint32{}}
	if r.Status == Found {
		last := 0
		for i := 0; i < r.NHops; i++ {
			if r.Present&(1<<i) != 0 {
				last = i + 1
			}
		}
		for i := 0; i < last; i++ {
			if r.Present&(1<<i) != 0 {
				v := r.Hops[i]
				a.Hops = append(a.Hops, &v)
			} else {
				a.Hops = append(a.Hops, nil)
			}
		}
	}
	return a, nil
}

// PollList polls list l from cursor, at most max entries.
func (s *Stores) PollList(l int, cursor uint64, max int) (ListAnswer, error) {
	if s.AP == nil {
		return ListAnswer{}, noStore("append", FileAppend)
	}
	if l < 0 || l >= s.AP.Lists() {
		return ListAnswer{}, fmt.Errorf("list %d: lists are 0 to %d", l, s.AP.Lists()-1)
	}
	buf := make([]byte, max*s.AP.Stride())
	n, next, over, err := s.AP.Poll(l, cursor, max, buf)
	if err != nil {
		return ListAnswer{}, err
	}
	a := ListAnswer{List: l, Entries: make([]string, n), NextCursor: next, Overwritten: over, Head: s.AP.Head(l)}
	for i := range n {
		a.Entries[i] = hex0x(buf[i*s.AP.Stride() : (i+1)*s.AP.Stride()])
	}
	return a, nil
}

// RegionStats describe one region for /dta/stats.
type RegionStats struct {
	File       string `json:"file"`
	Primitive  string `json:"primitive"`
	Layout     string `json:"layout"`
	Bytes      int    `json:"bytes"`
	Slots      uint64 `json:"slots"`
	SlotBytes  uint32 `json:"slot_bytes"`
	MaxN       uint32 `json:"max_redundancy"`
	CheckBits  uint32 `json:"checksum_bits,omitempty"`
	ValueBytes uint32 `json:"value_bytes"`
	Hops       uint32 `json:"hops,omitempty"`
	Capacity   uint64 `json:"capacity,omitempty"`
	HugePages  bool   `json:"huge_pages"`
	// Fill is the share of slots that hold data (Region.Fill; estimated from a sample in
	// a store of more than 2^18 slots); Append: of the lists' entries.
	Fill *float64 `json:"fill,omitempty"`
}

// Stats is the JSON of /api/v1/dta/stats.
type Stats struct {
	DataDir           string            `json:"data_dir"`
	Regions           []RegionStats     `json:"regions"`
	Written           map[string]uint64 `json:"written,omitempty"`
	Bad               map[string]uint64 `json:"bad,omitempty"`
	PostcardEmissions map[string]uint64 `json:"postcard_emissions,omitempty"`
	KnownValues       uint64            `json:"known_values"`
	ListHeads         []uint64          `json:"list_heads,omitempty"`
	Snapshots         uint64            `json:"snapshots"`
	Resets            uint64            `json:"resets"`
	// Immediate counts written DTA reports that carried the immediate flag (docs/dta.md).
	Immediate uint64 `json:"immediate"`
	// Faults counts memory faults on the mappings (fault.go); Offline is the first, which
	// took the stores offline: nothing is read from them or written to them since.
	Faults  uint64 `json:"faults"`
	Offline string `json:"offline,omitempty"`
}

var primNames = map[uint32]string{PrimKeyWrite: "key-write", PrimAppend: "append", PrimKeyIncrement: "key-increment", PrimPostcard: "postcard"}

// Stats describes the stores.
func (s *Stores) Stats() Stats {
	st := Stats{DataDir: s.Dir, Faults: s.Faults()}
	down := s.Offline()
	if down != nil {
		st.Offline = down.Error()
	}
	for _, r := range s.regions {
		h := r.Hdr
		lay := "default"
		if h.Layout == LayoutCompat {
			lay = "compat"
		}
		st.Regions = append(st.Regions, RegionStats{File: r.Path, Primitive: primNames[h.Primitive], Layout: lay, Bytes: r.Size(),
			Slots: h.Slots, SlotBytes: h.SlotBytes, MaxN: h.MaxN, CheckBits: h.CheckBits, ValueBytes: h.ValueBytes,
			Hops: h.Hops, Capacity: h.Capacity, HugePages: r.Huge})
		if down != nil {
			continue
		}
		if f, ok := r.Fill(); ok {
			st.Regions[len(st.Regions)-1].Fill = &f
		}
	}
	if down != nil {
		return st
	}
	if s.PC != nil {
		st.KnownValues = s.PC.Known()
	}
	if s.AP != nil {
		var held, capacity uint64
		for l := 0; l < s.AP.Lists(); l++ {
			st.ListHeads = append(st.ListHeads, s.AP.Head(l))
			held += min(s.AP.Head(l), s.AP.cap)
			capacity += s.AP.cap
		}
		for i, r := range s.regions {
			if r.Hdr.Primitive == PrimAppend && capacity > 0 {
				f := float64(held) / float64(capacity)
				st.Regions[i].Fill = &f
			}
		}
	}
	return st
}

// Stats adds the translator's counters to the stores' description.
func (t *Translator) Stats() Stats {
	st := t.St.Stats()
	st.Written, st.Bad = map[string]uint64{}, map[string]uint64{}
	for i, n := range WrittenNames {
		st.Written[n] = t.Written(i)
	}
	for i, n := range BadReasons {
		st.Bad[n] = t.Bad(i)
	}
	st.PostcardEmissions = map[string]uint64{"complete": t.Cache.Complete.Load(), "early": t.Cache.Early.Load(), "flushed": t.Cache.Flushed.Load()}
	st.Snapshots, st.Resets, st.Immediate = t.Snapshots.Load(), t.Resets.Load(), t.Immediate.Load()
	return st
}
