package gen

import (
	"flag"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// eventsConfig is INTCollector Fig. 11's event-rate panel's stream (3 hops, 100 flows, 9
// fields) at 10,000 reports a second of generated time, as `--events` makes it.
func eventsConfig(t *testing.T, events uint64, args ...string) Config {
	t.Helper()
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs, DefaultConfig())
	if err := fs.Parse(append([]string{"--hops=3", "--flows=100", "--fields=9", "--interval=100us", "--events=" + strconv.FormatUint(events, 10)}, args...)); err != nil {
		t.Fatal(err)
	}
	c, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEventsDetected: each stream is decoded and run through a detector at its defaults
// (one report received a generated time step after the other). Past the new keys, the
// detector raises exactly one event for each datagram the schedule gives one: a change of
// tx_utilization by EventStep, on that very datagram, and nothing else, over several laps
// of the ring (and in fresh mode): events × 3 in 3 generated seconds.
func TestEventsDetected(t *testing.T) {
	if th := detect.DefaultConfig().Change["tx_utilization"]; th+1 != EventStep {
		t.Fatalf("detect's default tx_utilization threshold is %d; EventStep %d must be one more", th, EventStep)
	}
	const n = 30000 // datagrams: 3 s of generated time
	for _, tc := range []struct {
		name   string
		events uint64
		args   []string
	}{
		{"none", 0, nil},
		{"10/s", 10, nil},
		{"100/s", 100, nil},
		{"1000/s", 1000, nil},
		{"3/s", 3, nil},
		{"1000/s fresh", 1000, []string{"--fresh"}},
		{"300/s tr1.0", 300, []string{"--format=tr1.0", "--fields=8"}},
		{"100/s tr0.5", 100, []string{"--format=tr0.5", "--fields=8"}},
		{"500/s batch 4", 500, []string{"--batch=4", "--interval=25us"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := eventsConfig(t, tc.events, tc.args...)
			g := mustNew(t, c)
			if !c.Fresh && (uint64(g.Len())*tc.events*uint64(c.Interval)*uint64(g.Batch()))%(2*uint64(time.Second)) != 0 {
				t.Fatalf("a lap of %d datagrams holds no whole, even number of events", g.Len())
			}
			dec, err := wire.NewDecoder(g.WireConfig())
			if err != nil {
				t.Fatal(err)
			}
			bus := &event.Bus{}
			cons := bus.Subscribe("t", 1<<20)
			d := detect.New(detect.DefaultConfig(), detect.Deps{Bus: bus})
			var want []int64 // the datagrams that carry an event
			s, _ := newEventSchedule(&c, g.Batch())
			var reports uint64
			err = g.Walk(n, func(i uint64, b []byte, _ []telemetry.Report) error {
				lap := i
				if !c.Fresh {
					lap = i % uint64(g.Len())
				}
				if tc.events > 0 && s.before(lap+1) > s.before(lap) {
					want = append(want, int64(i))
				}
				rs, errs := dec.DecodeAll(g.Input(), b)
				if len(errs) > 0 {
					t.Fatalf("datagram %d: %v", i, errs[0])
				}
				for j := range rs {
					rs[j].RecvTime = int64(i)
					d.Process(0, &rs[j])
				}
				reports += uint64(len(rs))
				return nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(want)) != 3*tc.events {
				t.Fatalf("the schedule gives %d events in 3 s, want %d", len(want), 3*tc.events)
			}
			buf := make([]event.Event, 1<<16)
			var got []int64
			newKeys := 0
			for k := cons.Poll(buf); k > 0; k = cons.Poll(buf) {
				for _, e := range buf[:k] {
					switch {
					case e.Kind == event.KindNewKey:
						newKeys++
					case e.Kind == event.KindChange && e.Measurement == event.TxUtilization && (e.Value-e.Prev == EventStep || e.Prev-e.Value == EventStep):
						got = append(got, e.Time)
					default:
						t.Fatalf("unexpected event %v %v %d -> %d at datagram %d", e.Kind, e.Measurement, e.Prev, e.Value, e.Time)
					}
				}
			}
			if cons.Overflow() != 0 || newKeys == 0 {
				t.Fatalf("%d new keys, %d events lost", newKeys, cons.Overflow())
			}
			if len(got) != len(want) {
				t.Fatalf("%d tx_utilization change events in 3 s (%d reports), want %d", len(got), reports, len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("event %d on datagram %d, want %d", i, got[i], want[i])
				}
			}
		})
	}
}

// TestEventsOptions: --events selects constant draw-model values with --vary 0; what cannot
// carry its events is refused, naming why; Pace sets the generated time from the rate.
func TestEventsOptions(t *testing.T) {
	c := eventsConfig(t, 10)
	if c.Model != ModelDraw || c.Vary != 0 || c.Latency.String() != "const:2000" || c.Queue.String() != "const:64" || c.Util.String() != "const:50" {
		t.Errorf("--events 10: model %s vary %g latency %s queue %s util %s; want draw, 0, const:2000, const:64, const:50",
			c.Model, c.Vary, c.Latency, c.Queue, c.Util)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--events=10", "--model=network"}, "--events: values that change only for the events are --model draw's, not --model network's"},
		{[]string{"--events=10", "--vary=0.5"}, "events: 10: needs values that change only for the events: --model draw with --vary 0"},
		{[]string{"--events=10", "--fields=7"}, "events: 10: an event is a change of tx utilization, keyed by egress port: the per-hop fields must include bits 1 and 7 (--fields 8 or more)"},
		{[]string{"--events=10", "--format=dta"}, "events: 10: only the report formats (tr0.5, tr1.0, tr2.0) carry tx utilization"},
		{[]string{"--events=10", "--mode=xd"}, "events: 10: needs md mode (the detector takes the hop of each xd report for the flow's path, whose changes are events too)"},
	} {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := AddFlags(fs, DefaultConfig())
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Config(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// More than one event every two datagrams is refused when the stream is built.
	c = eventsConfig(t, 5001)
	if _, err := New(c); err == nil || err.Error() != "events: 5001 a second with 100µs of generated time a report and 1 report(s) a datagram: at most one event every two datagrams (5000 a second)" {
		t.Errorf("5001 events a second at 10,000 datagrams: %v", err)
	}

	fs := flag.NewFlagSet("", flag.ContinueOnError)
	f := AddFlags(fs, DefaultConfig())
	if err := fs.Parse([]string{"--events=10", "--fields=9"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Pace(&c, 0); err == nil || err.Error() != "--events: 10 a second needs a rate (--pps), or --interval for the generated time a report" {
		t.Errorf("Pace at no rate: %v", err)
	}
	if err := f.Pace(&c, 20000); err != nil || c.Interval != 50*time.Microsecond {
		t.Errorf("Pace at 20,000 datagrams a second: interval %v, %v; want 50µs", c.Interval, err)
	}
}
