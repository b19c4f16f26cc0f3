package dta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/prefetch"
	"github.com/intake-int/intake/telemetry"
)

// The translator (DTA §3, §5.2) turns DTA reports into writes to the stores, and maps INT
// telemetry into them (DTA Table 2): INT-MD path traces → the paths Key-Write store (flow
// 5-tuple → node ids), per-hop metadata → Postcarding, drop and queue reports → Append
// lists, a report count per flow → Key-Increment. It runs in the ingest workers: no lock on
// the Key-Write, Key-Increment and Append paths (an Append batch claims its positions with
// one atomic add), one spin lock per postcard cache line. A report's flow key is hashed once for every store of the same seed,
// and a trace's postcards are added under one cache-line lock; counters are the worker's,
// published at Flush. ProcessBatch (the workers' path) prefetches a group of reports' store
// slots, cache lines and chunks before it writes them. Bad input is counted by reason and never written. Detected events reach
// an Append list through the event bus and an EventWriter (events.go).

// Bad-input reasons.
const (
	BadOpcode     = iota // an opcode no primitive has
	BadRedundancy        // 0 or above the store's maximum
	BadListID            // not below append.lists
	BadKeyLength         // a key the store cannot take (compat: not 4 bytes; postcard: > 40)
	BadDataLength        // data wider than the store's values
	BadHop               // postcard hop 0 or above B
	BadOffline           // not bad input: the stores are offline after a memory fault (fault.go)
	numBad
)

// BadReasons are the reason labels, by index.
var BadReasons = [numBad]string{"opcode", "redundancy", "list_id", "key_length", "data_length", "hop", "store_offline"}

// Written counters, by index.
const (
	WKeyWrite = iota
	WKeyIncrement
	WAppend
	WPostcard
	WINTPath
	WINTPostcard
	WINTAppend
	WINTCounter
	WINTEvent // detected events, written by the bus consumer (EventWriter), not a worker
	numWritten
)

// WrittenNames label the write counters.
var WrittenNames = [numWritten]string{"key-write", "key-increment", "append", "postcard", "int-path", "int-postcard", "int-append", "int-counter", "int-event"}

// workerStats are one worker's counters: counted in plain fields by the worker and
// published at Flush (an atomic add per report would cost more than some writes), a cache
// line apart from the next worker's. learned caches values the worker has added to the
// postcard store's known values.
type workerStats struct {
	bad, pubBad         [numBad]uint64
	written, pubWritten [numWritten]uint64
	complete, early     uint64 // postcard chunks written by AddPath, not yet in Cache's counters
	pending             int    // ProcessBatch: reports of the batch not yet written, for a fault's count
	pbad                [numBad]atomic.Uint64
	pwritten            [numWritten]atomic.Uint64
	learned             [learnedSize]uint64 // 1<<32 | value, direct mapped by value
	stage               *stage
	_                   [64]byte
}

// learnedSize is the size of a worker's cache of learned postcard values (a power of two).
const learnedSize = 256

// learn is p.Learn(v) once per value and worker while the value stays in the worker's cache:
// V only grows, so a value learned once is known for good.
func (ws *workerStats) learn(p *Postcard, v uint32) {
	e := &ws.learned[(v^v>>8)&(learnedSize-1)]
	if *e == 1<<32|uint64(v) {
		return
	}
	if p.Learn(v) {
		*e = 1<<32 | uint64(v)
	}
}

// publish stores the worker's counts for other goroutines.
func (ws *workerStats) publish() {
	for i, v := range ws.bad {
		if v != ws.pubBad[i] {
			ws.pbad[i].Store(v)
			ws.pubBad[i] = v
		}
	}
	for i, v := range ws.written {
		if v != ws.pubWritten[i] {
			ws.pwritten[i].Store(v)
			ws.pubWritten[i] = v
		}
	}
}

