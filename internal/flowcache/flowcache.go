// Package flowcache owns the SmartNIC INT sink's flow cache (Feng et al., §III-B to III-D):
// the hash table H_P of rows × buckets keyed by the flow 5-tuple, holding per flow the packet
// count, the last update time and, per hop of the path, the latest value and the mean of hop
// latency, queue occupancy and tx utilization, plus the end-to-end latency; the eviction
// rings R_G (least recently updated bucket of a full row, and the ager's idle flows); and the
// per-switch metric histograms.
//
// The FlowCache is an ingest.Processor and BatchProcessor. Its table is one flat pointer-free
// allocation (Config.Bytes); every ingest worker updates it under the row's spin lock, as
// the paper's micro-engine threads lock the row they update (§III-B). Process allocates
// nothing and never blocks on anything but a row lock held for a bucket update. ProcessBatch
// does the same for a receive batch, staged: the rows and buckets of a group of reports are
// prefetched before the first of them is updated, and the histogram counts are added once
// per batch.
//
// Evicted buckets are copied into the rings by the worker that evicts; one drain goroutine
// (the paper's host reader of R_G) turns them into Records and hands them to the record sinks
// (Redis's flow stream, §III-D). The threshold and change events of these metrics are the
// event detector's (package detect), carried to consumers by event.Bus rings (R_I).
package flowcache

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/prefetch"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// FlowCache is the processor. New is inert; Start runs the drain and the ager.
type FlowCache struct {
	cfg   Config
	t     *table
	rings *ringSet
	hist  *Histograms

	workers    []workerCounts
	stageAbove uint64 // stageAbove, or another bound in tests (0: always stage)

	collisions atomic.Uint64 // evictions from a full row
	idle       atomic.Uint64 // evictions by the ager
	exported   atomic.Uint64 // records handed to the sinks
	drains     atomic.Uint64 // the drain loop's rounds
	inserts    atomic.Uint64

	bus  *event.Bus
	deps Deps // the sinks: Records, Latest, Histograms, SinkStatus

	kern     *kernelRef // flowcache.kernel: the program's cache (SetKernel)
	kernErrs atomic.Uint64

	now    func() int64
	stop   chan struct{}
	wg     sync.WaitGroup
	drainM sync.Mutex // one drainer at a time (the goroutine, or DrainNow)
}

// Counter slots per worker.
const (
	cReports = iota // reports seen
	cNoFlow         // skipped: no 5-tuple
	cNoHops         // skipped: no hops
	cTrunc          // paths longer than max_hops
	cUpdates        // bucket updates
	nCounts
)

type workerCounts struct {
	local [nCounts]uint64
	pub   [nCounts]atomic.Uint64
	// The newest receive time the worker has seen, and the wall time when it published it.
	recv    int64
	pubRecv atomic.Int64
	pubWall atomic.Int64
	stage   *stage // the batch path's scratch
	_       [64]byte
}

// stageGroup is how many reports ProcessBatch stages at once: it prefetches their rows'
// headers, then (from the tags) their buckets, then updates them, so that the group's
// cache misses overlap instead of each waiting behind the row lock of the update before
// (a locked instruction lets no later load start). It does so when the resident flows are
// beyond the caches (stageAbove).
const stageGroup = 16

// stageAbove is the size of the resident flows' buckets (and row headers) above which
// ProcessBatch stages its updates: about what a core's L2 cache holds.
const stageAbove = 1 << 20

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// stage is one worker's scratch for a group of ProcessBatch.
type stage struct {
	h     [stageGroup]uint64
	lat   [stageGroup]uint64
	nlat  [stageGroup]int
	ri    [stageGroup]int         // index of the report in the group
	addrs [stageGroup * 8]uintptr // lines to prefetch: a 5-hop bucket spans 6 or 7
}

