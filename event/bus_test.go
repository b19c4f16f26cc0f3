package event

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/intake-int/intake/internal/testutil"
)

func TestNames(t *testing.T) {
	for k := KindNewKey; k < NumKinds; k++ {
		if got, ok := ParseKind(k.String()); !ok || got != k {
			t.Errorf("kind %d: %q does not parse back", k, k.String())
		}
	}
	for m := FlowLatency; m < NumMeasurements; m++ {
		if got, ok := ParseMeasurement(m.String()); !ok || got != m {
			t.Errorf("measurement %d: %q does not parse back", m, m.String())
		}
	}
	if s := string(AppendPath(nil, []uint32{1, 22, 3})); s != "1:22:3" {
		t.Errorf("AppendPath = %q", s)
	}
}

// TestBusFanOutOverflow: every consumer gets every event in order until its ring is full;
// then exactly the excess is counted as overflow, per consumer.
func TestBusFanOutOverflow(t *testing.T) {
	var b Bus
	big := b.Subscribe("big", 100) // 128
	small := b.Subscribe("small", 8)
	for i := 0; i < 100; i++ {
		b.Publish(&Event{Value: uint64(i)})
	}
	if big.Overflow() != 0 || small.Overflow() != 92 {
		t.Fatalf("overflow big %d small %d, want 0 and 92", big.Overflow(), small.Overflow())
	}
	buf := make([]Event, 200)
	n := big.Poll(buf)
	if n != 100 {
		t.Fatalf("big polled %d, want 100", n)
	}
	for i := 0; i < n; i++ {
		if buf[i].Value != uint64(i) {
			t.Fatalf("big event %d has value %d", i, buf[i].Value)
		}
	}
	if n := small.Poll(buf); n != 8 || buf[7].Value != 7 {
		t.Fatalf("small polled %d (last %d), want 8 (7)", n, buf[n-1].Value)
	}
	b.Unsubscribe(small)
	b.Publish(&Event{Value: 1000})
	if small.Len() != 0 || big.Len() != 1 {
		t.Fatalf("after unsubscribe: small %d big %d waiting", small.Len(), big.Len())
	}
}

// TestBusConcurrent: several publishers, one blocking consumer; received + overflow equals
// published, and no event is seen twice.
func TestBusConcurrent(t *testing.T) {
	var b Bus
	c := b.Subscribe("c", 64)
	const pubs, per = 4, 20000
	var wg sync.WaitGroup
	for p := 0; p < pubs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				b.Publish(&Event{Key: Key{Switch: uint32(p)}, Value: uint64(i)})
			}
		}(p)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	last := [pubs]int64{-1, -1, -1, -1}
	var got uint64
	buf := make([]Event, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		n := c.Poll(buf)
		for _, e := range buf[:n] {
			p := e.Key.Switch
			if int64(e.Value) <= last[p] {
				t.Fatalf("publisher %d: %d after %d", p, e.Value, last[p])
			}
			last[p] = int64(e.Value)
		}
		got += uint64(n)
		select {
		case <-done:
			if c.Len() == 0 {
				if got+c.Overflow() != pubs*per {
					t.Fatalf("received %d + overflow %d != published %d", got, c.Overflow(), pubs*per)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("timeout")
		default:
		}
		if n == 0 {
			select {
			case <-c.Notify():
			case <-done:
			}
		}
	}
}

func TestPublishNoAlloc(t *testing.T) {
	var b Bus
	c := b.Subscribe("c", 1024)
	e := Event{Kind: KindChange}
	buf := make([]Event, 1024)
	if a := testing.AllocsPerRun(1000, func() {
		b.Publish(&e)
		c.Poll(buf)
	}); a != 0 {
		t.Fatalf("Publish+Poll: %v allocs", a)
	}
}

func BenchmarkPublish(b *testing.B) {
	var bus Bus
	c := bus.Subscribe("c", 1<<12)
	buf := make([]Event, 64)
	e := Event{Kind: KindChange}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		bus.Publish(&e)
		if i&63 == 63 {
			c.Poll(buf)
		}
	}
}

// TestBusWakeup: consumers that block in Wait (and on Notify after draining) are woken for
// every event, with publishers racing the consumer's drain: a lost wake-up leaves events in
// the ring and the consumer asleep until the deadline.
func TestBusWakeup(t *testing.T) {
	for round := 0; round < 200; round++ {
		var b Bus
		c := b.Subscribe("c", 1<<12)
		const pubs, per = 2, 500
		var wg sync.WaitGroup
		for p := 0; p < pubs; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					b.Publish(&Event{Value: uint64(i)})
					if i%50 == 0 {
						time.Sleep(time.Microsecond)
					}
				}
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		buf := make([]Event, 7)
		got := 0
		for got < pubs*per && c.Wait(ctx) {
			for {
				n := c.Poll(buf)
				got += n
				if n < len(buf) {
					break
				}
			}
		}
		cancel()
		wg.Wait()
		if got != pubs*per || c.Overflow() != 0 {
			t.Fatalf("round %d: consumer got %d of %d events (overflow %d): a wake-up was lost", round, got, pubs*per, c.Overflow())
		}
	}
}

