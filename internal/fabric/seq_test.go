package fabric

import (
	"maps"
	"slices"
	"testing"
	"time"

	ev "github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/telemetry"
)

// seqRecorder keeps every report a fabric sends, in order.
type seqRecorder struct{ reports []telemetry.Report }

func (s *seqRecorder) Label(int64, *telemetry.Report) {}
func (s *seqRecorder) Report(now int64, r *telemetry.Report) {
	c := *r
	c.RecvTime = now
	s.reports = append(s.reports, c)
}

// seqGaps runs reports through a detector at its defaults, leaving out those drop says
// were lost, and returns its seq_gaps value per switch (from a snapshot) and the number of
// seq_gaps change events it raised.
func seqGaps(t *testing.T, reports []telemetry.Report, drop func(r *telemetry.Report) bool) (map[uint32]uint64, int) {
	t.Helper()
	bus := &ev.Bus{}
	c := bus.Subscribe("t", 1<<20)
	d := detect.New(detect.DefaultConfig(), detect.Deps{Bus: bus})
	for i := range reports {
		if !drop(&reports[i]) {
			d.Process(0, &reports[i])
		}
	}
	d.Flush(0)
	changes := 0
	buf := make([]ev.Event, 4096)
	for n := c.Poll(buf); n > 0; n = c.Poll(buf) {
		for _, e := range buf[:n] {
			if e.Measurement == ev.SeqGaps && e.Kind != ev.KindNewKey {
				changes++
			}
		}
	}
	if c.Overflow() != 0 {
		t.Fatalf("event ring overflowed by %d", c.Overflow())
	}
	gaps := map[uint32]uint64{}
	d.Snapshot(reports[len(reports)-1].RecvTime, func(e *ev.Event) {
		if e.Measurement == ev.SeqGaps {
			if e.Key.HWID != 0 {
				t.Fatalf("seq_gaps of switch %d hw_id %d: the fabric reports on hw_id 0", e.Key.Switch, e.Key.HWID)
			}
			gaps[e.Key.Switch] = e.Value
		}
	})
	return gaps, changes
}

// TestReportSequencePerSwitch: every switch numbers its own reports (INT-MD sink reports
// and postcards alike) 0, 1, 2, ... on hw_id 0, as TR v2.0 numbers them per (node id,
// hw_id): through a detector nothing counts as lost, and reports left out on the way count
// exactly. (Before, one counter for all switches made each switch's sequence jump by the
// other switches' reports: `demo --fabric` showed a storm of seq_gaps.) The fabric loses
// packets on links, never a report, so loss is applied between the fabric and the detector.
func TestReportSequencePerSwitch(t *testing.T) {
	f := testbed(t, AlgoNone, func(c *Config) {
		c.Traffic.Senders = nil // every host sends: every switch reports
		c.INTMDEvery, c.PostcardEvery = 1, 3
	})
	rec := &seqRecorder{}
	f.SetSink(rec)
	f.RunVirtual(int64(200 * time.Millisecond))

	seqs := map[uint32][]uint32{}
	for i := range rec.reports {
		r := &rec.reports[i]
		if r.HWID != 0 || r.Has&telemetry.HasSeq == 0 {
			t.Fatalf("report %d: hw_id %d, has %v", i, r.HWID, r.Has)
		}
		seqs[r.NodeID] = append(seqs[r.NodeID], r.Seq)
	}
	if len(seqs) != 12 {
		t.Fatalf("%d switches reported, want all 12 of the testbed", len(seqs))
	}
	busiest := uint32(0)
	for sw, s := range seqs {
		for i, v := range s {
			if v != uint32(i) {
				t.Fatalf("switch %d: report %d has sequence number %d, want %d", sw, i, v, i)
			}
		}
		if len(s) > len(seqs[busiest]) {
			busiest = sw
		}
	}
	if len(seqs[busiest]) < 200 {
		t.Fatalf("switch %d sent only %d reports", busiest, len(seqs[busiest]))
	}

	gaps, changes := seqGaps(t, rec.reports, func(*telemetry.Report) bool { return false })
	if len(gaps) != 12 || changes != 0 {
		t.Fatalf("nothing lost: seq_gaps %v, %d seq_gaps events; want 12 switches at 0 and none", gaps, changes)
	}
	for sw, g := range gaps {
		if g != 0 {
			t.Fatalf("nothing lost: switch %d has %d seq_gaps", sw, g)
		}
	}

	// Lose 4 reports of the busiest switch (three in a row and one alone) and one of another.
	other := uint32(1)
	if other == busiest {
		other = 2
	}
	lost := map[[2]uint32]bool{{busiest, 5}: true, {busiest, 6}: true, {busiest, 7}: true, {busiest, 100}: true, {other, 1}: true}
	gaps, changes = seqGaps(t, rec.reports, func(r *telemetry.Report) bool { return lost[[2]uint32{r.NodeID, r.Seq}] })
	want := map[uint32]uint64{}
	for sw := range seqs {
		want[sw] = 0
	}
	want[busiest], want[other] = 4, 1
	if !maps.Equal(gaps, want) || changes != 3 {
		t.Fatalf("5 reports lost: seq_gaps %v, %d seq_gaps events; want %v and 3 (one per gap)", gaps, changes, want)
	}
}

// memberSeqs checks that each member's reports from each switch are numbered 0..n-1.
func memberSeqs(t *testing.T, member int, seqs map[uint32][]uint32) {
	t.Helper()
	for sw, s := range seqs {
		s = slices.Clone(s)
		slices.Sort(s)
		for i, v := range s {
			if v != uint32(i) {
				t.Fatalf("member %d, switch %d: sequence numbers %v, want 0..%d", member, sw, s, len(s)-1)
			}
		}
	}
}
