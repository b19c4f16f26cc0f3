package detect

import (
	"math/bits"
	"time"
)

// Sequence gaps when a reporter's reports arrive through several workers.
//
// A reporter's reports reach one worker in the order it sent them when one socket receives
// them all; a listener that spreads datagrams by flow (ingest's spread: flow) gives one
// reporter's reports to several workers, which run side by side, so its sequence numbers
// reach the detector slightly out of order. Counting every forward jump as missing reports
// would then count reports that are only late. So once a reporter's sequence key has been
// updated by a second worker, its gaps are counted through a window: a number that was
// jumped over is missing only once it is still missing reorderWait after the jump (as
// judged by the receive times of the reporter's later reports), or once seqWindow later
// numbers have been seen. A late report within the window fills its hole and is not counted.
// docs/detect.md, "Sequence gaps".

// seqWindow is how many numbers below the highest one a window tracks.
const seqWindow = 1024

// reorderWait is how long after the report that jumped over it a missing number is counted:
// far more than workers running side by side drift apart, little beside an operator's view.
const reorderWait = int64(100 * time.Millisecond)

// seqWin is one reporter's window: the highest number seen, and which of the seqWindow
// numbers below it are still missing. old holds those that were missing already at the
// window's last mark, at least reorderWait ago: a number missing at two marks is missing
// for good, so it is counted between reorderWait and twice that after its jump.
type seqWin struct {
	hi      uint32
	mark    int64                  // receive time of the last mark
	missing [seqWindow / 64]uint64 // bit n % seqWindow: number n, within (hi-seqWindow, hi)
	old     [seqWindow / 64]uint64
}

func bitOf(n uint32) (int, uint64) { return int(n%seqWindow) / 64, 1 << (n % 64) }

// reset starts the window at number hi with nothing missing, marked at now.
func (w *seqWin) reset(hi uint32, now int64) { *w = seqWin{hi: hi, mark: now} }

// take clears n's bits and reports whether n was missing.
func (w *seqWin) take(n uint32) bool {
	i, m := bitOf(n)
	set := w.missing[i]&m != 0
	w.missing[i] &^= m
	w.old[i] &^= m
	return set
}

// lose marks n missing since now (not since the last mark).
func (w *seqWin) lose(n uint32) {
	i, m := bitOf(n)
	w.missing[i] |= m
	w.old[i] &^= m
}

// drain counts every missing number for good and clears them.
func (w *seqWin) drain() uint64 {
	var gaps uint64
	for i := range w.missing {
		gaps += uint64(bits.OnesCount64(w.missing[i]))
		w.missing[i], w.old[i] = 0, 0
	}
	return gaps
}

// see takes number n, received at now, and returns how many numbers it finds missing for
// good.
func (w *seqWin) see(n uint32, now int64) uint64 {
	var gaps uint64
	switch step := n - w.hi; {
	case step == 0:
	case step < 1<<31: // forward
		if step > seqWindow {
			// Every number now in the window leaves it, and hi+1 .. n-seqWindow never
			// enter it: all missing for good.
			gaps += w.drain() + uint64(step-seqWindow)
		} else {
			// The numbers leaving the window, hi-seqWindow+1 .. n-seqWindow.
			for k, i := w.hi-seqWindow+1, uint32(0); i < step; k, i = k+1, i+1 {
				if w.take(k) {
					gaps++
				}
			}
		}
		lo := w.hi + 1
		if step > seqWindow {
			lo = n - seqWindow + 1
		}
		for k := lo; k != n; k++ {
			w.lose(k)
		}
		w.take(n)
		w.hi = n
	default: // backward
		if w.hi-n >= seqWindow { // far behind: the reporter restarted
			gaps += w.drain()
			w.hi = n
			return gaps
		}
		w.take(n) // a late report fills its hole
	}
	if now-w.mark >= reorderWait {
		for i := range w.missing {
			lost := w.missing[i] & w.old[i]
			gaps += uint64(bits.OnesCount64(lost))
			w.missing[i] &^= lost
			w.old[i] = w.missing[i]
		}
		w.mark = now
	}
	return gaps
}