func TestRingBytes(t *testing.T) {
	var b Bus
	for _, n := range []int{0, 2, 3, 1000, 1 << 16} {
		c := b.Subscribe("x", n)
		if got := RingBytes(n); got != int64(len(c.slots))*int64(unsafe.Sizeof(c.slots[0])) {
			t.Errorf("RingBytes(%d) = %d, ring of %d slots", n, got, len(c.slots))
		}
	}
}

// TestPublisherFanOutOverflow: a Publisher's run reaches every consumer in order until its
// ring is full; exactly the excess is counted as overflow, per consumer, as with Publish.
func TestPublisherFanOutOverflow(t *testing.T) {
	var b Bus
	big := b.Subscribe("big", 100) // 128
	small := b.Subscribe("small", 8)
	p := b.NewPublisher()
	es := make([]Event, 100)
	for i := range es {
		es[i].Value = uint64(i)
	}
	p.Publish(es[:3])
	p.Publish(es[3:])
	p.Wake()
	if big.Overflow() != 0 || small.Overflow() != 92 {
		t.Fatalf("overflow big %d small %d, want 0 and 92", big.Overflow(), small.Overflow())
	}
	buf := make([]Event, 200)
	if n := big.Poll(buf); n != 100 {
		t.Fatalf("big polled %d, want 100", n)
	}
	for i := 0; i < 100; i++ {
		if buf[i].Value != uint64(i) {
			t.Fatalf("big event %d has value %d", i, buf[i].Value)
		}
	}
	if n := small.Poll(buf); n != 8 || buf[0].Value != 0 || buf[7].Value != 7 {
		t.Fatalf("small polled %d (%d..%d), want 8 (0..7)", n, buf[0].Value, buf[n-1].Value)
	}
	// With room again, a run is taken whole, after single events, in order.
	b.Publish(&Event{Value: 1000})
	p.Publish(es[:5])
	p.Wake()
	if n := small.Poll(buf); n != 6 || buf[0].Value != 1000 || buf[5].Value != 4 || small.Overflow() != 92 {
		t.Fatalf("small polled %d (%d..%d), overflow %d", n, buf[0].Value, buf[n-1].Value, small.Overflow())
	}
	if n := big.Poll(buf); n != 6 || buf[0].Value != 1000 || buf[5].Value != 4 {
		t.Fatalf("big polled %d (%d..%d)", n, buf[0].Value, buf[n-1].Value)
	}
	b.Unsubscribe(small)
	p.Publish(es[:1])
	if small.Len() != 0 || big.Len() != 1 {
		t.Fatalf("after unsubscribe: small %d big %d waiting", small.Len(), big.Len())
	}
}

// TestPublisherConcurrent: Publishers and single Publish calls race a draining consumer
// over a small ring: received + overflow equals published, every publisher's events arrive
// in its order, none twice, and no wake-up is lost (the consumer blocks on Notify between
// drains).
func TestPublisherConcurrent(t *testing.T) {
	for round := 0; round < 20; round++ {
		var b Bus
		c := b.Subscribe("c", 64)
		const pubs, per = 4, 5000
		var wg sync.WaitGroup
		for pi := 0; pi < pubs; pi++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if pi == 0 { // one publisher one event at a time
					for i := 0; i < per; i++ {
						b.Publish(&Event{Key: Key{Switch: uint32(pi)}, Value: uint64(i)})
					}
					return
				}
				p := b.NewPublisher()
				es := make([]Event, 37)
				for i := 0; i < per; {
					k := min(1+(i*7+pi)%len(es), per-i)
					for j := range es[:k] {
						es[j] = Event{Key: Key{Switch: uint32(pi)}, Value: uint64(i + j)}
					}
					p.Publish(es[:k])
					if i%3 == 0 {
						p.Wake()
					}
					i += k
				}
				p.Wake()
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		last := [pubs]int64{-1, -1, -1, -1}
		var got uint64
		buf := make([]Event, 16)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for {
			n := c.Poll(buf)
			for _, e := range buf[:n] {
				p := e.Key.Switch
				if int64(e.Value) <= last[p] {
					t.Fatalf("publisher %d: %d after %d", p, e.Value, last[p])
				}
				last[p] = int64(e.Value)
			}
			got += uint64(n)
			if n > 0 {
				continue
			}
			select {
			case <-done:
				if c.Len() == 0 {
					cancel()
					if got+c.Overflow() != pubs*per {
						t.Fatalf("received %d + overflow %d != published %d", got, c.Overflow(), pubs*per)
					}
					goto next
				}
			default:
			}
			select { // drained: block until woken (or every publisher is done)
			case <-c.Notify():
			case <-done:
			case <-ctx.Done():
				t.Fatalf("round %d: waited in vain with %d received, %d overflow: a wake-up was lost", round, got, c.Overflow())
			}
		}
	next:
	}
}

