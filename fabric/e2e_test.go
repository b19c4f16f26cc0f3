package fabric

import (
	"context"
	"testing"
	"time"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/label"
)

// Real time, real UDP over loopback into a real ingest collector running the INT-label
// controller: the coverage the collector computes equals the coverage computed from the
// fabric's ground truth on the same run.
func TestCollectorCoverageEqualsGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	cfg := config.Default()
	cfg.Listeners = []config.Listener{{Name: "int-label", Format: "int-label", Address: "127.0.0.1", Sockets: 1, Batch: 16, RcvBuf: 4 << 20, MaxDatagram: 2048}}
	lc := label.DefaultConfig()
	lc.Clock = label.ClockLabel // windows by label time: independent of loopback jitter
	lc.ActiveWindows = 3
	ctl := label.New(lc, nil, nil)
	coll, err := ingest.New(cfg, nil, ctl)
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.Start(); err != nil {
		t.Fatal(err)
	}
	defer coll.Stop()

	lp := DefaultLink
	f, err := New(Config{
		Topology: Testbed(lp),
		Routing:  "fixed", // every port with traffic carries one sender's constant stream
		Traffic:  Traffic{Rate: 2e6, PacketSize: 1000, Pattern: "permutation"},
		// T above T_i: some windows miss a port, so coverage is not trivially 1.
		Label: LabelConfig{Algo: AlgoA, T: 110 * time.Millisecond},
		Seed:  3,
	})
	if err != nil {
		t.Fatal(err)
	}
	ti := int64(lc.TelemetryInterval)
	truth := NewTruth(ti, true)
	f.SetTracer(truth)
	f.SetSink(truth)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	if err := f.Run(ctx, Endpoints{Label: coll.ListenerAddr(0), Control: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	sent, errs := f.UDPSent()
	deadline := time.Now().Add(3 * time.Second)
	for ctl.Counters().Reports < sent && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := ctl.Counters().Reports; got != sent || errs != 0 || sent < 50 {
		t.Fatalf("collector installed %d exports, fabric sent %d (%d errors)", got, sent, errs)
	}
	from, to := truth.Span()
	rep := ctl.Coverage(0, 1000)
	byIdx := map[int64]label.Window{}
	for _, w := range rep.Windows {
		byIdx[w.Index] = w
	}
	// Steady windows: after the first labels, before the last (partly exported) one.
	compared, partial := 0, 0
	for _, tw := range truth.Windows(from+3, to-2) {
		cw := byIdx[tw.Index]
		if cw.Updated != tw.Updated || cw.Active != tw.Traffic || cw.Coverage != tw.Coverage {
			t.Errorf("window %d: collector %d/%d = %.3f, ground truth %d/%d = %.3f",
				tw.Index, cw.Updated, cw.Active, cw.Coverage, tw.Updated, tw.Traffic, tw.Coverage)
		}
		compared++
		if tw.Coverage < 1 {
			partial++
		}
	}
	if compared < 15 || partial == 0 {
		t.Fatalf("compared %d windows, %d below full coverage", compared, partial)
	}
	t.Logf("%d windows compared, %d below full coverage; %d exports", compared, partial, sent)
}
