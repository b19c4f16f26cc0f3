package gen

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"
)

// The event knob (Config.Events, `--events N`): INTCollector's Fig. 11 varies the event rate
// at a fixed report rate, replaying reports whose values never change but for the events.
// With Events set, values are the draw model's with Vary 0 (every queue and port keeps the
// value it drew), and Events datagrams per second of generated time (Interval a report) carry
// one change that package detect's default rules raise exactly one event for: the egress tx
// utilization of one hop (the sink's: the stream is md mode) moves by
// EventStep, more than the default change threshold of tx_utilization (50), and nothing
// else moves. Changes come in pairs on one port: up, then at the next event back down, so
// that every change is one event and the port is as it was after each pair. A lap of the
// ring holds whole pairs (New sizes the ring to a multiple of the pattern's period), so the
// stream raises exactly Events events a generated second however long it is sent. The
// first event of a pair goes to a port that an earlier report of the lap carried: its change
// is then a change, not a new key.

// EventStep is the change of tx utilization an event report carries: one more than package
// detect's default threshold for tx_utilization (50; INTCollector's), so that the default
// rules raise exactly one change event for it (TestEventsDetected checks it against the
// detector's defaults).
const EventStep = 51

// eventSchedule places the events: datagram n of a lap carries one when before(n+1)
// > before(n), which spreads them evenly over the lap.
type eventSchedule struct {
	num uint64 // events per datagram, times 1e9: Events × Interval (ns) × reports per datagram
}

const nsPerS = uint64(time.Second)

func newEventSchedule(c *Config, batch int) (eventSchedule, error) {
	per := uint64(c.Interval) * uint64(batch) // generated ns a datagram
	hi, num := bits.Mul64(c.Events, per)
	if hi != 0 || 2*num > nsPerS {
		return eventSchedule{}, fmt.Errorf("events: %d a second with %v of generated time a report and %d report(s) a datagram: at most one event every two datagrams (%d a second)",
			c.Events, c.Interval, batch, nsPerS/per/2)
	}
	return eventSchedule{num: num}, nil
}

// before returns how many events the first n datagrams of a lap carry.
func (s eventSchedule) before(n uint64) uint64 {
	hi, lo := bits.Mul64(n, s.num)
	q, _ := bits.Div64(hi, lo, nsPerS) // hi < nsPerS: num is below nsPerS
	return q
}

// period returns the fewest datagrams whose events are a whole, even number: a lap must
// be a multiple of it.
func (s eventSchedule) period() uint64 {
	den := 2 * nsPerS
	return den / gcd(s.num, den)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// eventRing returns the ring length for cfg's events: ring rounded down to a multiple of the
// schedule's period, at least one period.
func eventRing(s eventSchedule, ring int) (int, error) {
	p := s.period()
	if p > MaxRing {
		return 0, fmt.Errorf("events: the pattern repeats every %d datagrams, more than a ring holds (%d): another rate, or --fresh", p, MaxRing)
	}
	return int(p * max(1, uint64(ring)/p)), nil
}

// eventState is a builder's part of the event knob.
type eventState struct {
	sched  eventSchedule
	seen   []bool   // by path position: reported earlier in the lap
	seenP  []uint32 // the positions seen, in order
	raised []bool   // by port index: carries EventStep more than its value
	pend   uint32   // the position of the pending pair's first event
}

func (e *eventState) init(t *topology) {
	if t.cfg.Events == 0 {
		*e = eventState{}
		return
	}
	e.sched, _ = newEventSchedule(&t.cfg, t.batch)
	e.seen = make([]bool, len(t.nodes))
	e.seenP = make([]uint32, 0, len(t.nodes))
	e.raised = make([]bool, t.nPorts)
}

// pick returns the reporting position of datagram n: p as drawn, or an event's, with its
// port's change applied. The first event of a pair picks (with rng) a position reported
// earlier in the lap: there is one, since the first datagram of a lap carries no event (at
// most one event every two datagrams).
func (e *eventState) pick(t *topology, rng *rand.Rand, n uint64, p uint32) uint32 {
	if e.seen == nil {
		return p
	}
	k := e.sched.before(n)
	if e.sched.before(n+1) == k {
		e.see(p)
		return p
	}
	up := k%2 == 0
	if up {
		e.pend = e.seenP[rng.IntN(len(e.seenP))]
	}
	e.raised[t.portOf[e.pend]] = up
	return e.pend
}

func (e *eventState) see(p uint32) {
	if !e.seen[p] {
		e.seen[p] = true
		e.seenP = append(e.seenP, p)
	}
}

// util returns the tx utilization of port pi, v as drawn.
func (e *eventState) util(pi int32, v uint32) uint32 {
	if e.raised != nil && e.raised[pi] {
		return v + EventStep
	}
	return v
}

// validateEvents checks the options the event knob needs.
func (c *Config) validateEvents() error {
	if c.Events == 0 {
		return nil
	}
	switch {
	case !c.isReport():
		return fmt.Errorf("events: %d: only the report formats (tr0.5, tr1.0, tr2.0) carry tx utilization", c.Events)
	case c.Mode == "xd":
		return fmt.Errorf("events: %d: needs md mode (the detector takes the hop of each xd report for the flow's path, whose changes are events too)", c.Events)
	case c.Model != ModelDraw || c.Vary != 0:
		return fmt.Errorf("events: %d: needs values that change only for the events: --model draw with --vary 0", c.Events)
	case c.Parts > 1:
		return fmt.Errorf("events: %d: not with several collectors (each member's stream would carry its own)", c.Events)
	}
	const need = 0x4000 | 0x0100 // bit 1 (ports: the key of tx utilization) and bit 7 (tx utilization)
	if b := c.bitmap(); b&need != need {
		return fmt.Errorf("events: %d: an event is a change of tx utilization, keyed by egress port: the per-hop fields must include bits 1 and 7 (--fields 8 or more)", c.Events)
	}
	return nil
}
