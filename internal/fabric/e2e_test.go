package fabric

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/wire"
)

// Real time, real UDP over loopback into a real ingest collector running the INT-label
// controller: the coverage the collector computes equals the coverage computed from the
// fabric's ground truth on the same run.
func TestCollectorCoverageEqualsGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	cfg := ingest.Config{Listeners: []ingest.Listener{{Name: "int-label", Format: "int-label", Address: "127.0.0.1", Sockets: 1, Batch: 16, RcvBuf: 4 << 20, MaxDatagram: 2048}}, Decoder: wire.DefaultConfig()}
	lc := label.DefaultConfig()
	lc.Clock = label.ClockLabel // windows by label time: independent of loopback jitter
	lc.ActiveWindows = 3
	ctl := label.New(lc, label.Deps{})
	coll, err := ingest.New(cfg, ingest.Deps{Processors: []ingest.Processor{ctl}})
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer coll.Stop(context.Background())

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
	testutil.Eventually(t, 3*time.Second, "the collector to install every export sent", func() bool { return ctl.Counters().Reports >= sent })
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

// Pro over the real channels: the collector's controller (Algorithm 3, k = 1: a port whose
// newest item is older than T = 50 ms gets S raised) receives the fabric's exports over UDP
// and sends its shifts to the fabric's control endpoint over HTTP; once the controller
// stops, the shifts the fabric applies are exactly the controller's.
func TestProFeedbackOverControlEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	f, err := New(Config{
		Topology: Testbed(DefaultLink),
		Routing:  "fixed",
		Traffic:  Traffic{Senders: []int{0, 7}, Rate: 5e6, PacketSize: 1000, Poisson: true},
		Label:    LabelConfig{Algo: AlgoA, T: 50 * time.Millisecond},
		Seed:     5,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The controller needs the control endpoint's address before the fabric, which needs
	// the collector's, listens: reserve a loopback port for the endpoint.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctlAddr := ln.Addr().String()
	ln.Close()
	lc := label.DefaultConfig()
	lc.K, lc.LabelingInterval, lc.FeedbackPeriod = 1, 50*time.Millisecond, 5*time.Millisecond
	hc := label.NewHTTPControl("http://"+ctlAddr, label.ControlDeps{})
	ctl := label.New(lc, label.Deps{Setter: hc})
	cfg := ingest.Config{Listeners: []ingest.Listener{{Name: "int-label", Format: "int-label", Address: "127.0.0.1", Sockets: 1, Batch: 16, RcvBuf: 4 << 20, MaxDatagram: 2048}}, Decoder: wire.DefaultConfig()}
	coll, err := ingest.New(cfg, ingest.Deps{Processors: []ingest.Processor{ctl}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := coll.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ep := Endpoints{Label: coll.ListenerAddr(0), Control: ctlAddr}
	if err := f.Listen(ep); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, ep) }()
	time.Sleep(1500 * time.Millisecond)
	if err := coll.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Stop(context.Background()); err != nil { // stops Algorithm 3
		t.Fatal(err)
	}
	if err := hc.Stop(context.Background()); err != nil { // flushes the sender
		t.Fatal(err)
	}
	k := ctl.Counters()
	if k.ShiftsUp == 0 || hc.Sent.Load() != k.ShiftsUp+k.ShiftsDown || hc.Errors.Load() != 0 || hc.Dropped.Load() != 0 {
		t.Fatalf("controller %+v; control sent %d, errors %d, drops %d", k, hc.Sent.Load(), hc.Errors.Load(), hc.Dropped.Load())
	}
	want := map[[2]uint8]uint8{}
	for _, p := range ctl.Ports(ctl.Now(), -1) {
		if p.Shift > 0 {
			want[[2]uint8{p.SwitchID, p.Port}] = p.Shift
		}
	}
	resp, err := http.Get("http://" + f.ControlAddr() + label.ControlPath)
	if err != nil {
		t.Fatal(err)
	}
	var got label.Shifts
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	cancel()
	if rerr := <-done; err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	if len(got.Shifts) != len(want) {
		t.Fatalf("fabric shifts %+v, controller's %v", got.Shifts, want)
	}
	for _, s := range got.Shifts {
		if want[[2]uint8{s.SwitchID, s.Port}] != s.Shift {
			t.Fatalf("fabric shifts %+v, controller's %v", got.Shifts, want)
		}
	}
	t.Logf("controller %+v; %d ports at S > 0 when stopped", k, len(want))
}