// Translator is the DTA processor.
type Translator struct {
	Cfg      Config
	St       *Stores
	Cache    *PostcardCache
	batchers []*Batcher
	stats    []workerStats

	keyLen   int          // decoder.dta.key_len, for API queries
	kernel   KernelStores // dta.kernel: the Key-Write, Key-Increment and Append data's owner
	bus      *event.Bus
	consumer *event.Consumer // the event list's, between Start and Stop
	evCancel context.CancelFunc
	evDone   chan struct{}
	log      *slog.Logger

	stop chan struct{}
	wg   sync.WaitGroup
	// Snapshots counts epoch snapshots taken; Resets, Key-Increment resets; Immediate,
	// written reports with the immediate flag (each an immediate event when a bus is set).
	Snapshots, Resets, Immediate atomic.Uint64
	events                       atomic.Uint64 // entries the EventWriter queued
	offlineEvents                atomic.Uint64 // events not appended: the stores were offline
}

// Deps are what a Translator works with besides its configuration.
type Deps struct {
	// Workers is the number of receive workers that call Process (at least 1).
	Workers int
	// Bus, with dta.int.event_list set, is where the detected events come from that the
	// translator appends to that list (DTA Table 2).
	Bus *event.Bus
	// Metrics, when set, gets the translator's series.
	Metrics *metrics.Registry
	// Logger logs a memory fault on the stores (fault.go); nil: slog.Default().
	Logger *slog.Logger
	// KeyLen is the DTA key length of the reports (decoder.dta.key_len), which keys in the
	// API's queries are parsed to.
	KeyLen int
	// Kernel, with dta.kernel, is the kernel-written stores (package xdp's DTAStores): the
	// translator opens them at Start, before its own stores over their memory, and closes
	// them at Stop, after.
	Kernel KernelStores
}

// KernelStores is the stores an XDP program writes (dta.kernel), opened and closed by the
// translator that reads them.
type KernelStores interface {
	Open() (*KernelMem, error)
	Close() error
}

// NewTranslator builds the translator of cfg (which must have passed Validate). It opens
// nothing: Start opens (or creates) the stores.
func NewTranslator(cfg Config, deps Deps) *Translator {
	t := &Translator{Cfg: cfg, stats: make([]workerStats, max(deps.Workers, 1)), bus: deps.Bus, log: deps.Logger,
		keyLen: deps.KeyLen, kernel: deps.Kernel}
	for i := range t.stats {
		t.stats[i].stage = &stage{}
	}
	if deps.Metrics != nil {
		t.registerMetrics(deps.Metrics)
	}
	if deps.Bus != nil && cfg.INT.EventList >= 0 {
		deps.Bus.Declare("dta") // its consumer subscribes at Start (startEvents)
	}
	return t
}

// Name implements ingest.Processor.
func (t *Translator) Name() string { return "dta" }

// Start opens the stores, allocates the per-worker batches and starts the reset and
// snapshot timers and the event list's consumer.
func (t *Translator) Start(context.Context) error {
	if t.stop != nil {
		return nil
	}
	var km *KernelMem
	if t.kernel != nil {
		var err error
		if km, err = t.kernel.Open(); err != nil {
			return fmt.Errorf("dta.kernel: %w", err)
		}
	}
	st, err := openStores(&t.Cfg, km)
	if err != nil {
		if t.kernel != nil {
			t.kernel.Close()
		}
		return err
	}
	t.St, t.Cache = st, st.PC.NewCache(t.Cfg.Postcard.Cache)
	st.log, t.Cache.down = t.log, &st.fault
	t.batchers = make([]*Batcher, len(t.stats))
	for i := range t.batchers {
		t.batchers[i] = t.St.AP.NewBatcher(t.Cfg.Append.Batch)
	}
	t.stop = make(chan struct{})
	if p := t.Cfg.KeyIncrement.ResetPeriod; p > 0 {
		t.every(p, "key-increment reset", func(time.Time) { t.St.KI.Reset(); t.Resets.Add(1) })
	}
	if p := t.Cfg.Epochs.Period; p > 0 {
		t.every(p, "epoch snapshot", func(now time.Time) {
			if _, err := t.St.Snapshot(now, t.Cfg.Epochs.Retain); err == nil {
				t.Snapshots.Add(1)
			}
		})
	}
	t.startEvents()
	return nil
}

