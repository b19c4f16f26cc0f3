package dta

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/telemetry"
)

// The translator (DTA §3, §5.2) turns DTA reports into writes to the stores, and maps INT
// telemetry into them (DTA Table 2): INT-MD path traces → the paths Key-Write store (flow
// 5-tuple → node ids), per-hop metadata → Postcarding, drop and queue reports → Append
// lists, a report count per flow → Key-Increment. It runs in the ingest workers: no lock on
// the Key-Write and Key-Increment paths, one spin lock per postcard cache line, one mutex
// per Append batch. Bad input is counted by reason and never written. Detected events reach
// an Append list through the event bus and an EventWriter (events.go).

// Bad-input reasons.
const (
	BadOpcode     = iota // an opcode no primitive has
	BadRedundancy        // 0 or above the store's maximum
	BadListID            // not below append.lists
	BadKeyLength         // a key the store cannot take (compat: not 4 bytes; postcard: > 40)
	BadDataLength        // data wider than the store's values
	BadHop               // postcard hop 0 or above B
	numBad
)

// BadReasons are the reason labels, by index.
var BadReasons = [numBad]string{"opcode", "redundancy", "list_id", "key_length", "data_length", "hop"}

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

// workerStats are one worker's counters, a cache line apart from the next worker's.
type workerStats struct {
	bad     [numBad]atomic.Uint64
	written [numWritten]atomic.Uint64
	_       [64]byte
}

// Translator is the DTA processor.
type Translator struct {
	Cfg      Config
	St       *Stores
	Cache    *PostcardCache
	batchers []*Batcher
	stats    []workerStats

	keyLen   int // decoder.dta.key_len, for API queries
	bus      *event.Bus
	consumer *event.Consumer // the event list's, between Start and Stop
	evCancel context.CancelFunc
	evDone   chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
	// Snapshots counts epoch snapshots taken; Resets, Key-Increment resets.
	Snapshots, Resets atomic.Uint64
	events            atomic.Uint64 // entries the EventWriter queued
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
}

// NewTranslator builds the translator of cfg (which must have passed Validate). It opens
// nothing: Start opens (or creates) the stores.
func NewTranslator(cfg Config, deps Deps) *Translator {
	t := &Translator{Cfg: cfg, stats: make([]workerStats, max(deps.Workers, 1)), bus: deps.Bus}
	if deps.Metrics != nil {
		t.registerMetrics(deps.Metrics)
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
	st, err := OpenStores(&t.Cfg)
	if err != nil {
		return err
	}
	t.St, t.Cache = st, st.PC.NewCache(t.Cfg.Postcard.Cache)
	t.batchers = make([]*Batcher, len(t.stats))
	for i := range t.batchers {
		t.batchers[i] = t.St.AP.NewBatcher(t.Cfg.Append.Batch)
	}
	t.stop = make(chan struct{})
	if p := t.Cfg.KeyIncrement.ResetPeriod; p > 0 {
		t.every(p, func(time.Time) { t.St.KI.Reset(); t.Resets.Add(1) })
	}
	if p := t.Cfg.Epochs.Period; p > 0 {
		t.every(p, func(now time.Time) {
			if _, err := t.St.Snapshot(now, t.Cfg.Epochs.Retain); err == nil {
				t.Snapshots.Add(1)
			}
		})
	}
	t.startEvents()
	return nil
}

func (t *Translator) every(p time.Duration, f func(time.Time)) {
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
				f(now)
			}
		}
	}()
}

// Flush writes the worker's partial Append batches (after each receive batch, so that an
// entry waits at most one recvmmsg round).
func (t *Translator) Flush(worker int) {
	if worker < len(t.batchers) {
		t.batchers[worker].Flush()
	}
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
	for _, b := range t.batchers {
		b.Flush()
	}
	t.Cache.Flush()
	return t.St.Close()
}

// Process implements ingest.Processor. It does not allocate.
func (t *Translator) Process(worker int, r *telemetry.Report) {
	ws := &t.stats[worker]
	if r.Format == telemetry.FormatDTA {
		t.processDTA(worker, ws, &r.DTA)
		return
	}
	t.processINT(worker, ws, r)
}

