package event

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/intake-int/intake/internal/metrics"
)

// Bus fans events out to its consumers; see the package doc. The zero Bus is ready to use.
type Bus struct {
	mu      sync.Mutex                  // serializes Subscribe/Unsubscribe
	subs    atomic.Pointer[[]*Consumer] // copy on write: Publish reads without a lock
	retired map[string]uint64           // overflow of unsubscribed consumers, by name
	ovf     *metrics.Family
}

// RegisterMetrics puts intake_event_ring_overflow_total{consumer} on reg: every consumer's
// overflow, summed by consumer name over the bus's life (consumers that left included).
// Call before the first Subscribe.
func (b *Bus) RegisterMetrics(reg *metrics.Registry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ovf = reg.Counter("intake_event_ring_overflow_total", "Events dropped because a bus consumer's ring was full, by consumer.", "consumer")
}

// Overflow returns the events consumers named name have lost, over the bus's life.
func (b *Bus) Overflow(name string) uint64 {
	b.mu.Lock()
	n := b.retired[name]
	b.mu.Unlock()
	for _, c := range b.Consumers() {
		if c.name == name {
			n += c.Overflow()
		}
	}
	return n
}

// RingStatus is one consumer's ring (GET /api/v1/flowcache/stats lists them: the SmartNIC
// sink's R_I rings).
type RingStatus struct {
	Consumer string `json:"consumer"`
	Size     int    `json:"size"`
	Pending  int    `json:"pending"`
	Drops    uint64 `json:"drops"`
}

// Declare makes name known to the bus before its consumer subscribes (a component declares
// its consumer in New and subscribes at Start), so that Names and Overflow list it whether
// or not it is subscribed now.
func (b *Bus) Declare(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.retired == nil {
		b.retired = map[string]uint64{}
	}
	if _, ok := b.retired[name]; !ok {
		b.retired[name] = 0
	}
}