// every runs f (op, touching the stores) every p until Stop, while the stores are online.
func (t *Translator) every(p time.Duration, op string, f func(time.Time)) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tk := time.NewTicker(p)
		defer tk.Stop()
		for {
			select {
			case <-t.stop:
				return
			case now := <-tk.C:
				t.guarded(op, func() { f(now) })
			}
		}
	}()
}

// guarded runs f, which touches the stores' mappings, unless they are offline; a memory
// fault in f takes them offline (fault.go) and is returned.
func (t *Translator) guarded(op string, f func()) (err error) {
	if err := t.St.Offline(); err != nil {
		return err
	}
	defer t.St.guard(t.St.catchFaults(), op, &err)
	f()
	return nil
}

// Flush writes the worker's partial Append batches (after each receive batch, so that an
// entry waits at most one recvmmsg round) and publishes its counters.
func (t *Translator) Flush(worker int) {
	if worker < len(t.batchers) && t.St.Offline() == nil {
		t.flushBatcher(worker)
	}
	ws := &t.stats[worker]
	if t.Cache != nil && ws.complete+ws.early > 0 {
		t.Cache.Complete.Add(ws.complete)
		t.Cache.Early.Add(ws.early)
		ws.complete, ws.early = 0, 0
	}
	ws.publish()
}

// Stop ends the event consumer (after appending what it holds), writes what is cached and
// closes the stores.
func (t *Translator) Stop(context.Context) error {
	if t.stop == nil {
		return nil
	}
	t.stopEvents()
	close(t.stop)
	t.wg.Wait()
	t.stop = nil
	// Offline stores keep what they hold: nothing more is written to them.
	var werr error
	if t.St.Offline() == nil {
		werr = t.guarded("stop", func() {
			for _, b := range t.batchers {
				b.Flush()
			}
			t.Cache.Flush()
		})
	}
	err := errors.Join(werr, t.St.Close())
	if t.kernel != nil { // after the stores over its memory
		err = errors.Join(err, t.kernel.Close())
	}
	return err
}

// flushBatcher writes worker's partial Append batches, guarded: the ingest worker's call
// boundary (fault.go).
func (t *Translator) flushBatcher(worker int) {
	defer t.St.guard(t.St.catchFaults(), "write", nil)
	t.batchers[worker].Flush()
}

// stageGroup is how many reports ProcessBatch stages at once: the store slots, cache entry
// and postcard chunks of each INT report's flow are prefetched for the group before the
// first is written, so that their cache misses (a dozen per report, over stores of
// megabytes) overlap.
const stageGroup = 16

// stage is a worker's scratch for ProcessBatch.
type stage struct {
	kb    [stageGroup][40]byte
	klen  [stageGroup]uint8
	h     [stageGroup]uint64
	addrs [stageGroup * 16]uintptr
}

