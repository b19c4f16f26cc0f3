package dta

import (
	"errors"
	"sync/atomic"
)

// Append (DTA §4, A.3): per-list rings that the translator fills a batch at a time. Unlike
// the prototype, whose head wraps to 0 and loses one batch at each wrap, a list's head is a
// 64-bit count of entries ever appended: entry s lives at ring position s mod capacity, and
// a batch that straddles the end of the ring is written in two parts. "Empty" is explicit:
// entries exist for s in [max(0, head-capacity), head), so 0 is ordinary data.
//
// Writers need no lock, so that the XDP program (dta.kernel, package xdp) and the translator
// can append to the same lists. Each list header holds three counts: reserve, raised by a
// writer to claim the positions it is about to write (one atomic add); done, raised by the
// entries a writer has finished; and head, which a writer that finishes moves up to reserve
// when done equals reserve, every claim then being complete. A reader therefore sees only
// written entries below head; one that copies entries and then reads reserve knows which of
// them a concurrent batch may have overwritten, and counts those as overwritten instead of
// returning them (Poll).

const (
	listHdrBytes   = 64 // head, reserve, done, padding: one cache line per list
	MaxAppendBatch = 64
)

// Append is an Append store over a region.
type Append struct {
	R      *Region
	lists  int
	cap    uint64
	stride int
	rings  uint64 // offset of the first ring
}

// AppendHeader is the region header for an Append configuration.
func AppendHeader(c AppendConfig) Header {
	h := Header{Primitive: PrimAppend, Slots: uint64(c.Lists), Capacity: uint64(c.Entries),
		ValueBytes: uint32(c.ValueBytes), SlotBytes: uint32((c.ValueBytes + 3) &^ 3)}
	h.DataLen = h.Slots*listHdrBytes + h.Slots*h.Capacity*uint64(h.SlotBytes)
	return h
}

// NewAppend reads an Append store's geometry from its region.
func NewAppend(r *Region) (*Append, error) {
	if err := r.checkAs(PrimAppend); err != nil {
		return nil, err
	}
	h := &r.Hdr
	a := &Append{R: r, lists: int(h.Slots), cap: h.Capacity, stride: int(h.SlotBytes), rings: h.Slots * listHdrBytes}
	if !r.ReadOnly {
		a.settle()
	}
	return a, nil
}

// settle makes every list's claims its head, before any writer runs: a batch a stopped
// writer claimed and did not finish is forgotten (its positions are written again by the
// next claims), and a store of a version without done starts with done = head.
func (a *Append) settle() {
	for l := range a.lists {
		h := a.head(l).Load()
		a.reserve(l).Store(h)
		a.done(l).Store(h)
	}
}

// Lists is the number of lists.
func (a *Append) Lists() int { return a.lists }

// Capacity is each list's ring size, entries.
func (a *Append) Capacity() uint64 { return a.cap }

// Stride is an entry's width in bytes.
func (a *Append) Stride() int { return a.stride }

func (a *Append) head(l int) *atomic.Uint64 { return a.R.atom(uint64(l) * listHdrBytes) }
func (a *Append) reserve(l int) *atomic.Uint64 {
	return a.R.atom(uint64(l)*listHdrBytes + 8)
}
func (a *Append) done(l int) *atomic.Uint64 { return a.R.atom(uint64(l)*listHdrBytes + 16) }

// Head is the number of entries ever appended to list l.
func (a *Append) Head(l int) uint64 { return a.head(l).Load() }

func (a *Append) ring(l int) []byte {
	sz := a.cap * uint64(a.stride)
	o := a.rings + uint64(l)*sz
	return a.R.Data[o : o+sz]
}

// WriteBatch appends the k entries in b (k·Stride bytes, k ≤ MaxAppendBatch) to list l. Any
// number of writers may append at once, the kernel's included: each claims its positions,
// writes them and publishes (the package doc). k must not exceed the capacity.
func (a *Append) WriteBatch(l int, b []byte, k int) {
	a.write(l, a.claim(l, k), b, k)
	a.commit(l, k)
}

// claim reserves k positions of list l and returns the first.
func (a *Append) claim(l, k int) uint64 { return a.reserve(l).Add(uint64(k)) - uint64(k) }

// write puts the k entries in b at positions s... of list l.
func (a *Append) write(l int, s uint64, b []byte, k int) {
	ring := a.ring(l)
	pos := int(s&(a.cap-1)) * a.stride
	n := copy(ring[pos:], b[:k*a.stride])
	copy(ring, b[n:k*a.stride]) // the part past the end of the ring, at its start
}

