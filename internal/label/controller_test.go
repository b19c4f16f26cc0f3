package label

import (
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
)

type shifts struct {
	mu  sync.Mutex
	log []Shift
}

func (s *shifts) SetShift(sw, port, shift uint8) {
	s.mu.Lock()
	s.log = append(s.log, Shift{sw, port, shift})
	s.mu.Unlock()
}

func export(recv int64, items ...telemetry.LabelItem) *telemetry.Report {
	r := &telemetry.Report{Format: telemetry.FormatLabel, RecvTime: recv, NLabels: uint8(len(items))}
	copy(r.Labels[:], items)
	return r
}

const ms = int64(time.Millisecond)

// Algorithm 4: the newest label time wins whatever the arrival order.
func TestNewestLabelTimeWins(t *testing.T) {
	c := New(DefaultConfig(), Deps{Now: func() int64 { return 1000 * ms }})
	c.Process(0, export(10*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 2, EgressTS: 500, DeqTimedelta: 7}))
	c.Process(0, export(11*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 2, EgressTS: 400, DeqTimedelta: 9}))
	c.Process(0, export(12*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 2, EgressTS: 600, DeqTimedelta: 5},
		telemetry.LabelItem{SwitchID: 1, EgressPort: 1, EgressTS: 550}))
	ps := c.Ports(1000*ms, -1)
	if len(ps) != 2 || ps[0].SwitchID != 1 || ps[1].LabelTime != 600 || ps[1].LatencyNs != 5 || ps[1].Stale != 1 || ps[1].Updates != 2 {
		t.Fatalf("ports %+v", ps)
	}
	if k := c.Counters(); k.Items != 4 || k.Updates != 3 || k.Stale != 1 || k.Reports != 3 {
		t.Fatalf("counters %+v", k)
	}
	if a := testing.AllocsPerRun(100, func() { c.Process(0, export(13*ms, telemetry.LabelItem{SwitchID: 3, EgressPort: 2, EgressTS: 700})) }); a > 1 {
		// export itself allocates the Report
		t.Fatalf("%v allocs per report", a)
	}
}

// Coverage: ports updated per window over ports active (known, updated within
// active_windows).
func TestCoverageWindows(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ActiveWindows = 2
	c := New(cfg, Deps{})
	it := func(sw uint8) telemetry.LabelItem {
		return telemetry.LabelItem{SwitchID: sw, EgressPort: 1, EgressTS: 1}
	}
	// window 0: ports 1, 2; window 1: port 1 (twice); window 2: none; window 3: port 2.
	c.Process(0, export(10*ms, it(1), it(2)))
	c.Process(0, export(150*ms, it(1)))
	c.Process(0, export(160*ms, it(1)))
	c.Process(0, export(350*ms, it(2)))
	rep := c.Coverage(450*ms, 10)
	want := []Window{{0, 0, 2, 2, 1}, {1, 100 * ms, 1, 2, 0.5}, {2, 200 * ms, 0, 2, 0}, {3, 300 * ms, 1, 2, 0.5}}
	if len(rep.Windows) != len(want) {
		t.Fatalf("%+v", rep)
	}
	for i := range want {
		if rep.Windows[i] != want[i] {
			t.Fatalf("window %d: %+v, want %+v", i, rep.Windows[i], want[i])
		}
	}
	// port 1 idle since window 1: at window 4 it is out (1 + 2 < 4)
	if rep := c.Coverage(550*ms, 1); rep.Windows[0].Active != 1 {
		t.Fatalf("%+v", rep)
	}
}

// Algorithm 3: S rises by one every k·T while the port is not updated, up to max_shift, and
// falls by one every k·T once it is.
func TestProRaisesAndLowersShift(t *testing.T) {
	cfg := DefaultConfig() // T = 50 ms, k = 2: k·T = 100 ms
	cfg.MaxShift = 3
	cfg.ActiveWindows = 60
	s := &shifts{}
	c := New(cfg, Deps{Setter: s})
	item := telemetry.LabelItem{SwitchID: 4, EgressPort: 3}
	update := func(now int64) {
		item.EgressTS = uint64(now)
		c.Process(0, export(now, item))
	}
	shift := func() uint8 { return c.Ports(0, 4)[0].Shift }
	update(0)
	var trace []uint8
	for now := int64(0); now <= 2000*ms; now += 10 * ms {
		if now >= 1000*ms {
			update(now) // updates resume
		}
		c.Tick(now)
		if now%(100*ms) == 0 {
			trace = append(trace, shift())
		}
	}
	// Not updated from 0: the first raise comes when now − LRT > 100 ms and age > 100 ms
	// (at 110 ms), then every 110 ms (strictly greater), capped at 3 (LRT still moves at the
	// cap: 990 ms); from 1 s down by one at 1100, 1210, 1320 ms
	// per k·T.
	want := []uint8{0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0}
	if len(trace) != len(want) {
		t.Fatalf("trace %v", trace)
	}
	for i := range want {
		if trace[i] != want[i] {
			t.Fatalf("S at %d ms: %d; trace %v, want %v", i*100, trace[i], trace, want)
		}
	}
	// Every change was sent, in order, to the setter.
	var sent []uint8
	for _, u := range s.log {
		if u.SwitchID != 4 || u.Port != 3 {
			t.Fatalf("update for %+v", u)
		}
		sent = append(sent, u.Shift)
	}
	if len(sent) != 6 || sent[2] != 3 || sent[5] != 0 {
		t.Fatalf("sent %v", sent)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Clock = "wall"
	if err := c.Validate(); err == nil || err.Error() != `clock: "wall": must be one of receive, label` {
		t.Fatal(err)
	}
	c = DefaultConfig()
	c.Control = "127.0.0.1:8050"
	if err := c.Validate(); err == nil {
		t.Fatal("control without scheme accepted")
	}
}

// Algorithm 3 reads RT, which only a newer item moves (Algorithm 4): stale items keep
// arriving but the port's age still grows, so S rises as if they were not there.
func TestStaleItemsDoNotRefreshAge(t *testing.T) {
	cfg := DefaultConfig() // k·T = 100 ms
	cfg.ActiveWindows = 60
	s := &shifts{}
	c := New(cfg, Deps{Setter: s})
	c.Process(0, export(0, telemetry.LabelItem{SwitchID: 2, EgressPort: 1, EgressTS: 1000}))
	for now := int64(10 * ms); now <= 300*ms; now += 10 * ms {
		c.Process(0, export(now, telemetry.LabelItem{SwitchID: 2, EgressPort: 1, EgressTS: 999}))
		c.Tick(now)
	}
	ps := c.Ports(300*ms, 2)
	// raises at 110 ms and 220 ms (now − LRT > 100 ms and age > 100 ms)
	if len(ps) != 1 || ps[0].Shift != 2 || ps[0].Stale != 30 || ps[0].AgeMs != 300 || ps[0].LastReceived != 300*ms {
		t.Fatalf("ports %+v", ps)
	}
	if len(s.log) != 2 || s.log[0] != (Shift{2, 1, 1}) || s.log[1] != (Shift{2, 1, 2}) {
		t.Fatalf("sent %+v", s.log)
	}
}