// ProcessBatch implements ingest.BatchProcessor: Process for each report of rs, in order,
// with the same writes, staged (stageGroup).
//
// It is the ingest worker's call boundary for faults on the mappings (fault.go): offline
// stores count the batch as dropped (BadOffline), and a fault counts the reports from the
// group it hit on.
func (t *Translator) ProcessBatch(worker int, rs []telemetry.Report) {
	ws := &t.stats[worker]
	if t.St.fault.Load() != nil {
		ws.bad[BadOffline] += uint64(len(rs))
		return
	}
	defer t.guardBatch(ws, t.St.catchFaults())
	st := ws.stage
	for len(rs) > 0 {
		ws.pending = len(rs)
		g := rs[:min(len(rs), stageGroup)]
		rs = rs[len(g):]
		na := 0
		for i := range g {
			r := &g[i]
			if r.Format == telemetry.FormatDTA || r.Has&telemetry.HasFlow == 0 {
				continue
			}
			key := FlowKeyBytes(&st.kb[i], &r.Flow)
			st.klen[i] = uint8(len(key))
			st.h[i] = t.keyHash(key)
			na = t.stageAddrs(st.h[i], r, st.addrs[:], na)
		}
		prefetch.Addrs(st.addrs[:na])
		for i := range g {
			r := &g[i]
			if r.Format == telemetry.FormatDTA || r.Has&telemetry.HasFlow == 0 {
				t.Process(worker, r)
				continue
			}
			t.processNode(worker, ws, r)
			t.processFlow(ws, r, st.kb[i][:st.klen[i]], st.h[i])
		}
	}
}

// guardBatch is ProcessBatch's guard: the reports not yet written when a fault hits are
// counted as dropped.
func (t *Translator) guardBatch(ws *workerStats, prev bool) {
	debug.SetPanicOnFault(prev)
	if v := recover(); v != nil {
		if t.St.recovered(v, "write") == nil {
			panic(v)
		}
		ws.bad[BadOffline] += uint64(ws.pending)
	}
	ws.pending = 0
}

// stageAddrs appends to addrs[na:] the lines processFlow will touch for a report whose key
// hash is h (in the default layouts; nothing for a compat paths store), and returns the new
// count.
func (t *Translator) stageAddrs(h uint64, r *telemetry.Report, addrs []uintptr, na int) int {
	if t.St.Paths.Compat() || na+16 > len(addrs) {
		return na
	}
	c, st := &t.Cfg.INT, t.St
	if c.Counters && !st.KI.Compat() && st.KI.Seed() == st.Paths.Seed() {
		na = st.KI.slotAddrs(h, addrs, na)
	}
	if c.PathTrace && r.NHops > 0 {
		na = st.Paths.slotAddrs(h, addrs, na)
	}
	if c.Postcards && st.PC.Seed() == st.Paths.Seed() {
		na = t.Cache.entryAddrs(h, addrs, na)
		na = st.PC.chunkAddrs(h, addrs, na)
	}
	return na
}

// Process implements ingest.Processor. It does not allocate.
func (t *Translator) Process(worker int, r *telemetry.Report) {
	ws := &t.stats[worker]
	if r.Format == telemetry.FormatDTA {
		if t.processDTA(worker, ws, &r.DTA) && r.DTA.Immediate {
			t.notify(&r.DTA, r.RecvTime)
		}
		return
	}
	t.processINT(worker, ws, r)
}

// processDTA writes one DTA report and reports whether it did (false: counted bad).
func (t *Translator) processDTA(worker int, ws *workerStats, d *telemetry.DTA) bool {
	st := t.St
	switch d.Op {
	case telemetry.DTAKeyWrite:
		switch {
		case d.Redundancy == 0 || int(d.Redundancy) > st.KW.MaxN():
			ws.bad[BadRedundancy]++
		case int(d.DataLen) > st.KW.ValueBytes():
			ws.bad[BadDataLength]++
		case st.KW.Insert(d.KeyBytes(), d.DataBytes(), int(d.Redundancy)) != nil:
			ws.bad[BadKeyLength]++
		default:
			ws.written[WKeyWrite]++
			return true
		}
	case telemetry.DTAKeyIncrement:
		switch {
		case d.Redundancy == 0 || int(d.Redundancy) > st.KI.MaxN():
			ws.bad[BadRedundancy]++
		// A count-min sketch needs every key in the same N counters for the minimum to be
		// an upper bound: the report's redundancy is checked, the store's N is used.
		case st.KI.Add(d.KeyBytes(), d.Counter, st.KI.MaxN()) != nil:
			ws.bad[BadKeyLength]++
		default:
			ws.written[WKeyIncrement]++
			return true
		}
	case telemetry.DTAAppend:
		switch {
		case d.ListID >= uint32(st.AP.Lists()):
			ws.bad[BadListID]++
		case int(d.DataLen) > st.AP.Stride():
			ws.bad[BadDataLength]++
		default:
			t.batchers[worker].Add(int(d.ListID), d.DataBytes())
			if d.Immediate { // the entry is in its list before the event is out
				t.batchers[worker].Flush()
			}
			ws.written[WAppend]++
			return true
		}
	case telemetry.DTAPostcard:
		switch {
		case d.Hop == 0 || int(d.Hop) > st.PC.Hops():
			ws.bad[BadHop]++
		case d.KeyLen > MaxCacheKey:
			ws.bad[BadKeyLength]++
		case d.DataLen > 4:
			ws.bad[BadDataLength]++
		default:
			var v uint32
			for _, c := range d.DataBytes() {
				v = v<<8 | uint32(c)
			}
			t.Cache.Add(d.KeyBytes(), int(d.Hop), v, 0)
			ws.written[WPostcard]++
			return true
		}
	default:
		ws.bad[BadOpcode]++
	}
	return false
}

