package flowcache

import (
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// Histograms are the per-switch distributions of §III-C ("Tracking Distribution for INT
// Metrics"): for each switch one array of bin counters per metric (hop latency, queue
// occupancy, tx utilization), plus one for the end-to-end latency (switch "e2e"), each
// counter incremented once per observed value.
//
// Switch ids map to a dense index through an open-addressed table read without a lock
// (inserts, rare, take a mutex). Counters are sharded per ingest worker (at most
// maxHistShards) so that the atomic increments stay in the incrementing core's cache; a
// query sums the shards. The batch path (ProcessBatch) counts a batch in a plain per-worker
// delta and adds it to the shard at the batch's end: one atomic add per counter the batch
// touched, not one per value.
type Histograms struct {
	cfg    HistConfig
	log    bool
	widths [numHist]uint64
	bins   int

	mu    sync.Mutex
	slots []atomic.Uint64 // (index+1)<<32 | switch id; 0 empty
	smask uint64
	n     atomic.Int64 // switches indexed

	shards   [][]uint64 // per shard: [switch][numHist-1 metrics][bins], then e2e [bins]
	perShard int
	overflow atomic.Uint64 // samples of switches past max_switches

	deltas []histDelta // per worker: the batch path's counts not yet in the worker's shard

	kern *kernelRef // flowcache.kernel: the program's histograms, added in (the cache's link)
}

// histDelta is what one worker's batch path has counted and not yet added to its shard:
// plain increments while it works through a batch, added to the shard (one atomic add per
// counter touched) once at the batch's end. dirty lists the counters with n > 0.
type histDelta struct {
	n     []uint32
	dirty []int32
	memo  [histMemoSize]histMemo   // switch id → index, direct mapped (indexes are never reused)
	si    [telemetry.MaxHops]int32 // histBatch's scratch: a report's hops' switch indexes
}

// histMemoSize is the size of a worker's memo of switch indexes (a power of two).
const histMemoSize = 256

type histMemo struct {
	sw uint32
	si int32 // index + 1; 0: empty
}

// index is h.index through the worker's memo: a batch meets the same switches over and
// over, and the memo finds one with a load and a compare.
func (d *histDelta) index(h *Histograms, sw uint32) int {
	m := &d.memo[(sw^sw>>8)&(histMemoSize-1)]
	if m.si != 0 && m.sw == sw {
		return int(m.si) - 1
	}
	si := h.index(sw)
	if si >= 0 {
		m.sw, m.si = sw, int32(si+1)
	}
	return si
}

// maxDirty bounds a delta's dirty list; a batch that touches more counters publishes early.
const maxDirty = 4096

// numHist counts the per-hop metrics plus the end-to-end latency.
const (
	e2eHist       = int(record.NumMetrics)
	numHist       = e2eHist + 1
	maxHistShards = 8
)

func newHistograms(cfg HistConfig, shards int) *Histograms {
	h := &Histograms{cfg: cfg, log: cfg.Scale == "log", bins: cfg.Bins,
		widths: [numHist]uint64{cfg.Width.HopLatency, cfg.Width.QueueOccupancy, cfg.Width.TxUtil, cfg.Width.Latency}}
	n := 2
	for n < 2*cfg.MaxSwitches {
		n <<= 1
	}
	h.slots = make([]atomic.Uint64, n)
	h.smask = uint64(n - 1)
	h.perShard = (cfg.MaxSwitches*int(record.NumMetrics) + 1) * cfg.Bins
	h.resize(shards)
	h.deltas = make([]histDelta, max(shards, 1))
	return h
}

// delta returns worker's delta, allocating its counters on first use.
func (h *Histograms) delta(worker int) *histDelta {
	d := &h.deltas[worker]
	if d.n == nil {
		d.n, d.dirty = make([]uint32, h.perShard), make([]int32, 0, maxDirty)
	}
	return d
}

// counter returns the index in a shard of the counter for value v of metric m at switch
// index si.
func (h *Histograms) counter(si int, m record.Metric, v uint64) int {
	return (si*int(record.NumMetrics)+int(m))*h.bins + h.bin(int(m), v)
}

// counterE2E is counter for the end-to-end latency histogram.
func (h *Histograms) counterE2E(v uint64) int {
	return h.cfg.MaxSwitches*int(record.NumMetrics)*h.bins + h.bin(e2eHist, v)
}

// add counts one at counter i of the delta, whose dirty list has room (the caller has made
// sure of it: no call, no allocation).
func (d *histDelta) add(i int) {
	if d.n[i] == 0 {
		k := len(d.dirty)
		d.dirty = d.dirty[:k+1]
		d.dirty[k] = int32(i)
	}
	d.n[i]++
}

// publish adds the delta's counts to shard sh and clears them.
func (d *histDelta) publish(sh []uint64) {
	for _, i := range d.dirty {
		atomic.AddUint64(&sh[i], uint64(d.n[i]))
		d.n[i] = 0
	}
	d.dirty = d.dirty[:0]
}

// resize sets the number of shards (at Start, before any worker runs).
func (h *Histograms) resize(workers int) {
	n := min(max(workers, 1), maxHistShards)
	for len(h.shards) < n {
		h.shards = append(h.shards, make([]uint64, h.perShard))
	}
}

// Bin returns the bin of value v for histogram kind k (a Metric, or e2eHist).
func (h *Histograms) bin(k int, v uint64) int {
	var b uint64
	if h.log {
		b = uint64(bits.Len64(v))
	} else {
		b = v / h.widths[k]
	}
	return int(min(b, uint64(h.bins-1)))
}

// Bounds returns bin i's lower bound and its upper bound (exclusive; ok false for the last
// bin, which is open).
func (h *Histograms) bounds(k, i int) (lo, hi uint64, closed bool) {
	if h.log {
		if i == 0 {
			return 0, 1, true
		}
		lo = 1 << (i - 1)
		if i == h.bins-1 || i >= 64 {
			return lo, 0, false
		}
		return lo, 1 << i, true
	}
	w := h.widths[k]
	lo = uint64(i) * w
	if i == h.bins-1 {
		return lo, 0, false
	}
	return lo, lo + w, true
}

func switchHash(id uint32) uint64 { return uint64(id) * 0x9e3779b97f4a7c15 >> 20 }

// index returns sw's dense index, assigning one if there is room (-1 when full).
func (h *Histograms) index(sw uint32) int {
	for i := switchHash(sw); ; i++ {
		v := h.slots[i&h.smask].Load()
		if v == 0 {
			if int(h.n.Load()) >= h.cfg.MaxSwitches {
				return -1 // full: no lock on the hot path for every unknown switch
			}
			return h.insert(sw)
		}
		if uint32(v) == sw {
			return int(v>>32) - 1
		}
	}
}

// lookup is index without inserting.
func (h *Histograms) lookup(sw uint32) int {
	for i := switchHash(sw); ; i++ {
		v := h.slots[i&h.smask].Load()
		if v == 0 {
			return -1
		}
		if uint32(v) == sw {
			return int(v>>32) - 1
		}
	}
}

func (h *Histograms) insert(sw uint32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := switchHash(sw)
	for ; ; i++ {
		v := h.slots[i&h.smask].Load()
		if v == 0 {
			break
		}
		if uint32(v) == sw {
			return int(v>>32) - 1
		}
	}
	n := h.n.Load()
	if int(n) >= h.cfg.MaxSwitches {
		return -1
	}
	h.slots[i&h.smask].Store(uint64(n+1)<<32 | uint64(sw))
	h.n.Store(n + 1)
	return int(n)
}

func (h *Histograms) shard(worker int) []uint64 { return h.shards[worker%len(h.shards)] }

// add counts value v of metric m at switch index si.
func (h *Histograms) add(sh []uint64, si int, m record.Metric, v uint64) {
	atomic.AddUint64(&sh[h.counter(si, m, v)], 1)
}

func (h *Histograms) addE2E(sh []uint64, v uint64) {
	atomic.AddUint64(&sh[h.counterE2E(v)], 1)
}

// counts sums the shards of histogram (si, k) into dst (len bins).
func (h *Histograms) counts(si, k int, dst []uint64) {
	base := h.cfg.MaxSwitches * int(record.NumMetrics) * h.bins
	if k != e2eHist {
		base = (si*int(record.NumMetrics) + k) * h.bins
	}
	for _, sh := range h.shards {
		for i := range dst {
			dst[i] += atomic.LoadUint64(&sh[base+i])
		}
	}
}

// Histogram returns switch sw's histogram of metric m; ok false when sw has none.
func (h *Histograms) Histogram(sw uint32, m record.Metric) (record.Histogram, bool) {
	c := make([]uint64, h.bins)
	if !h.countsOf(sw, int(m), c) {
		return record.Histogram{}, false
	}
	return h.render(c, int(m), uitoa(sw), m.String()), true
}

// E2E returns the end-to-end latency histogram.
func (h *Histograms) E2E() record.Histogram {
	c := make([]uint64, h.bins)
	h.countsOf(0, e2eHist, c)
	return h.render(c, e2eHist, "e2e", "latency")
}

// countsOf adds histogram k (a Metric, or e2eHist) of switch sw into dst: the shards', and
// the kernel's with flowcache.kernel. False when neither has the switch.
func (h *Histograms) countsOf(sw uint32, k int, dst []uint64) bool {
	ok := k == e2eHist
	if si := h.lookup(sw); si >= 0 || ok {
		h.counts(si, k, dst)
		ok = true
	}
	return h.kernelCounts(sw, k, dst) || ok
}

func (h *Histograms) render(c []uint64, k int, sw, metric string) record.Histogram {
	j := record.Histogram{Switch: sw, Metric: metric, Scale: h.cfg.Scale, Bins: h.bins, Counts: []record.Bin{}}
	for i, n := range c {
		if n == 0 {
			continue
		}
		lo, hi, closed := h.bounds(k, i)
		b := record.Bin{Lo: lo, Count: n}
		if closed {
			b.Hi = ptr(hi)
		}
		j.Counts = append(j.Counts, b)
		j.Total += n
	}
	return j
}

// Switches returns the switch ids with histograms, ascending (with flowcache.kernel, the
// kernel's too).
func (h *Histograms) Switches() []uint32 {
	var ids []uint32
	for i := range h.slots {
		if v := h.slots[i].Load(); v != 0 {
			ids = append(ids, uint32(v))
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return h.kernelSwitches(ids)
}

// Overflow returns the samples not binned because max_switches switches had histograms.
func (h *Histograms) Overflow() uint64 { return h.overflow.Load() }

func uitoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// promHist renders histogram k of switch sw for Prometheus: cumulative counts by upper
// bound, divided by per (1e9 turns nanoseconds into seconds), and the sum estimated from
// the bins' midpoints (the cache counts per bin only; the open last bin counts at its lower
// bound).
func (h *Histograms) promHist(sw uint32, k int, per float64, c []uint64, buckets map[float64]uint64) (count uint64, sum float64) {
	clear(buckets)
	clear(c)
	h.countsOf(sw, k, c)
	for i, n := range c {
		lo, hi, closed := h.bounds(k, i)
		count += n
		if !closed {
			sum += float64(n) * float64(lo)
			continue
		}
		sum += float64(n) * (float64(lo) + float64(hi)) / 2
		buckets[float64(hi)/per] = count
	}
	return count, sum / per
}

// registerMetrics exposes the histograms as Prometheus histograms, read at scrape time:
// intake_flowcache_hop_latency_seconds, _queue_occupancy and _tx_utilization by switch, and
// intake_flowcache_e2e_latency_seconds.
func (h *Histograms) registerMetrics(reg *metrics.Registry) {
	fams := [record.NumMetrics]struct {
		name, help string
		per        float64
	}{
		record.HopLatency:     {"intake_flowcache_hop_latency_seconds", "Hop latency reported by each switch (flow cache histograms; _sum estimated from bin midpoints).", 1e9},
		record.QueueOccupancy: {"intake_flowcache_queue_occupancy", "Queue occupancy reported by each switch, in the switch's units (flow cache histograms; _sum estimated from bin midpoints).", 1},
		record.TxUtil:         {"intake_flowcache_tx_utilization", "Egress port tx utilization reported by each switch, in the switch's units (flow cache histograms; _sum estimated from bin midpoints).", 1},
	}
	for m, f := range fams {
		reg.Histogram(f.name, f.help, "switch").Collect(func(emit func(uint64, float64, map[float64]uint64, ...string)) {
			c, b := make([]uint64, h.bins), map[float64]uint64{}
			for _, sw := range h.Switches() {
				n, s := h.promHist(sw, m, f.per, c, b)
				emit(n, s, b, uitoa(sw))
			}
		})
	}
	reg.Histogram("intake_flowcache_e2e_latency_seconds", "End-to-end latency of the reports (flow cache histogram; _sum estimated from bin midpoints).").
		Func(func() (uint64, float64, map[float64]uint64) {
			b := map[float64]uint64{}
			n, s := h.promHist(0, e2eHist, 1e9, make([]uint64, h.bins), b)
			return n, s, b
		})
}

// SwitchSamples calls fn with every switch that has histograms (ascending) and the reports
// binned there so far that carried a hop metric: the largest of its three histograms'
// totals (a report that carried any metric at the switch is in one of them). The history
// differences them into reports per period.
func (h *Histograms) SwitchSamples(fn func(sw uint32, reports uint64)) {
	c := make([]uint64, h.bins)
	for _, sw := range h.Switches() {
		n := uint64(0)
		for m := range record.NumMetrics {
			clear(c)
			if h.countsOf(sw, int(m), c) {
				t := uint64(0)
				for _, x := range c {
					t += x
				}
				n = max(n, t)
			}
		}
		fn(sw, n)
	}
}