// Deps are what a FlowCache works with besides its configuration.
type Deps struct {
	// Workers is the number of receive workers that call Process (at least 1).
	Workers int
	// Metrics, when set, gets the cache's series.
	Metrics *metrics.Registry
	// Bus, when set, is listed in GET /api/v1/flowcache/stats (its consumers' rings are the
	// paper's R_I rings).
	Bus *event.Bus

	// The sinks: the cache pushes everything it emits, nothing polls it. Each is called from
	// one of the cache's goroutines and must not block (a network sink queues) nor keep
	// what it is handed.
	//
	// Records get every evicted record, from the drain.
	Records []func(*record.Record)
	// Latest gets every flow updated in the last LatestPeriod once per LatestPeriod
	// (Reason none): the Redis per-flow hashes. Off when nil or the period is 0.
	Latest       func(*record.Record)
	LatestPeriod time.Duration
	// Histograms gets every non-empty histogram (per switch and metric, then end to end)
	// once per HistogramPeriod: the SmartNIC sink's host reading the distribution arrays
	// (§III-D), the Redis histogram hashes. Off when nil or the period is 0.
	Histograms      func(*record.Histogram)
	HistogramPeriod time.Duration
	// SinkStatus, when set, adds the record sinks' status to GET /api/v1/flowcache/stats
	// (as "redis").
	SinkStatus func() any

	// Kernel, with flowcache.kernel, is the cache in the XDP program: the cache opens it at
	// Start and links to it (its queries, drain, ager, histograms and counters read it),
	// and at Stop hands the kernel's last evicted records to the sinks, unlinks and closes
	// it.
	Kernel KernelState
}

// KernelState is the flow cache in the kernel (flowcache.kernel), opened and closed by the
// cache that reads it.
type KernelState interface {
	Open() (Kernel, error)
	Close() error
}

// New builds the cache (allocating the table and the rings). cfg must have passed Validate.
func New(cfg Config, deps Deps) *FlowCache {
	workers := max(deps.Workers, 1)
	f := &FlowCache{cfg: cfg, t: newTable(cfg.Rows, cfg.Buckets, cfg.MaxHops),
		hist: newHistograms(cfg.Histograms, workers), bus: deps.Bus, deps: deps, kern: &kernelRef{}}
	f.hist.kern = f.kern
	f.now, f.stageAbove = f.dataClock, stageAbove
	f.rings = newRingSet(cfg.Rings, cfg.RingEntries, f.t.bktW)
	f.workers = make([]workerCounts, workers)
	for i := range f.workers {
		f.workers[i].stage = &stage{}
	}
	if deps.Metrics != nil {
		f.registerMetrics(deps.Metrics)
	}
	return f
}

// Name implements ingest.Processor.
func (f *FlowCache) Name() string { return "flowcache" }

// Config returns the configuration the cache was built with.
func (f *FlowCache) Config() Config { return f.cfg }

// Histograms returns the per-switch histograms.
func (f *FlowCache) Histograms() *Histograms { return f.hist }

// SetClock replaces the ager's clock (tests).
func (f *FlowCache) SetClock(now func() int64) { f.now = now }

// dataClock is the ager's clock: the newest receive time the workers have published, moved
// on by the wall time since it was published. Live, receive times are the wall clock, so
// this is the wall clock; replaying a capture, receive times are the capture's, and flows
// age by the capture's time (a wall clock would age a capture from last year at once).
func (f *FlowCache) dataClock() int64 {
	var recv, wall int64
	for i := range f.workers {
		if r := f.workers[i].pubRecv.Load(); r > recv {
			recv, wall = r, f.workers[i].pubWall.Load()
		}
	}
	now := time.Now().UnixNano()
	if wall == 0 {
		return now
	}
	return recv + (now - wall)
}

// Start faults the table's pages in (table.prefault) and runs the drain, the ager, the
// periodic latest-values walk and the periodic histogram push.
func (f *FlowCache) Start(context.Context) error {
	if f.stop != nil {
		return nil
	}
	f.t.prefault()
	if err := f.openKernel(); err != nil {
		return fmt.Errorf("flowcache.kernel: %w", err)
	}
	f.stop = make(chan struct{})
	f.wg.Add(1)
	go f.drainLoop()
	if f.cfg.IdleTimeout > 0 {
		f.every(f.cfg.AgeInterval, func() { f.Age(f.now()) })
	}
	if f.deps.Latest != nil && f.deps.LatestPeriod > 0 {
		f.every(f.deps.LatestPeriod, f.latestWalk())
	}
	if f.deps.Histograms != nil && f.deps.HistogramPeriod > 0 {
		f.every(f.deps.HistogramPeriod, f.PushHistograms)
	}
	return nil
}