// notify publishes the immediate event of d, a report with the immediate flag that was
// written (DTA §3: the reporter asks for the collector to be notified; docs/dta.md): kind
// immediate, scope flow, Prev the opcode, Value the key's Hash64 under dta.seed (an Append's
// list id), Time the report's receive time. It does not allocate.
func (t *Translator) notify(d *telemetry.DTA, recv int64) {
	t.Immediate.Add(1)
	if t.bus == nil {
		return
	}
	e := event.Event{Time: recv, Kind: event.KindImmediate, Scope: event.ScopeFlow, Prev: uint64(d.Op)}
	if d.Op == telemetry.DTAAppend {
		e.Value = uint64(d.ListID)
	} else {
		e.Value = Hash64(t.Cfg.Seed, d.KeyBytes())
	}
	t.bus.Publish(&e)
}

// FlowKeyBytes is the key intake uses for a 5-tuple (docs/dta.md): 13 bytes for IPv4, 37
// for IPv6 (telemetry.FlowKey.KeyBytes).
func FlowKeyBytes(dst *[40]byte, k *telemetry.FlowKey) []byte { return k.KeyBytes(dst[:]) }

// processINT maps one INT report into the stores (DTA Table 2). The flow key is hashed once
// for every store that shares the Key-Write paths store's seed and layout (all of them by
// default), and the postcards of a trace are added under one cache lock.
func (t *Translator) processINT(worker int, ws *workerStats, r *telemetry.Report) {
	t.processNode(worker, ws, r)
	if r.Has&telemetry.HasFlow == 0 {
		return
	}
	var kb [40]byte
	key := FlowKeyBytes(&kb, &r.Flow)
	t.processFlow(ws, r, key, t.keyHash(key))
}

// processNode is processINT's part for the reporting node: drop and queue reports to their
// Append lists.
func (t *Translator) processNode(worker int, ws *workerStats, r *telemetry.Report) {
	c := &t.Cfg.INT
	if r.Has&telemetry.HasNodeID != 0 {
		var node [4]byte
		binary.BigEndian.PutUint32(node[:], r.NodeID)
		if r.Flags&telemetry.FlagDrop != 0 && c.DropList >= 0 {
			t.batchers[worker].Add(c.DropList, node[:])
			ws.written[WINTAppend]++
		}
		if r.Flags&telemetry.FlagQueue != 0 && c.QueueList >= 0 {
			t.batchers[worker].Add(c.QueueList, node[:])
			ws.written[WINTAppend]++
		}
	}
}

// keyHash is a flow key's hash for the stores that share the paths store's seed (0 when the
// paths store has the compat layout, whose keys are not hashed so).
func (t *Translator) keyHash(key []byte) uint64 {
	if t.St.Paths.Compat() {
		return 0
	}
	return Hash64(t.St.Paths.Seed(), key)
}

