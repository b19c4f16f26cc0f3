package flowcache

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// Kernel is the flow cache in the XDP program (flowcache.kernel, docs/flowcache.md "In the
// kernel") as the cache sees it. The program applies this package's update to the reports
// it parses, with the same hash, rows, buckets and eviction, in a table of this package's
// layout that user space reads in place, and marks the reports it lifts anyway
// (telemetry.KernelCached) so that Process skips them. The cache's own table keeps what
// the program could not parse. Linked (SetKernel), the cache's queries read both tables
// (the kernel's first), its drain hands the kernel's evicted records to the same sinks, its
// ager sweeps both, and its histograms and counters add the kernel's.
type Kernel interface {
	// Table returns the kernel's table: Config.Rows rows of this package's layout, read
	// only; a row's first 32-bit word is a sequence count, odd while the program writes the
	// row. Its times are on the kernel's clock: ClockOffset turns them into Unix ns.
	Table() []uint64
	// ClockOffset returns what turns the table's times into Unix ns (the receive time).
	ClockOffset() int64
	// Age evicts every flow last updated before cut (the table's clock) into the eviction
	// ring (reason idle) and returns how many.
	Age(cut int64) (int, error)
	// ReadEvicted calls fn with every evicted bucket waiting in the eviction ring and its
	// Reason, without waiting for more; fn must not keep b.
	ReadEvicted(fn func(b []uint64, why uint8)) (int, error)
	// Pending returns the evicted buckets waiting in the ring.
	Pending() int
	// Switches returns the switch ids with histograms.
	Switches() ([]uint32, error)
	// Hist adds switch sw's histograms (hop latency, queue occupancy, tx utilization: bins
	// counters each) into dst; false when sw has none.
	Hist(sw uint32, dst []uint64) (bool, error)
	// E2E adds the end-to-end latency histogram into dst.
	E2E(dst []uint64) error
	// Counts returns the program's counters.
	Counts() (KernelCounts, error)
}

// KernelCounts are the kernel flow cache's counters (xdp.FlowCacheCounts, field for field).
type KernelCounts struct {
	Reports   uint64 `json:"reports"`
	NoHops    uint64 `json:"skipped_no_hops"`
	NoFlow    uint64 `json:"skipped_no_flow"`
	Truncated uint64 `json:"truncated_paths"`
	Updates   uint64 `json:"updates"`
	Inserts   uint64 `json:"inserts"`
	// New flows took a free bucket: the table holds New - Idle flows.
	New        uint64 `json:"-"`
	Collisions uint64 `json:"collisions"`
	Idle       uint64 `json:"idle"`
	Pushed     uint64 `json:"ring_pushed"`
	RingFull   uint64 `json:"ring_drops"` // evicted records lost: the ring was full
	Overflow   uint64 `json:"histogram_switch_overflow"`
	LockBusy   uint64 `json:"lock_busy"` // updates not applied: their row stayed held
	Switches   int    `json:"histogram_switches"`
}

// KernelStats is the kernel's part of GET /api/v1/flowcache/stats (the totals beside it
// include it).
type KernelStats struct {
	KernelCounts
	Flows int64 `json:"flows"`
	Bytes int   `json:"bytes"`
	// Pending are the evicted records waiting in the kernel's ring.
	Pending int `json:"ring_pending"`
	// Errors counts failed reads of the kernel's state (the ager, the ring, counters).
	Errors uint64 `json:"errors"`
}

// kernelLink is a linked Kernel and a view of its table.
type kernelLink struct {
	k Kernel
	t *table // the kernel's table, in this package's layout (read as a seqlock reader)
}

// kernelRef is the cache's link to the kernel, shared with its Histograms. Whoever uses
// the link holds mu's read lock, so that SetKernel(nil) returns only when nothing reads the
// kernel's table any more (its owner unmaps it next).
type kernelRef struct {
	mu sync.RWMutex
	l  *kernelLink
}

