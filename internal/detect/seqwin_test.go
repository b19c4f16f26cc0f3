package detect

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// seqReport is reporter 9's report number seq, received at t.
func seqReport(seq uint32, t int64) *telemetry.Report {
	var r telemetry.Report
	r.Has = telemetry.HasNodeID | telemetry.HasSeq
	r.NodeID, r.Seq, r.HWID, r.RecvTime = 9, seq, 2, t
	return &r
}

// interleave returns reports 1..n of one reporter, sent 3 µs apart, as two workers that took
// every other one hand them to the detector: each in order, but worker 1 up to lag reports
// behind worker 0 (drawn from seed), and without the numbers in lost.
func interleave(n, lag int, lost map[uint32]bool, seed uint64) (order []uint32, worker []int) {
	var q [2][]uint32
	for s := uint32(1); s <= uint32(n); s++ {
		if !lost[s] {
			q[s%2] = append(q[s%2], s)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(q[0])+len(q[1]) > 0 {
		w := rng.IntN(2)
		// Worker 1 may not fall more than lag numbers behind worker 0, nor run ahead of it.
		if len(q[1]) > 0 && (len(q[0]) == 0 || q[0][0] > q[1][0]+uint32(lag)) {
			w = 1
		} else if len(q[0]) > 0 && (len(q[1]) == 0 || q[1][0] > q[0][0]) {
			w = 0
		}
		order, worker = append(order, q[w][0]), append(worker, w)
		q[w] = q[w][1:]
	}
	return order, worker
}

// gapsOf returns the seq_gaps values the events carried, in order.
func gapsOf(c *event.Consumer) []uint64 {
	buf := make([]event.Event, 4096)
	var out []uint64
	for _, e := range buf[:c.Poll(buf)] {
		if e.Measurement == event.SeqGaps {
			out = append(out, e.Value)
		}
	}
	return out
}

// TestSeqGapsTwoWorkers: a reporter whose reports two workers take turns with (ingest's
// spread: flow), each in order but one up to 100 reports behind the other, loses nothing:
// no gap is counted and no seq_gaps change raised. With 7 reports lost, exactly 7 are
// counted once later reports have come twice reorderWait after them, and the count never
// goes down.
func TestSeqGapsTwoWorkers(t *testing.T) {
	const n, gap = 100000, int64(3 * time.Microsecond)
	for _, lost := range []map[uint32]bool{{}, {5: true, 6: true, 777: true, 20000: true, 20001: true, 20002: true, 99000: true}} {
		var bus event.Bus
		c := bus.Subscribe("t", 1<<16)
		cfg := testConfig()
		cfg.Change = map[string]uint64{"seq_gaps": 0}
		d := New(cfg, Deps{Bus: &bus, Workers: 2})
		order, worker := interleave(n, 100, lost, 7)
		for i, s := range order {
			d.Process(worker[i], seqReport(s, int64(s)*gap))
		}
		// Reports after the last loss by more than 2 x reorderWait: every gap is counted.
		last := uint32(n) + uint32(2*reorderWait/gap) + 2
		for s := uint32(n + 1); s <= last; s++ {
			d.Process(int(s%2), seqReport(s, int64(s)*gap))
		}
		d.Flush(0)
		d.Flush(1)
		got := gapsOf(c)
		if len(lost) == 0 {
			if len(got) != 1 || got[0] != 0 {
				t.Errorf("nothing lost: %d seq_gaps events, the last %v; want the new key's 0 only", len(got), got[max(0, len(got)-5):])
			}
			continue
		}
		if len(got) == 0 || got[len(got)-1] != uint64(len(lost)) {
			t.Errorf("%d lost: %d seq_gaps events, the last %v; want the last at %d", len(lost), len(got), got[max(0, len(got)-5):], len(lost))
		}
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Errorf("seq_gaps went down: %v", got)
			}
		}
	}
}

// TestSeqWin: the window's rules, number by number.
func TestSeqWin(t *testing.T) {
	ms := int64(time.Millisecond)
	var w seqWin
	w.reset(10, 0)
	for _, c := range []struct {
		n    uint32
		at   int64
		want uint64
		why  string
	}{
		{11, 1 * ms, 0, "next"},
		{14, 2 * ms, 0, "12, 13 missing since 2 ms"},
		{13, 3 * ms, 0, "13 late: filled"},
		{15, 101 * ms, 0, "mark: 12 is missing at the mark, counted at the next"},
		{16, 150 * ms, 0, "no mark yet"},
		{17, 201 * ms, 1, "second mark: 12 counted"},
		{12, 202 * ms, 0, "12 later still: a duplicate now"},
		{17 + seqWindow + 5, 203 * ms, 5, "a jump beyond the window: the 5 jumped over that never enter it counted at once, the last 1023 missing"},
		{10, 204 * ms, seqWindow - 1, "far behind: a restart; what was missing is counted"},
		{11, 205 * ms, 0, "the restarted reporter's next"},
	} {
		if got := w.see(c.n, c.at); got != c.want {
			t.Fatalf("%d at %d ms (%s): %d counted, want %d", c.n, c.at/ms, c.why, got, c.want)
		}
	}
}