// processFlow is processINT's part for a report with a flow: key is the flow's key bytes, h
// its hash (keyHash).
func (t *Translator) processFlow(ws *workerStats, r *telemetry.Report, key []byte, h uint64) {
	c := &t.Cfg.INT
	st := t.St
	seed := st.Paths.Seed()
	hashable := !st.Paths.Compat()
	if c.Counters {
		if hashable && !st.KI.Compat() && st.KI.Seed() == seed {
			st.KI.AddHashed(h, 1, st.KI.MaxN())
		} else {
			st.KI.Add(key, 1, st.KI.MaxN())
		}
		ws.written[WINTCounter]++
	}
	hops := r.HopList()
	nstack := len(hops)
	if r.ReporterHop {
		nstack-- // Hops[0] is the reporter's own metadata, not part of the stack
	}
	switch {
	case nstack >= 1 && c.PathTrace:
		// An INT-MD trace: the path from the source, oldest hop first.
		stack := hops[len(hops)-nstack:]
		var val [32]byte
		w := st.Paths.ValueBytes() / 4
		n := 0
		for i := len(stack) - 1; i >= 0 && n < w; i-- {
			binary.BigEndian.PutUint32(val[4*n:], stack[i].NodeID)
			n++
		}
		if hashable {
			st.Paths.InsertHashed(h, val[:st.Paths.ValueBytes()], st.Paths.MaxN())
		} else {
			st.Paths.Insert(key, val[:st.Paths.ValueBytes()], st.Paths.MaxN())
		}
		ws.written[WINTPath]++
		if c.Postcards {
			var vals [MaxHops]uint32
			var present uint32
			for i := len(stack) - 1; i >= 0; i-- {
				if hop := len(stack) - i; hop <= st.PC.Hops() && stack[i].Fields&telemetry.FNodeID != 0 {
					ws.learn(st.PC, stack[i].NodeID)
					vals[hop-1], present = stack[i].NodeID, present|1<<(hop-1)
					ws.written[WINTPostcard]++
				}
			}
			if present != 0 {
				ph := h
				if !hashable || st.PC.Seed() != seed {
					ph = Hash64(st.PC.Seed(), key)
				}
				complete, early := t.Cache.AddPath(key, ph, &vals, present, min(len(stack), st.PC.Hops()))
				ws.complete += complete
				ws.early += early
			}
		}
	case len(hops) == 1 && c.Postcards && hops[0].Fields&telemetry.FNodeID != 0:
		// A postcard (INT-XD/MX, a TR report with only the reporter's hop): its hop number
		// from the remaining hop count the source's hop limit started.
		rem := int(r.INT.RemHops)
		if hop := c.HopLimit - rem; rem > 0 && hop >= 1 && hop <= st.PC.Hops() {
			t.Cache.Add(key, hop, hops[0].NodeID, 0)
			ws.written[WINTPostcard]++
		}
	}
}

// Bad returns the bad-input count for reason i, as of the workers' last Flush.
func (t *Translator) Bad(i int) uint64 {
	var n uint64
	if i == BadOffline {
		n = t.offlineEvents.Load()
	}
	for w := range t.stats {
		n += t.stats[w].pbad[i].Load()
	}
	return n
}

// Written returns the write count i, as of the workers' last Flush.
func (t *Translator) Written(i int) uint64 {
	if i == WINTEvent {
		return t.events.Load()
	}
	var n uint64
	for w := range t.stats {
		n += t.stats[w].pwritten[i].Load()
	}
	return n
}

// Drops is the reports the translator did not write, by reason (BadReasons), for the
// collector's status.
func (t *Translator) Drops() map[string]uint64 {
	m := make(map[string]uint64, len(BadReasons))
	for i, n := range BadReasons {
		m["dta."+n] = t.Bad(i)
	}
	return m
}