// openKernel opens and links the kernel's cache (flowcache.kernel), when there is one.
func (f *FlowCache) openKernel() error {
	k := f.deps.Kernel
	if k == nil {
		return nil
	}
	kern, err := k.Open()
	if err != nil {
		return err
	}
	if err := f.SetKernel(kern); err != nil {
		k.Close()
		return err
	}
	return nil
}

// The drain's intervals: drainMin while it finds records, doubling to drainMax while it
// finds none.
const (
	drainMin = 5 * time.Millisecond
	drainMax = 80 * time.Millisecond
)

// drainLoop drains the rings (DrainNow) until Stop: every drainMin while there are evicted
// records, backing off to drainMax while there are none, and at once when a ring fills
// past a quarter. A wakeup is what an idle collector spends: every 5 ms, the drain alone
// took 3 % of a core with nothing to drain (TestDrainBacksOff). The kernel's ring
// (flowcache.kernel) cannot kick: it holds as many records as the rings, 160 ms of them at
// 100,000 evictions a second at the defaults, twice drainMax.
func (f *FlowCache) drainLoop() {
	defer f.wg.Done()
	wait := drainMin
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-f.rings.kick:
		case <-t.C:
		}
		if f.DrainNow() > 0 {
			wait = drainMin
		} else {
			wait = min(2*wait, drainMax)
		}
		f.drains.Add(1)
		t.Reset(wait)
	}
}

