package capture

import (
	"fmt"
	"math"
	"time"
)

// Pacing of a replay (`intake replay`): when each datagram of a capture is sent again.

// PaceMode is how a replay spaces its datagrams.
type PaceMode int

const (
	FullSpeed     PaceMode = iota // no waits
	FixedRate                     // one datagram every 1/x seconds
	CaptureTiming                 // the capture's own gaps, divided by x
)

// DefaultMaxWait is the longest a replay waits between two datagrams unless told otherwise:
// a capture with a gap of hours (or a timestamp decades off) would otherwise stall the
// replay silently.
const DefaultMaxWait = time.Second

// A Pacer says when each datagram is due, counted from the replay's start. No wait between
// two datagrams is longer than the maximum; the waits cut short are counted.
type Pacer struct {
	mode    PaceMode
	x       float64
	maxWait time.Duration
	due     time.Duration
	last    time.Time
	n       uint64

	// Capped is the number of waits cut to the maximum, Skipped the time cut from them, and
	// FirstCapped the 1-based number of the first datagram whose wait was cut (0: none).
	Capped      uint64
	Skipped     time.Duration
	FirstCapped uint64
	FirstGap    time.Duration // that datagram's wait before it was cut
}

// NewPacer returns a pacer for mode with x datagrams per second (FixedRate) or x times the
// capture's speed (CaptureTiming): x must be a finite number above 0. maxWait must be
// positive.
func NewPacer(mode PaceMode, x float64, maxWait time.Duration) (*Pacer, error) {
	if mode != FullSpeed && (math.IsNaN(x) || math.IsInf(x, 0) || x <= 0) {
		return nil, fmt.Errorf("%v: must be a finite number above 0", x)
	}
	if maxWait <= 0 {
		return nil, fmt.Errorf("maximum wait %s: must be positive", maxWait)
	}
	return &Pacer{mode: mode, x: x, maxWait: maxWait}, nil
}

// MaxWait is the longest wait between two datagrams.
func (p *Pacer) MaxWait() time.Duration { return p.maxWait }

// Next returns when the next datagram, captured at t, is due from the replay's start.
func (p *Pacer) Next(t time.Time) time.Duration {
	p.n++
	if p.n == 1 || p.mode == FullSpeed {
		p.last = t
		return p.due
	}
	var w time.Duration
	switch p.mode {
	case FixedRate:
		if 1/p.x <= p.maxWait.Seconds() { // from the count, so that rounding does not add up
			p.due = nsDuration(float64(p.n-1) / p.x * float64(time.Second))
			return p.due
		}
		w = nsDuration(1 / p.x * float64(time.Second))
	case CaptureTiming:
		w = max(t.Sub(p.last), 0) // a timestamp going back: no wait
		if p.x != 1 {             // in float: a gap divided by a tiny speed must not overflow
			w = nsDuration(float64(w) / p.x)
		}
		p.last = t
	}
	if w > p.maxWait {
		p.Capped++
		if p.FirstCapped == 0 {
			p.FirstCapped, p.FirstGap = p.n, w
		}
		p.Skipped = satAdd(p.Skipped, w-p.maxWait)
		w = p.maxWait
	}
	p.due = satAdd(p.due, w)
	return p.due
}

// nsDuration converts ns nanoseconds to a Duration, saturating at the largest.
func nsDuration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