// commit counts k written entries of list l as done and publishes them if it can.
func (a *Append) commit(l, k int) {
	a.done(l).Add(uint64(k))
	a.publish(l)
}

// publish moves list l's head up to its reserve if every claim is complete. done is read
// before reserve: equal, every position claimed by the time reserve was read had been
// written by the time done was (done never counts a claim made after it was read). A writer
// that sees a claim outstanding leaves the head to that claim's writer, which publishes in
// turn when it finishes.
func (a *Append) publish(l int) {
	head, reserve, done := a.head(l), a.reserve(l), a.done(l)
	for {
		d := done.Load()
		r := reserve.Load()
		if d != r {
			return
		}
		h := head.Load()
		if h >= r || head.CompareAndSwap(h, r) {
			return
		}
	}
}

// ErrCursor is returned for a cursor past the head.
var ErrCursor = errors.New("cursor is past the list's head")

// Poll copies up to max entries of list l from cursor on into dst (which must hold
// max·Stride bytes) and returns the entries copied, the cursor to poll from next, and how
// many entries from cursor on were overwritten before they could be read.
func (a *Append) Poll(l int, cursor uint64, max int, dst []byte) (n int, next, overwritten uint64, err error) {
	h := a.head(l).Load()
	if cursor > h {
		return 0, cursor, 0, ErrCursor
	}
	if h > a.cap && cursor < h-a.cap {
		overwritten = h - a.cap - cursor
		cursor = h - a.cap
	}
	end := cursor + min(h-cursor, uint64(max)) // h and reserve are the file's: no overflow
	ring := a.ring(l)
	for s := cursor; s < end; s++ {
		p := int(s&(a.cap-1)) * a.stride
		copy(dst[n*a.stride:], ring[p:p+a.stride])
		n++
	}
	// Entries a batch begun meanwhile may have overwritten: s < reserve - capacity.
	if r := a.reserve(l).Load(); r > a.cap && cursor < r-a.cap {
		lost := min(r-a.cap, end) - cursor
		copy(dst, dst[int(lost)*a.stride:n*a.stride])
		n -= int(lost)
		overwritten += lost
		if r-a.cap > end {
			overwritten += r - a.cap - end
			end = r - a.cap
		}
	}
	return n, end, overwritten, nil
}

// Batcher is one worker's translator-side batches: B entries per list before a write.
type Batcher struct {
	a     *Append
	batch int
	buf   []byte
	cnt   []uint8
	in    []bool
	dirty []int32 // lists with a partial batch, so that Flush need not scan every list
}

// NewBatcher makes a batcher of batch entries per list.
func (a *Append) NewBatcher(batch int) *Batcher {
	return &Batcher{a: a, batch: batch, buf: make([]byte, a.lists*batch*a.stride), cnt: make([]uint8, a.lists), dirty: make([]int32, 0, a.lists), in: make([]bool, a.lists)}
}

// Add queues data (right-aligned into the entry width) for list l, writing the batch when
// it is full. It does not allocate. A 4-byte entry (the DTA wire's data) is one 4-byte move:
// a copy of a length known only at run time is a call to memmove, which costs more than the
// rest of Add.
func (b *Batcher) Add(l int, data []byte) {
	st := b.a.stride
	c := int(b.cnt[l])
	at := (l*b.batch + c) * st
	if st == 4 && len(data) == 4 {
		*(*[4]byte)(b.buf[at : at+4]) = [4]byte(data)
	} else {
		e := b.buf[at : at+st]
		if len(data) > st {
			data = data[len(data)-st:]
		}
		pad := st - len(data)
		clear(e[:pad])
		copy(e[pad:], data)
	}
	if c == 0 && !b.in[l] {
		b.in[l] = true
		b.dirty = append(b.dirty, int32(l))
	}
	c++
	if c == b.batch {
		base := l * b.batch * st
		b.a.WriteBatch(l, b.buf[base:base+c*st], c)
		c = 0
	}
	b.cnt[l] = uint8(c)
}

// Flush writes every partial batch.
func (b *Batcher) Flush() {
	st := b.a.stride
	for _, l32 := range b.dirty {
		l := int(l32)
		b.in[l] = false
		if c := b.cnt[l]; c > 0 {
			base := l * b.batch * st
			b.a.WriteBatch(l, b.buf[base:base+int(c)*st], int(c))
			b.cnt[l] = 0
		}
	}
	b.dirty = b.dirty[:0]
}