// use calls fn with the link under the read lock; false without a kernel.
func (r *kernelRef) use(fn func(l *kernelLink)) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.l == nil {
		return false
	}
	fn(r.l)
	return true
}

// SetKernel links the cache to the flow cache in the kernel k (nil unlinks, once nothing
// reads k any more): from now on its queries, drain, ager, histograms and counters include
// k's. k's table must have this cache's geometry.
func (f *FlowCache) SetKernel(k Kernel) error {
	var l *kernelLink
	if k != nil {
		mem := k.Table()
		if len(mem) != f.t.rows*f.t.rowW {
			return fmt.Errorf("flowcache: the kernel's table has %d words, want %d (%d rows × %d)", len(mem), f.t.rows*f.t.rowW, f.t.rows, f.t.rowW)
		}
		l = &kernelLink{k: k, t: f.t.view(mem)}
	}
	f.kern.mu.Lock()
	f.kern.l = l
	f.kern.mu.Unlock()
	return nil
}

// view returns a table of t's geometry over mem (whole rows): the kernel's table, or a copy
// of one row.
func (t *table) view(mem []uint64) *table {
	rows := len(mem) / t.rowW
	return &table{rows: rows, buckets: t.buckets, hops: t.hops, mask: uint64(rows - 1),
		hdrW: t.hdrW, bktW: t.bktW, rowW: t.rowW, mem: mem}
}

// kernelErr counts a failed read of the kernel's state.
func (f *FlowCache) kernelErr(err error) {
	if err != nil {
		f.kernErrs.Add(1)
	}
}

// readRow copies row `row` of a table that another writer updates under its rows'
// sequence counts (the kernel's) into dst (rowW words): a seqlock read, retried until the
// count was even and unchanged across the copy. The copy's count is cleared, as an
// unlocked row's lock word is.
func (t *table) readRow(row int, dst []uint64) {
	src := t.mem[t.rowOff(uint64(row)):][:t.rowW]
	seq := (*uint32)(unsafe.Pointer(&src[0]))
	for i := 0; ; i++ {
		if v := atomic.LoadUint32(seq); v&1 == 0 {
			for j := range dst {
				dst[j] = atomic.LoadUint64(&src[j])
			}
			if atomic.LoadUint32(seq) == v {
				dst[0] &^= 0xffffffff
				return
			}
		}
		if i > 16 {
			runtime.Gosched()
		}
	}
}

// occupied reports whether row r of a table another writer updates holds a flow, from its
// tags alone (a row that takes its first flow as a walk passes is as if the walk had passed
// it just before, as in a walk of the cache's own table).
func (t *table) occupied(r int) bool {
	tags := t.tags(t.rowOff(uint64(r)))
	for i := range tags {
		if atomic.LoadUint32(&tags[i]) != 0 {
			return true
		}
	}
	return false
}

// rows calls fn with every occupied bucket of the kernel's table whose last update
// (Unix ns) is ≥ since, its times made Unix ns: a row at a time, copied (readRow).
func (l *kernelLink) rows(since int64, fn func(b []uint64, h *bucketHdr)) {
	t := l.t
	off := l.k.ClockOffset()
	row := make([]uint64, t.rowW)
	view := t.view(row)
	for r := 0; r < t.rows; r++ {
		if !t.occupied(r) {
			continue
		}
		t.readRow(r, row)
		for i, g := range view.tags(0) {
			if g == 0 {
				continue
			}
			boff := view.bucketOff(0, i)
			h := view.hdr(boff)
			h.First += off
			h.Last += off
			if h.Last >= since {
				fn(row[boff:boff+t.bktW], h)
			}
		}
	}
}

// lookup copies flow k's bucket in the kernel's table into rec, its times Unix ns.
func (l *kernelLink) lookup(k *telemetry.FlowKey, rec *record.Record) bool {
	t := l.t
	h := telemetry.FlowHash(k)
	tag := uint32(h>>32) | 1
	row := make([]uint64, t.rowW)
	t.readRow(int(h&t.mask), row)
	view := t.view(row)
	for i, g := range view.tags(0) {
		if g == tag {
			boff := view.bucketOff(0, i)
			if view.hdr(boff).Key == *k {
				view.decode(row[boff:boff+t.bktW], rec)
				off := l.k.ClockOffset()
				rec.First += off
				rec.Last += off
				return true
			}
		}
	}
	return false
}

