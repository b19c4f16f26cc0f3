package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/gen"
)

// TestDemo runs the demo for a few seconds: every stream arrives and decodes, the screen
// shows every flow of the generator and lists the slowest flows slowest first, and the final
// summary has no drops.
func TestDemo(t *testing.T) {
	code, out, errs := runVerb("demo", "--duration", "2500ms", "--http", "127.0.0.1:0", "--pps", "400",
		"--flows", "20", "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "intake demo: tr2.0 md: 20 flows over 16 switches") {
		t.Errorf("start line: %q", errs)
	}
	screens := strings.Split(out, "intake demo   up ")
	if len(screens) < 3 {
		t.Fatalf("%d screens in 2.5 s, want at least 2:\n%s", len(screens)-1, out)
	}
	last := screens[len(screens)-1]
	for _, want := range []string{
		"flows       20 active in the last 5 s",
		"drops: kernel 0, decode errors 0, ingest 0, queues 0",
		"slowest flows (end-to-end latency of the last report)",
		"slowest hops (hop latency by switch, last second)",
		"intake demo: stopped after",
		"  decode errors     0\n",
		"  kernel drops      0\n",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("last screen lacks %q:\n%s", want, last)
		}
	}
	// Every stream is received: report, DTA and INT-label.
	if !regexp.MustCompile(`reports decoded   \d+ \(dta \d+, int-label \d+, tr2\.0 \d+\)`).MatchString(last) {
		t.Errorf("final summary lacks a stream:\n%s", last)
	}
	// Three flows, slowest first, each with a five-switch path.
	re := regexp.MustCompile(`(?m)^  10\.0\.0\.\d+:\d+ > 172\.16\.0\.\d+:\d+ (?:tcp|udp) +([0-9.]+) µs   path \d+( > \d+){4}$`)
	rows := re.FindAllStringSubmatch(last, -1)
	if len(rows) != 3 {
		t.Fatalf("%d slowest-flow rows, want 3:\n%s", len(rows), last)
	}
	prev := 1e18
	for _, r := range rows {
		v, _ := strconv.ParseFloat(r[1], 64)
		if v > prev {
			t.Errorf("slowest flows not in descending order:\n%s", last)
		}
		prev = v
	}
}

func TestDemoMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pps", "0"}, "--pps: 0: must be positive"},
		{[]string{"--fabric", "--count", "10"}, "--count, --sockets and --gso are the generator's: --fabric sends from the fabric"},
		{[]string{"--top", "0"}, "--top: 0: allowed is 1 to 100"},
		{[]string{"--format", "dta"}, "--format: dta: the demo's main stream is telemetry reports"},
	} {
		code, _, errs := runVerb(append([]string{"demo"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestDemoFabric runs the demo on the emulated testbed: its INT-MD reports and INT-label
// exports arrive and decode, and the screen describes the fabric.
func TestDemoFabric(t *testing.T) {
	code, out, errs := runVerb("demo", "--fabric", "--duration", "2s", "--http", "127.0.0.1:0", "--rate", "500")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"fabric: testbed, 12 switches, 8 servers, INT-MD on every packet, INT-label Base A",
		"slowest flows (end-to-end latency of the last report)",
		"  decode errors     0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`reports decoded   [1-9]\d* \(int-label [1-9]\d*, tr2\.0 [1-9]\d*\)`).MatchString(out) {
		t.Errorf("final summary lacks INT-label exports or TR v2.0 reports:\n%s", out)
	}
}

// The demo takes gen's sending options: --count stops it once the count is sent (the DTA
// and INT-label streams send a tenth of it), over --sockets sockets.
func TestDemoCount(t *testing.T) {
	code, out, errs := runVerb("demo", "--count", "400", "--sockets", "2", "--pps", "4000", "--http", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "  reports decoded   480 (dta 40, int-label 40, tr2.0 400)\n"; !strings.Contains(out, want) {
		t.Errorf("final summary lacks %q:\n%s", want, out)
	}
	if code, _, errs := runVerb("demo", "--count", "5", "--duration", "1s"); code != 2 || errs != "intake demo: --duration and --count exclude each other\n" {
		t.Errorf("--count with --duration: %d %q", code, errs)
	}
}

// TestDemoNetworkModel runs the demo's collector and generators with generated time ten
// times as fast as the wall clock's (a report every 500 µs of generated time sent at 20000
// datagrams/s, and export.period 1 s in proportion) for 70 s of generated time: as ./demo
// does in 70 s, the reduction factor (M_all over values exported) is at least 100, and the
// first minute has a path change and a queue crossing the build-up level.
func TestDemoNetworkModel(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under the race detector: the collector does not take 20000 reports/s under it, and a report lost is a value M_all lacks")
	}
	cfg, cleanup, err := demoConfig("", "127.0.0.1:0") // the API's registry holds the gauges, the demo's one sink
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// ./demo pushes every live key's value every 10 s (export.period); here every 10 s of
	// generated time, by the reports received, so that a slow run (the race detector, a
	// loaded machine) pushes no more often than the demo does.
	cfg.Export.Period = 0
	coll, err := collector.New(cfg, collector.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cons := coll.Bus.Subscribe("test", 1<<20)
	if err := coll.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer coll.Stop(context.Background())
	gcfg := demoGenConfig()
	gcfg.Interval = 500 * time.Microsecond
	const reports = 70 * 2000 // 70 s of generated time
	recv := coll.Receiver
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, wait, err := gen.StartDemo(ctx, gcfg, gen.SendConfig{Rate: 20000, Count: reports},
		[3]string{recv.ListenerAddr(0), recv.ListenerAddr(1), recv.ListenerAddr(2)})
	if err != nil {
		t.Fatal(err)
	}
	const pushEvery = 10 * 2000 // reports of the TR listener in 10 s of generated time
	pushes := 0
	push := func() {
		coll.Export.PushNow(time.Now().UnixNano())
		pushes++
	}
	sent := make(chan error, 1)
	go func() { sent <- wait() }()
	for done := false; !done; {
		select {
		case err := <-sent:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(5 * time.Millisecond):
		}
		if recv.Status().Listeners[0].ReportsDecoded >= uint64(pushes+1)*pushEvery {
			push()
		}
	}
	recv.Settle()
	for pushes < reports/pushEvery {
		push()
	}
	st := coll.DetectStatus()
	rf := st.Export.ReductionFactor
	if rf == nil || *rf < 100 {
		f := 0.0
		if rf != nil {
			f = *rf
		}
		t.Fatalf("reduction factor %.1f, want at least 100: %+v", f, st)
	}
	// Events in generated time: device time from the first report's (the stream's start).
	var evs []event.Event
	buf := make([]event.Event, 4096)
	for n := cons.Poll(buf); n > 0; n = cons.Poll(buf) {
		evs = append(evs, buf[:n]...)
	}
	start := uint64(math.MaxUint64)
	for _, e := range evs {
		if e.DevTime != 0 {
			start = min(start, e.DevTime)
		}
	}
	first := map[event.Kind]time.Duration{}
	for _, e := range evs {
		if _, ok := first[e.Kind]; !ok && e.DevTime >= start {
			first[e.Kind] = time.Duration(e.DevTime - start)
		}
	}
	for _, k := range []event.Kind{event.KindPathChange, event.KindAbove} {
		if at, ok := first[k]; !ok || at > time.Minute {
			t.Errorf("first %v at %v of generated time, want within a minute (%d events: %v)", k, at, len(evs), st.Detect.Events)
		}
	}
	if cons.Overflow() != 0 || st.Detect.Reports < reports {
		t.Errorf("%d events lost, %d reports detected of %d sent", cons.Overflow(), st.Detect.Reports, reports)
	}
	t.Logf("reduction %.1f; first path change %v, above %v; events %v", *rf, first[event.KindPathChange], first[event.KindAbove], st.Detect.Events)
}