// every runs fn every period on a goroutine of its own until Stop.
func (f *FlowCache) every(period time.Duration, fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// Stop stops the goroutines and drains the rings once more into the sinks (whose queues the
// caller stops after).
func (f *FlowCache) Stop(context.Context) error {
	if f.stop == nil {
		return nil
	}
	close(f.stop)
	f.wg.Wait()
	f.stop = nil
	f.DrainNow() // with flowcache.kernel, the kernel's last evicted records too
	if k := f.deps.Kernel; k != nil {
		f.SetKernel(nil)
		return k.Close()
	}
	return nil
}

// Process implements ingest.Processor: histograms, then the flow's bucket. A report the XDP
// program has put in its cache (flowcache.kernel) is skipped.
func (f *FlowCache) Process(worker int, r *telemetry.Report) {
	if r.Kernel&telemetry.KernelCached != 0 {
		return
	}
	w := &f.workers[worker]
	c := &w.local
	c[cReports]++
	if r.RecvTime > w.recv {
		w.recv = r.RecvTime
	}
	n := int(r.NHops)
	if n == 0 {
		c[cNoHops]++
		return
	}
	sh := f.hist.shard(worker)
	var lat uint64
	nlat := 0
	for i := 0; i < n; i++ {
		hp := &r.Hops[i]
		fl := hp.Fields
		if fl&telemetry.FHopLatency != 0 {
			lat += uint64(hp.HopLatency)
			nlat++
		}
		if fl&telemetry.FNodeID == 0 || fl&(telemetry.FHopLatency|telemetry.FQueueOccupancy|telemetry.FTxUtil) == 0 {
			continue
		}
		si := f.hist.index(hp.NodeID)
		if si < 0 {
			f.hist.overflow.Add(1)
			continue
		}
		if fl&telemetry.FHopLatency != 0 {
			f.hist.add(sh, si, record.HopLatency, uint64(hp.HopLatency))
		}
		if fl&telemetry.FQueueOccupancy != 0 {
			f.hist.add(sh, si, record.QueueOccupancy, uint64(hp.QueueOccupancy))
		}
		if fl&telemetry.FTxUtil != 0 {
			f.hist.add(sh, si, record.TxUtil, uint64(hp.TxUtil))
		}
	}
	if nlat > 0 {
		f.hist.addE2E(sh, lat)
	}
	if r.Has&telemetry.HasFlow == 0 {
		c[cNoFlow]++
		return
	}
	if n > f.cfg.MaxHops {
		c[cTrunc]++
	}
	c[cUpdates]++
	ins, ev := f.t.update(r, lat, nlat, f.rings)
	if ins {
		f.inserts.Add(1)
	}
	if ev {
		f.collisions.Add(1)
	}
}

// ProcessBatch implements ingest.BatchProcessor: Process for every report of rs, in order,
// with the same effect, but staged (see stageGroup) and with the histogram counts of the
// batch added to the worker's shard once, at the end.
func (f *FlowCache) ProcessBatch(worker int, rs []telemetry.Report) {
	w := &f.workers[worker]
	c, st := &w.local, w.stage
	d, sh := f.hist.delta(worker), f.hist.shard(worker)
	t := f.t
	var ins, coll, ovf uint64
	// Staging pays when the resident flows' rows and buckets are beyond the caches; with
	// the few flows whose rows stay in the cache, its extra passes cost more than they save
	// (docs/performance.md, "Figures behind choices in the code").
	stage := uint64(t.flows.Load())*uint64(t.bktW*8+64) > f.stageAbove
	for len(rs) > 0 {
		g := rs[:min(len(rs), stageGroup)]
		rs = rs[len(g):]
		n := 0
		for i := range g {
			r := &g[i]
			if r.Kernel&telemetry.KernelCached != 0 { // in the kernel's cache (flowcache.kernel)
				continue
			}
			c[cReports]++
			if r.RecvTime > w.recv {
				w.recv = r.RecvTime
			}
			if r.NHops == 0 {
				c[cNoHops]++
				continue
			}
			lat, nlat, o := f.histBatch(d, sh, r)
			ovf += o
			if r.Has&telemetry.HasFlow == 0 {
				c[cNoFlow]++
				continue
			}
			if int(r.NHops) > f.cfg.MaxHops {
				c[cTrunc]++
			}
			c[cUpdates]++
			h := telemetry.FlowHash(&r.Flow)
			st.h[n], st.lat[n], st.nlat[n], st.ri[n] = h, lat, nlat, i
			st.addrs[n] = uintptr(unsafe.Pointer(&t.mem[t.rowOff(h&t.mask)]))
			n++
		}
		if !stage {
			for j := 0; j < n; j++ {
				i, e := t.updateHashed(&g[st.ri[j]], st.h[j], st.lat[j], st.nlat[j], f.rings)
				ins, coll = ins+b2u(i), coll+b2u(e)
			}
			continue
		}
		prefetch.Addrs(st.addrs[:n])
		// The tags say which bucket each update will touch: its lines are fetched next
		// (a new flow's row is only in the header's line).
		na := 0
		bktBytes := uintptr(t.bktW * 8)
		for j := 0; j < n; j++ {
			off := t.rowOff(st.h[j] & t.mask)
			tag := uint32(st.h[j]>>32) | 1
			tags := t.tags(off)
			for bi := range tags {
				if atomic.LoadUint32(&tags[bi]) == tag {
					b := uintptr(unsafe.Pointer(&t.mem[t.bucketOff(off, bi)]))
					for l := b &^ 63; l < b+bktBytes && na < len(st.addrs); l += 64 {
						st.addrs[na] = l
						na++
					}
					break
				}
			}
		}
		prefetch.Addrs(st.addrs[:na])
		for j := 0; j < n; j++ {
			i, e := t.updateHashed(&g[st.ri[j]], st.h[j], st.lat[j], st.nlat[j], f.rings)
			ins, coll = ins+b2u(i), coll+b2u(e)
		}
	}
	d.publish(sh)
	if ins > 0 {
		f.inserts.Add(ins)
	}
	if coll > 0 {
		f.collisions.Add(coll)
	}
	if ovf > 0 {
		f.hist.overflow.Add(ovf)
	}
}

// histBatch is Process's histogram part for the batch path: it counts r's values into the
// worker's delta and returns the report's end-to-end latency, its number of hop latencies
// and the samples lost to max_switches. The hops' switch indexes are found first; the
// counting that follows makes no call (the delta has room for the report's counters).
func (f *FlowCache) histBatch(d *histDelta, sh []uint64, r *telemetry.Report) (lat uint64, nlat int, ovf uint64) {
	const hf = telemetry.FHopLatency | telemetry.FQueueOccupancy | telemetry.FTxUtil
	hist := f.hist
	n := int(r.NHops)
	if cap(d.dirty)-len(d.dirty) < 3*n+1 {
		d.publish(sh)
	}
	si := &d.si
	for i := 0; i < n; i++ {
		hp := &r.Hops[i]
		si[i] = -1
		if hp.Fields&telemetry.FNodeID != 0 && hp.Fields&hf != 0 {
			if si[i] = int32(d.index(hist, hp.NodeID)); si[i] < 0 {
				ovf++
			}
		}
	}
	bins := hist.bins
	for i := 0; i < n; i++ {
		hp := &r.Hops[i]
		fl := hp.Fields
		if fl&telemetry.FHopLatency != 0 {
			lat += uint64(hp.HopLatency)
			nlat++
		}
		if si[i] < 0 {
			continue
		}
		base := int(si[i]) * int(record.NumMetrics) * bins // counter(si, m, v): the metrics' histograms in a row
		if fl&telemetry.FHopLatency != 0 {
			d.add(base + int(record.HopLatency)*bins + hist.bin(int(record.HopLatency), uint64(hp.HopLatency)))
		}
		if fl&telemetry.FQueueOccupancy != 0 {
			d.add(base + int(record.QueueOccupancy)*bins + hist.bin(int(record.QueueOccupancy), uint64(hp.QueueOccupancy)))
		}
		if fl&telemetry.FTxUtil != 0 {
			d.add(base + int(record.TxUtil)*bins + hist.bin(int(record.TxUtil), uint64(hp.TxUtil)))
		}
	}
	if nlat > 0 {
		d.add(hist.counterE2E(lat))
	}
	return lat, nlat, ovf
}

// Flush implements ingest.Flusher: it publishes the worker's counters.
func (f *FlowCache) Flush(worker int) {
	c := &f.workers[worker]
	for i, v := range c.local {
		if c.pub[i].Load() != v {
			c.pub[i].Store(v)
		}
	}
	if c.recv != c.pubRecv.Load() {
		c.pubWall.Store(time.Now().UnixNano())
		c.pubRecv.Store(c.recv)
	}
}

func (f *FlowCache) sum(i int) uint64 {
	var n uint64
	for w := range f.workers {
		n += f.workers[w].pub[i].Load()
	}
	return n
}

// Lookup returns flow k's aggregates (with flowcache.kernel, the kernel's table's first).
func (f *FlowCache) Lookup(k *telemetry.FlowKey) (record.Record, bool) {
	var rec record.Record
	found := false
	f.kern.use(func(l *kernelLink) { found = l.lookup(k, &rec) })
	if found {
		return rec, true
	}
	ok := f.t.lookup(k, &rec)
	return rec, ok
}

// Top returns the n flows with the highest mean end-to-end latency (by "latency") or the
// most packets (by "packets"), highest first; ties are broken by last update, newest first.
func (f *FlowCache) Top(by string, n int) []record.Record { return f.TopWhere(by, n, TopFilter{}) }

// TopFilter selects the flows TopWhere ranks: a flow must match every filter set. The zero
// value selects every flow.
type TopFilter struct {
	// Switch: the flow's path crosses this switch (when HasSwitch).
	Switch    uint32
	HasSwitch bool
	// Prefix: the flow's source or destination is in it (when valid; an IPv4 prefix matches
	// IPv4 flows, an IPv6 prefix IPv6 flows).
	Prefix netip.Prefix
	// Port: the flow's source or destination port (when HasPort).
	Port    uint16
	HasPort bool
}

// any reports whether some filter is set.
func (w *TopFilter) any() bool { return w.HasSwitch || w.HasPort || w.Prefix.IsValid() }

// match reports whether the bucket image b (header h) passes the filters. It reads the
// header and the hop slots in place: no allocation, so that a filter costs no garbage per
// flow walked.
func (w *TopFilter) match(t *table, b []uint64, h *bucketHdr) bool {
	k := &h.Key
	if w.HasPort && k.SrcPort != w.Port && k.DstPort != w.Port {
		return false
	}
	if w.Prefix.IsValid() && !w.Prefix.Contains(k.SrcAddr()) && !w.Prefix.Contains(k.DstAddr()) {
		return false
	}
	if w.HasSwitch {
		slots := unsafe.Slice((*hopSlot)(unsafe.Pointer(&b[hdrBytes/8])), t.hops)
		for i := range min(int(h.NHops), t.hops) {
			if slots[i].NodeID == w.Switch {
				return true
			}
		}
		return false
	}
	return true
}

// TopWhere is Top over the flows that pass where, filtered before the limit: the n best of
// those that match.
func (f *FlowCache) TopWhere(by string, n int, where TopFilter) []record.Record {
	if n < 1 {
		return nil
	}
	score := func(b *bucketHdr) float64 { return float64(b.Packets) }
	if by == "latency" {
		score = func(b *bucketHdr) float64 {
			if b.LatCount == 0 {
				return -1
			}
			return float64(b.LatSum) / float64(b.LatCount)
		}
	}
	type cand struct {
		s    float64
		last int64
		rec  record.Record
	}
	var top []cand // sorted, best first, at most n
	better := func(a, b *cand) bool {
		if a.s != b.s {
			return a.s > b.s
		}
		return a.last > b.last
	}
	filtered := where.any()
	f.walkAll(-1<<63, func(w []uint64, h *bucketHdr) {
		if filtered && !where.match(f.t, w, h) {
			return
		}
		c := cand{s: score(h), last: h.Last}
		if len(top) == n && !better(&c, &top[n-1]) {
			return
		}
		f.t.decode(w, &c.rec)
		i := sort.Search(len(top), func(i int) bool { return better(&c, &top[i]) })
		if len(top) < n {
			top = append(top, cand{})
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = c
	})
	out := make([]record.Record, len(top))
	for i := range top {
		out[i] = top[i].rec
	}
	return out
}

// Age evicts every flow whose last update is older than now − idle_timeout into the rings
// and returns how many it evicted (the ager's sweep; the paper's CMEs, §III-B). With
// flowcache.kernel it sweeps the kernel's table too.
func (f *FlowCache) Age(now int64) int {
	if f.cfg.IdleTimeout <= 0 {
		return 0
	}
	cut := now - int64(f.cfg.IdleTimeout)
	n := 0
	for row := 0; row < f.t.rows; row++ {
		off := f.t.rowOff(uint64(row))
		lk := f.t.lockRow(off)
		tags := f.t.tags(off)
		for i, g := range tags {
			if g == 0 {
				continue
			}
			boff := f.t.bucketOff(off, i)
			if f.t.hdr(boff).Last >= cut {
				continue
			}
			f.rings.push(uint64(row), f.t.mem[boff:boff+f.t.bktW], record.ReasonIdle)
			setTag(tags, i, 0)
			f.t.flows.Add(-1)
			n++
		}
		unlockRow(lk)
	}
	f.idle.Add(uint64(n))
	return n + f.ageKernel(cut)
}

// DrainNow moves every record waiting in the rings (and, with flowcache.kernel, the kernel's
// eviction ring) to the sinks and returns how many.
func (f *FlowCache) DrainNow() int {
	f.drainM.Lock()
	defer f.drainM.Unlock()
	n := 0
	var rec record.Record
	for _, r := range f.rings.rings {
		for r.pop(func(b []uint64, why record.Reason) {
			f.t.decode(b, &rec)
			rec.Reason = why
		}) {
			n++
			for _, s := range f.deps.Records {
				s(&rec)
			}
			f.exported.Add(1)
			rec.Hops = nil // a sink may keep what it was given
		}
	}
	return n + f.drainKernel(&rec)
}

// WalkUpdated calls fn with every flow updated at or after since (Reason none).
func (f *FlowCache) WalkUpdated(since int64, fn func(*record.Record)) int {
	n := 0
	f.walkAll(since, func(w []uint64, h *bucketHdr) {
		var rec record.Record
		f.t.decode(w, &rec)
		fn(&rec)
		n++
	})
	return n
}

// latestWalk returns the periodic latest-values push: every flow updated since the last
// walk, to Deps.Latest.
func (f *FlowCache) latestWalk() func() {
	every := f.deps.LatestPeriod
	since := int64(-1 << 63)
	return func() {
		now := f.now()
		f.WalkUpdated(since, f.deps.Latest)
		// The next walk overlaps this one by a period: a report stamped before now but
		// applied after the walk passed its row is taken next time, not lost until the
		// flow's next update. A flow written twice costs one idempotent write.
		since = now - int64(every)
	}
}

// PushHistograms hands every non-empty histogram, per switch and metric (switches
// ascending) then end to end, to Deps.Histograms now (what the periodic push does).
func (f *FlowCache) PushHistograms() {
	offer := f.deps.Histograms
	if offer == nil {
		return
	}
	for _, sw := range f.hist.Switches() {
		for m := range record.NumMetrics {
			if h, ok := f.hist.Histogram(sw, m); ok && h.Total > 0 {
				offer(&h)
			}
		}
	}
	if h := f.hist.E2E(); h.Total > 0 {
		offer(&h)
	}
}

// Stats are the cache's counters (GET /api/v1/flowcache/stats).
type Stats struct {
	Rows         int     `json:"rows"`
	Buckets      int     `json:"buckets"`
	MaxHops      int     `json:"max_hops"`
	Capacity     int     `json:"capacity"`
	Flows        int64   `json:"flows"`
	Occupancy    float64 `json:"occupancy"`
	Bytes        int     `json:"bytes"`
	BytesPerFlow float64 `json:"bytes_per_flow"`

	Reports        uint64 `json:"reports"`
	Updates        uint64 `json:"updates"`
	Inserts        uint64 `json:"inserts"`
	SkippedNoFlow  uint64 `json:"skipped_no_flow"`
	SkippedNoHops  uint64 `json:"skipped_no_hops"`
	TruncatedPaths uint64 `json:"truncated_paths"`

	Evictions      Evictions `json:"evictions"`
	Rings          RingStats `json:"rings"`
	Switches       int       `json:"histogram_switches"`
	SwitchOverflow uint64    `json:"histogram_switch_overflow"`

	// Kernel is the kernel's part (flowcache.kernel), included in the counts above (Bytes
	// and BytesPerFlow are the cache's own table's; the kernel's table is as large).
	Kernel *KernelStats `json:"kernel,omitempty"`
}

// Evictions count flows leaving the cache, by reason.
type Evictions struct {
	Collision uint64 `json:"collision"`
	Idle      uint64 `json:"idle"`
}

// Stats returns the counters (worker counters as of their last Flush).
func (f *FlowCache) Stats() Stats {
	cap := f.cfg.Rows * f.cfg.Buckets
	st := Stats{
		Rows: f.cfg.Rows, Buckets: f.cfg.Buckets, MaxHops: f.cfg.MaxHops, Capacity: cap,
		Flows: f.t.flows.Load(), Bytes: len(f.t.mem) * 8,
		Reports: f.sum(cReports), Updates: f.sum(cUpdates), Inserts: f.inserts.Load(),
		SkippedNoFlow: f.sum(cNoFlow), SkippedNoHops: f.sum(cNoHops), TruncatedPaths: f.sum(cTrunc),
		Evictions: Evictions{Collision: f.collisions.Load(), Idle: f.idle.Load()},
		Rings:     f.rings.stats(),
		Switches:  int(f.hist.n.Load()), SwitchOverflow: f.hist.Overflow(),
	}
	if st.Kernel = f.kernelStats(&st); st.Kernel != nil {
		if st.Switches == 0 { // the common case: every report the program's
			st.Switches = st.Kernel.Switches
		} else {
			st.Switches = len(f.hist.Switches()) // both have switches: the union
		}
	}
	st.Occupancy = float64(st.Flows) / float64(cap)
	st.BytesPerFlow = float64(st.Bytes) / float64(cap)
	st.Rings.Exported = f.exported.Load()
	return st
}