// walkAll calls fn with every occupied bucket of the cache's table and then of the
// kernel's, whose last update is ≥ since (the cache's under its row's lock, the kernel's
// a copy); fn must not keep b.
func (f *FlowCache) walkAll(since int64, fn func(b []uint64, h *bucketHdr)) {
	f.t.walk(since, func(b []uint64, h *bucketHdr) bool {
		fn(b, h)
		return false
	})
	f.kern.use(func(l *kernelLink) { l.rows(since, fn) })
}

// ageKernel sweeps the kernel's table: flows last updated before cut (Unix ns).
func (f *FlowCache) ageKernel(cut int64) (n int) {
	f.kern.use(func(l *kernelLink) {
		var err error
		n, err = l.k.Age(cut - l.k.ClockOffset())
		f.kernelErr(err)
	})
	return n
}

// drainKernel hands the kernel's evicted records to the sinks.
func (f *FlowCache) drainKernel(rec *record.Record) (n int) {
	f.kern.use(func(l *kernelLink) {
		off := l.k.ClockOffset()
		var err error
		n, err = l.k.ReadEvicted(func(b []uint64, why uint8) {
			f.t.decode(b, rec)
			rec.First += off
			rec.Last += off
			rec.Reason = record.Reason(why)
			for _, s := range f.deps.Records {
				s(rec)
			}
			f.exported.Add(1)
			rec.Hops = nil // a sink may keep what it was given
		})
		f.kernelErr(err)
	})
	return n
}

// kernelStats adds the kernel's counters to st and returns its part.
func (f *FlowCache) kernelStats(st *Stats) (ks *KernelStats) {
	f.kern.use(func(l *kernelLink) {
		c, err := l.k.Counts()
		f.kernelErr(err)
		ks = &KernelStats{KernelCounts: c, Flows: int64(c.New) - int64(c.Idle), Bytes: len(l.t.mem) * 8}
		ks.Pending = l.k.Pending()
	})
	if ks == nil {
		return nil
	}
	c := &ks.KernelCounts
	st.Flows += ks.Flows
	st.Reports += c.Reports
	st.Updates += c.Updates
	st.Inserts += c.Inserts
	st.SkippedNoFlow += c.NoFlow
	st.SkippedNoHops += c.NoHops
	st.TruncatedPaths += c.Truncated
	st.Evictions.Collision += c.Collisions
	st.Evictions.Idle += c.Idle
	st.Rings.Pushed += c.Pushed
	st.Rings.Drops += c.RingFull
	st.Rings.Pending += ks.Pending
	st.SwitchOverflow += c.Overflow
	ks.Errors = f.kernErrs.Load()
	return ks
}

// kernelCounts adds the kernel's histograms of switch sw (k a Metric, or e2eHist) to dst;
// false when it has none.
func (h *Histograms) kernelCounts(sw uint32, k int, dst []uint64) (ok bool) {
	h.kern.use(func(l *kernelLink) {
		if k == e2eHist {
			ok = l.k.E2E(dst) == nil
			return
		}
		all := make([]uint64, int(record.NumMetrics)*h.bins)
		var err error
		if ok, err = l.k.Hist(sw, all); !ok || err != nil {
			ok = false
			return
		}
		for i := range dst {
			dst[i] += all[k*h.bins+i]
		}
	})
	return ok
}

// kernelSwitches adds the kernel's switches with histograms to ids, sorted, each once.
func (h *Histograms) kernelSwitches(ids []uint32) []uint32 {
	var more []uint32
	h.kern.use(func(l *kernelLink) { more, _ = l.k.Switches() })
	if len(more) == 0 {
		return ids
	}
	ids = append(ids, more...)
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