// TestPublisherWakeup: a consumer blocked on Notify after draining is woken by the Wake that
// follows a Publish, for every run, with the publisher racing its drain.
func TestPublisherWakeup(t *testing.T) {
	for round := 0; round < 100; round++ {
		var b Bus
		c := b.Subscribe("c", 1<<12)
		const runs, per = 300, 5
		go func() {
			p := b.NewPublisher()
			es := make([]Event, per)
			for i := 0; i < runs; i++ {
				p.Publish(es)
				p.Wake()
				if i%30 == 0 {
					time.Sleep(time.Microsecond)
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		buf := make([]Event, 7)
		got := 0
		for got < runs*per {
			for {
				n := c.Poll(buf)
				got += n
				if n < len(buf) {
					break
				}
			}
			if got == runs*per {
				break
			}
			select {
			case <-c.Notify():
			case <-ctx.Done():
				t.Fatalf("round %d: consumer got %d of %d events: a wake-up was lost", round, got, runs*per)
			}
		}
		cancel()
	}
}

// TestLinger: a consumer that has just found events is not woken by publishers; its linger
// timer sends the token after Linger, covering what was published meanwhile. A consumer
// that found nothing is woken by the next publish at once. In a synctest bubble: the linger
// timer runs on the fake clock, and a token that never comes is a deadlock the bubble
// reports, not a test that hangs.
func TestLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Bus
		c := b.Subscribe("c", 64)
		p := b.NewPublisher()
		buf := make([]Event, 8)
		p.Publish(make([]Event, 1))
		p.Wake()
		if len(c.notify) != 1 {
			t.Fatal("idle consumer: no token after the first publish")
		}
		<-c.Notify()
		if n := c.Poll(buf); n != 1 {
			t.Fatalf("poll: %d events, want 1", n)
		}
		start := time.Now()
		p.Publish(make([]Event, 3))
		p.Wake()
		b.Publish(&Event{})
		if len(c.notify) != 0 {
			t.Fatal("lingering consumer was woken by a publisher")
		}
		select {
		case <-c.Notify():
		case <-time.After(5 * time.Second):
			t.Fatal("no token after the linger")
		}
		if d := time.Since(start); d < Linger/2 {
			t.Fatalf("token after %v, before the linger (%v) ended", d, Linger)
		}
		if n := c.Poll(buf); n != 4 {
			t.Fatalf("poll after the linger: %d events, want 4", n)
		}
		// That poll started another linger; once it ends with nothing found, the consumer is
		// idle again and the next publish wakes it directly.
		<-c.Notify()
		if n := c.Poll(buf); n != 0 {
			t.Fatalf("poll of an empty ring: %d events", n)
		}
		testutil.Eventually(t, 5*time.Second, "the linger to end", func() bool { return !c.lingering.Load() })
		p.Publish(make([]Event, 1))
		p.Wake()
		if len(c.notify) != 1 {
			t.Fatal("idle consumer: no token from the publisher after the linger ended")
		}
	})
}

func TestPublisherNoAlloc(t *testing.T) {
	var b Bus
	c := b.Subscribe("c", 1024)
	p := b.NewPublisher()
	es := make([]Event, 16)
	buf := make([]Event, 1024)
	p.Publish(es)
	p.Wake()
	if a := testing.AllocsPerRun(1000, func() {
		p.Publish(es)
		p.Wake()
		c.Poll(buf)
	}); a != 0 {
		t.Fatalf("Publisher.Publish+Wake+Poll: %v allocs", a)
	}
}

// BenchmarkPublishBatch is BenchmarkPublish with the events published 64 at a time by a
// Publisher (ns/op is per event).
func BenchmarkPublishBatch(b *testing.B) {
	var bus Bus
	c := bus.Subscribe("c", 1<<12)
	buf := make([]Event, 64)
	es := make([]Event, 64)
	for i := range es {
		es[i].Kind = KindChange
	}
	p := bus.NewPublisher()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%64 == 0 {
			p.Publish(es)
			p.Wake()
			c.Poll(buf)
		}
		n++
	}
}

// TestBusDeclare: a declared consumer is listed before it subscribes and after it leaves,
// with the overflow it had.
func TestBusDeclare(t *testing.T) {
	var b Bus
	b.Declare("export")
	b.Declare("export")
	if got := b.Names(); len(got) != 1 || got[0] != "export" {
		t.Fatalf("Names after Declare = %v, want [export]", got)
	}
	c := b.Subscribe("log", 2)
	for range 3 {
		b.Publish(&Event{})
	}
	if got := b.Names(); len(got) != 2 || got[0] != "export" || got[1] != "log" {
		t.Fatalf("Names = %v, want [export log]", got)
	}
	b.Unsubscribe(c)
	if got, n := b.Names(), b.Overflow("log"); len(got) != 2 || n != 1 {
		t.Fatalf("after Unsubscribe: Names = %v, Overflow(log) = %d, want [export log], 1", got, n)
	}
}