func (t *Translator) processDTA(worker int, ws *workerStats, d *telemetry.DTA) {
	st := t.St
	switch d.Op {
	case telemetry.DTAKeyWrite:
		switch {
		case d.Redundancy == 0 || int(d.Redundancy) > st.KW.MaxN():
			ws.bad[BadRedundancy].Add(1)
		case int(d.DataLen) > st.KW.ValueBytes():
			ws.bad[BadDataLength].Add(1)
		case st.KW.Insert(d.KeyBytes(), d.DataBytes(), int(d.Redundancy)) != nil:
			ws.bad[BadKeyLength].Add(1)
		default:
			ws.written[WKeyWrite].Add(1)
		}
	case telemetry.DTAKeyIncrement:
		switch {
		case d.Redundancy == 0 || int(d.Redundancy) > st.KI.MaxN():
			ws.bad[BadRedundancy].Add(1)
		// A count-min sketch needs every key in the same N counters for the minimum to be
		// an upper bound: the report's redundancy is checked, the store's N is used.
		case st.KI.Add(d.KeyBytes(), d.Counter, st.KI.MaxN()) != nil:
			ws.bad[BadKeyLength].Add(1)
		default:
			ws.written[WKeyIncrement].Add(1)
		}
	case telemetry.DTAAppend:
		switch {
		case d.ListID >= uint32(st.AP.Lists()):
			ws.bad[BadListID].Add(1)
		case int(d.DataLen) > st.AP.Stride():
			ws.bad[BadDataLength].Add(1)
		default:
			t.batchers[worker].Add(int(d.ListID), d.DataBytes())
			ws.written[WAppend].Add(1)
		}
	case telemetry.DTAPostcard:
		switch {
		case d.Hop == 0 || int(d.Hop) > st.PC.Hops():
			ws.bad[BadHop].Add(1)
		case d.KeyLen > MaxCacheKey:
			ws.bad[BadKeyLength].Add(1)
		case d.DataLen > 4:
			ws.bad[BadDataLength].Add(1)
		default:
			var v uint32
			for _, c := range d.DataBytes() {
				v = v<<8 | uint32(c)
			}
			t.Cache.Add(d.KeyBytes(), int(d.Hop), v, 0)
			ws.written[WPostcard].Add(1)
		}
	default:
		ws.bad[BadOpcode].Add(1)
	}
}

// FlowKeyBytes is the key intake uses for a 5-tuple (docs/dta.md): IPv4 source, destination
// (4 bytes each), source port, destination port (2 bytes each, big-endian), protocol — 13
// bytes; IPv6 the same with 16-byte addresses — 37 bytes.
func FlowKeyBytes(dst *[40]byte, k *telemetry.FlowKey) []byte {
	if k.IPv6 {
		copy(dst[0:], k.Src[:])
		copy(dst[16:], k.Dst[:])
		binary.BigEndian.PutUint16(dst[32:], k.SrcPort)
		binary.BigEndian.PutUint16(dst[34:], k.DstPort)
		dst[36] = k.Proto
		return dst[:37]
	}
	copy(dst[0:], k.Src[12:])
	copy(dst[4:], k.Dst[12:])
	binary.BigEndian.PutUint16(dst[8:], k.SrcPort)
	binary.BigEndian.PutUint16(dst[10:], k.DstPort)
	dst[12] = k.Proto
	return dst[:13]
}

func (t *Translator) processINT(worker int, ws *workerStats, r *telemetry.Report) {
	c := &t.Cfg.INT
	if r.Has&telemetry.HasNodeID != 0 {
		var node [4]byte
		binary.BigEndian.PutUint32(node[:], r.NodeID)
		if r.Flags&telemetry.FlagDrop != 0 && c.DropList >= 0 {
			t.batchers[worker].Add(c.DropList, node[:])
			ws.written[WINTAppend].Add(1)
		}
		if r.Flags&telemetry.FlagQueue != 0 && c.QueueList >= 0 {
			t.batchers[worker].Add(c.QueueList, node[:])
			ws.written[WINTAppend].Add(1)
		}
	}
	if r.Has&telemetry.HasFlow == 0 {
		return
	}
	var kb [40]byte
	key := FlowKeyBytes(&kb, &r.Flow)
	if c.Counters {
		t.St.KI.Add(key, 1, t.St.KI.MaxN())
		ws.written[WINTCounter].Add(1)
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
		w := t.St.Paths.ValueBytes() / 4
		n := 0
		for i := len(stack) - 1; i >= 0 && n < w; i-- {
			binary.BigEndian.PutUint32(val[4*n:], stack[i].NodeID)
			n++
		}
		t.St.Paths.Insert(key, val[:t.St.Paths.ValueBytes()], t.St.Paths.MaxN())
		ws.written[WINTPath].Add(1)
		if c.Postcards {
			for i := len(stack) - 1; i >= 0; i-- {
				if hop := len(stack) - i; hop <= t.St.PC.Hops() && stack[i].Fields&telemetry.FNodeID != 0 {
					t.Cache.Add(key, hop, stack[i].NodeID, min(len(stack), t.St.PC.Hops()))
					ws.written[WINTPostcard].Add(1)
				}
			}
		}
	case len(hops) == 1 && c.Postcards && hops[0].Fields&telemetry.FNodeID != 0:
		// A postcard (INT-XD/MX, a TR report with only the reporter's hop): its hop number
		// from the remaining hop count the source's hop limit started.
		rem := int(r.INT.RemHops)
		if hop := c.HopLimit - rem; rem > 0 && hop >= 1 && hop <= t.St.PC.Hops() {
			t.Cache.Add(key, hop, hops[0].NodeID, 0)
			ws.written[WINTPostcard].Add(1)
		}
	}
}

// Bad returns the bad-input count for reason i.
func (t *Translator) Bad(i int) uint64 {
	var n uint64
	for w := range t.stats {
		n += t.stats[w].bad[i].Load()
	}
	return n
}

// Written returns the write count i.
func (t *Translator) Written(i int) uint64 {
	if i == WINTEvent {
		return t.events.Load()
	}
	var n uint64
	for w := range t.stats {
		n += t.stats[w].written[i].Load()
	}
	return n
}
