package ingest

import (
	"context"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// feedRecorder is a processor with a batch path that keeps the node ids it was handed.
type feedRecorder struct {
	nodes   []uint32
	flushes int
}

func (b *feedRecorder) Name() string                       { return "rec" }
func (b *feedRecorder) Process(_ int, r *telemetry.Report) { b.nodes = append(b.nodes, r.NodeID) }
func (b *feedRecorder) ProcessBatch(_ int, rs []telemetry.Report) {
	for i := range rs {
		b.Process(0, &rs[i])
	}
}
func (b *feedRecorder) Flush(int) { b.flushes++ }

// TestFeed: a feed is a listener of mode feed with one worker that opens nothing; the
// reports its owner hands over reach the processors with their own receive time, batch
// processors at EndBatch, and are counted in status as the listener's packets, bytes,
// reports and decode errors.
func TestFeed(t *testing.T) {
	rec := &feedRecorder{}
	var plain []int64
	procs := []Processor{rec, ProcessorFunc{ProcName: "plain", F: func(_ int, r *telemetry.Report) { plain = append(plain, r.RecvTime) }}}
	only := &feedRecorder{}
	rcv, err := New(Config{Feeds: []string{"group", "dta"}}, Deps{Processors: procs, FeedProcessors: map[string][]Processor{"dta": {only}}})
	if err != nil {
		t.Fatal(err)
	}
	if rcv.Feed("other") != nil {
		t.Fatal("a feed that is not configured")
	}
	f := rcv.Feed("group")
	if err := rcv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rcv.Stop(context.Background())
	f.SetSource("kafka:intake.raw")
	for i := range 3 {
		r := f.Slot()
		r.Reset()
		r.Format, r.NodeID, r.RecvTime = telemetry.FormatTR20, uint32(10+i), int64(100+i)
		f.Hand(50)
	}
	f.Bad(7)
	if len(rec.nodes) != 0 || len(plain) != 3 || plain[2] != 102 {
		t.Fatalf("before EndBatch: batch %v, plain %v", rec.nodes, plain)
	}
	f.EndBatch()
	if len(rec.nodes) != 3 || rec.nodes[2] != 12 || rec.flushes != 1 {
		t.Fatalf("after EndBatch: %v, %d flushes", rec.nodes, rec.flushes)
	}
	// A feed with processors of its own hands its reports to those only.
	d := rcv.Feed("dta")
	d.Slot().NodeID = 99
	d.Hand(1)
	d.EndBatch()
	if len(only.nodes) != 1 || only.nodes[0] != 99 || len(rec.nodes) != 3 || len(plain) != 3 || d.Worker() == f.Worker() {
		t.Errorf("the dta feed: its own %v, the others' %v %v (workers %d %d)", only.nodes, rec.nodes, plain, d.Worker(), f.Worker())
	}
	st := rcv.Status()
	if len(st.Listeners) != 2 {
		t.Fatalf("listeners %+v", st.Listeners)
	}
	l := st.Listeners[0]
	if l.Name != "group" || l.Mode != ModeFeed || l.Address != "kafka:intake.raw" || l.PacketsReceived != 4 || l.BytesReceived != 157 ||
		l.ReportsDecoded != 3 || l.DecodeErrors.Total != 1 || l.DecodeErrors.ByReason["bad_value"] != 1 || l.ReportsByFormat["tr2.0"] != 3 {
		t.Errorf("status %+v", l)
	}
}