// Names returns the names of every consumer declared, subscribed now, or subscribed before,
// sorted.
func (b *Bus) Names() []string {
	b.mu.Lock()
	var out []string
	for n := range b.retired {
		out = append(out, n)
	}
	b.mu.Unlock()
	for _, c := range b.Consumers() {
		out = append(out, c.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Drops is every consumer's overflow by name, "event_rings.<name>", for the collector's
// status.
func (b *Bus) Drops() map[string]uint64 {
	m := map[string]uint64{}
	for _, n := range b.Names() {
		m["event_rings."+n] = b.Overflow(n)
	}
	return m
}

// Rings returns every current consumer's ring status.
func (b *Bus) Rings() []RingStatus {
	cs := b.Consumers()
	out := make([]RingStatus, len(cs))
	for i, c := range cs {
		out[i] = RingStatus{Consumer: c.Name(), Size: c.Cap(), Pending: c.Len(), Drops: c.Overflow()}
	}
	return out
}

// Consumer is one subscriber's bounded ring.
type Consumer struct {
	name     string
	mask     uint64
	slots    []slot
	_        [56]byte
	enq      atomic.Uint64
	_        [56]byte
	deq      atomic.Uint64
	_        [56]byte
	overflow atomic.Uint64
	notify   chan struct{}
	// lingering is set while the consumer, having just found events, waits Linger before it
	// looks again: publishers then send no wake-up, and linger's timer sends the token.
	lingering atomic.Bool
	linger    *time.Timer
}

// Linger is how long a consumer that has just found events is left to sleep before it is
// woken for more: while events keep coming it is woken by a timer about once a Linger, not
// by each publisher's batch. A wake-up is a futex call charged to the ingest worker, a
// share of its time worth saving when events are frequent (docs/performance.md, "Figures
// behind choices in the code"); an event waits at most a Linger longer to reach the
// exporters and the log.
const Linger = time.Millisecond

type slot struct {
	seq atomic.Uint64
	ev  Event
}

// Subscribe adds a consumer whose ring holds size events (rounded up to a power of two, at
// least 2).
func (b *Bus) Subscribe(name string, size int) *Consumer {
	n := 2
	for n < size {
		n <<= 1
	}
	c := &Consumer{name: name, mask: uint64(n - 1), slots: make([]slot, n), notify: make(chan struct{}, 1)}
	c.linger = time.AfterFunc(time.Hour, c.lingered)
	c.linger.Stop()
	for i := range c.slots {
		c.slots[i].seq.Store(uint64(i))
	}
	b.mu.Lock()
	if b.ovf != nil {
		b.ovf.Func(func() float64 { return float64(b.Overflow(name)) }, name)
	}
	var next []*Consumer
	if cur := b.subs.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, c)
	b.subs.Store(&next)
	b.mu.Unlock()
	return c
}

// Unsubscribe removes c; events published afterwards no longer reach it. Its linger timer
// is stopped, so that nothing keeps c (and its ring) alive once its owner lets it go.
func (b *Bus) Unsubscribe(c *Consumer) {
	c.linger.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.subs.Load()
	if cur == nil {
		return
	}
	next := slices.DeleteFunc(slices.Clone(*cur), func(x *Consumer) bool { return x == c })
	if len(next) < len(*cur) {
		if b.retired == nil {
			b.retired = map[string]uint64{}
		}
		b.retired[c.name] += c.Overflow()
	}
	b.subs.Store(&next)
}

// Publish delivers a copy of e to every consumer. It never blocks and never allocates; it is
// safe from any number of goroutines. It keeps no count of its own (a counter every worker
// adds to would move between the cores on each event): the detector counts the events it
// raises per worker, each consumer its overflow.
func (b *Bus) Publish(e *Event) {
	subs := b.subs.Load()
	if subs == nil {
		return
	}
	for _, c := range *subs {
		c.put(e)
	}
}

// Publisher publishes for one goroutine (an ingest worker) many events at a time: Publish
// copies a run of events into every consumer's ring with one reservation per ring, and
// Wake, called once at the end of the publisher's batch, wakes the consumers that may be
// waiting for what it published since the last Wake. Between Publish and Wake the events
// are in the rings (a consumer that polls finds them); only the wake-up waits. A Publisher
// is for one goroutine; any number of Publishers and Publish callers share a Bus.
type Publisher struct {
	bus  *Bus
	wake []pendingWake
}

// pendingWake is what a Publisher reserved in one consumer's ring since its last Wake.
type pendingWake struct {
	c          *Consumer
	first, end uint64
}

// NewPublisher returns a Publisher on b.
func (b *Bus) NewPublisher() *Publisher { return &Publisher{bus: b} }

// Publish delivers copies of es, in order, to every consumer: each ring is reserved once for
// the run, and the events that do not fit are dropped for that consumer and counted as its
// overflow, as Bus.Publish does one at a time. It never blocks; it allocates only when
// consumers appear that this Publisher has not published to before.
func (p *Publisher) Publish(es []Event) {
	if len(es) == 0 {
		return
	}
	subs := p.bus.subs.Load()
	if subs == nil {
		return
	}
	for _, c := range *subs {
		pos, k := c.putBatch(es)
		if k == 0 {
			continue
		}
		i := 0
		for i < len(p.wake) && p.wake[i].c != c {
			i++
		}
		if i == len(p.wake) {
			p.wake = append(p.wake, pendingWake{c: c, first: pos})
		}
		p.wake[i].end = pos + uint64(k)
	}
}

// Wake wakes every consumer whose reader stands at a position this Publisher filled since
// the last Wake: it may be waiting for it. (A reader before those positions will reach them
// as it drains; a reader past them has taken them.)
func (p *Publisher) Wake() {
	for i := range p.wake {
		w := &p.wake[i]
		if d := w.c.deq.Load(); d >= w.first && d < w.end {
			w.c.wake()
		}
		w.c = nil
	}
	p.wake = p.wake[:0]
}

// putBatch reserves up to len(es) consecutive free slots at the ring's end with one CAS,
// copies the events into them and returns the first position and how many it took; the
// rest are overflow.
func (c *Consumer) putBatch(es []Event) (uint64, int) {
	n := len(es)
	var pos uint64
	k := 0
reserve:
	for {
		pos = c.enq.Load()
		for k = 0; k < n; k++ {
			seq := c.slots[(pos+uint64(k))&c.mask].seq.Load()
			if d := int64(seq - (pos + uint64(k))); d < 0 {
				break // full from here: the slot still holds an event from one lap ago
			} else if d > 0 {
				continue reserve // another producer took this position: pos is stale
			}
		}
		if k == 0 || c.enq.CompareAndSwap(pos, pos+uint64(k)) {
			break
		}
	}
	if k < n {
		c.overflow.Add(uint64(n - k))
	}
	for j := 0; j < k; j++ {
		s := &c.slots[(pos+uint64(j))&c.mask]
		s.ev = es[j]
		s.seq.Store(pos + uint64(j) + 1)
	}
	return pos, k
}

// Consumers returns the current consumers.
func (b *Bus) Consumers() []*Consumer {
	if s := b.subs.Load(); s != nil {
		return *s
	}
	return nil
}

// put is the enqueue of Vyukov's bounded MPMC queue: a slot's sequence number says whether
// it is free for position pos (seq == pos) or still holds an unread event (seq < pos).
func (c *Consumer) put(e *Event) {
	pos := c.enq.Load()
	var s *slot
	for {
		s = &c.slots[pos&c.mask]
		seq := s.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if c.enq.CompareAndSwap(pos, pos+1) {
				goto claimed
			}
			pos = c.enq.Load()
		case d < 0: // full: the slot still holds an event from one lap ago
			c.overflow.Add(1)
			return
		default:
			pos = c.enq.Load()
		}
	}
claimed:
	s.ev = *e
	s.seq.Store(pos + 1)
	// Wake the consumer only when this event may be the one it waits for: when the reader
	// stands at this position (the ring was empty, or held only claimed slots not yet
	// written). Checked after the store, so that a reader that stopped here is woken, and a
	// reader already past here has taken the event. A token per event cost a channel send
	// (a lock and often a futex wake) on every publish.
	if c.deq.Load() == pos {
		c.wake()
	}
}

// wake sends the consumer a token unless it lingers (its timer will).
func (c *Consumer) wake() {
	if c.lingering.Load() {
		return
	}
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// lingered ends a linger: publishers wake the consumer again, and the token it sends covers
// what they published meanwhile (their events were in the ring before they saw lingering).
func (c *Consumer) lingered() {
	c.lingering.Store(false)
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Poll copies up to len(dst) events, oldest first, and returns how many. It does not block.
// A Poll that finds events starts a Linger: the consumer's next token comes from a timer.
func (c *Consumer) Poll(dst []Event) int {
	n := c.poll(dst)
	if n > 0 && c.lingering.CompareAndSwap(false, true) {
		c.linger.Reset(Linger)
	}
	return n
}

func (c *Consumer) poll(dst []Event) int {
	n := 0
	for n < len(dst) {
		pos := c.deq.Load()
		s := &c.slots[pos&c.mask]
		seq := s.seq.Load()
		switch d := int64(seq - (pos + 1)); {
		case d == 0:
			if !c.deq.CompareAndSwap(pos, pos+1) {
				continue
			}
			dst[n] = s.ev
			s.seq.Store(pos + c.mask + 1)
			n++
		case d < 0: // empty
			return n
		}
	}
	return n
}

// Wait blocks until an event may be waiting or ctx ends; it returns false when ctx ended.
// A true return can be spurious: Poll may then find nothing.
func (c *Consumer) Wait(ctx context.Context) bool {
	if c.Len() > 0 {
		return true
	}
	select {
	case <-c.notify:
		return true
	case <-ctx.Done():
		return false
	}
}

// Notify returns the channel that receives a token when an event lands where the consumer
// stopped reading, for consumers that select on more than one thing. Such a consumer must
// drain (Poll until it returns fewer events than asked) before it waits on the channel
// again: events published while some were waiting send no token.
func (c *Consumer) Notify() <-chan struct{} { return c.notify }

// Len returns the number of events waiting.
func (c *Consumer) Len() int { return int(c.enq.Load() - c.deq.Load()) }

// Cap returns the ring's size.
func (c *Consumer) Cap() int { return len(c.slots) }

// Overflow returns the number of events dropped because the ring was full.
func (c *Consumer) Overflow() uint64 { return c.overflow.Load() }

// Name returns the name given to Subscribe.
func (c *Consumer) Name() string { return c.name }

// RingBytes is the memory of a consumer ring asked for size events (Subscribe rounds it up
// to a power of two), for configuration budgets.
func RingBytes(size int) int64 {
	n := int64(2)
	for n < int64(size) {
		n <<= 1
	}
	return n * int64(unsafe.Sizeof(slot{}))
}
