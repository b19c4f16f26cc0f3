package fabric

import (
	"testing"
	"time"

	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// collect is a sink that keeps copies of everything.
type collect struct {
	labels  []telemetry.Report
	reports []telemetry.Report
	times   []int64
}

func (c *collect) Label(now int64, r *telemetry.Report) {
	c.labels = append(c.labels, *r)
	c.times = append(c.times, now)
}
func (c *collect) Report(now int64, r *telemetry.Report) { c.reports = append(c.reports, *r) }

// recorder traces every egress decision.
type recorder struct {
	evs []traceEv
}

type traceEv struct {
	sw, port      uint8
	ct, lt        int64
	n             int
	spec, labeled bool
	item          telemetry.LabelItem
}

func (r *recorder) Egress(sw, port uint8, ct, lt int64, n int, spec, labeled bool, it *telemetry.LabelItem) {
	ev := traceEv{sw: sw, port: port, ct: ct, lt: lt, n: n, spec: spec, labeled: labeled}
	if it != nil {
		ev.item = *it
	}
	r.evs = append(r.evs, ev)
}

func testbed(t testing.TB, algo Algo, mod func(*Config)) *Fabric {
	cfg := Config{
		Topology: Testbed(DefaultLink),
		Traffic:  Traffic{Senders: []int{0, 7}, Rate: 5e6, PacketSize: 1000},
		Label:    LabelConfig{Algo: algo, T: 50 * time.Millisecond},
		Seed:     1,
	}
	if mod != nil {
		mod(&cfg)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The proposition of INT-label §4.1: Base A labels every port carrying traffic within
// T + T_s, T_s the largest gap between packets on the port. Crafted traffic: constant-rate
// senders, fixed routing, no jitter.
func TestBaseACoversWithinTPlusTs(t *testing.T) {
	lp := DefaultLink
	lp.DelayStd = 0
	f := testbed(t, AlgoA, func(c *Config) {
		c.Topology = Testbed(lp)
		c.Routing = "fixed"
		c.Traffic = Traffic{Rate: 2e6, PacketSize: 1000, Pattern: "permutation"}
		c.Label.T = 20 * time.Millisecond
	})
	rec := &recorder{}
	f.SetTracer(rec)
	f.RunVirtual(int64(3 * time.Second))
	type key struct{ sw, port uint8 }
	lastPkt := map[key]int64{}
	lastLabel := map[key]int64{}
	maxGap := map[key]int64{}   // T_s per port
	maxLabel := map[key]int64{} // longest time between labels
	for _, ev := range rec.evs {
		k := key{ev.sw, ev.port}
		if l, ok := lastPkt[k]; ok {
			maxGap[k] = max(maxGap[k], ev.ct-l)
		}
		lastPkt[k] = ev.ct
		if ev.labeled {
			if l, ok := lastLabel[k]; ok {
				maxLabel[k] = max(maxLabel[k], ev.ct-l)
			}
			lastLabel[k] = ev.ct
		}
	}
	if len(lastPkt) < 10 {
		t.Fatalf("only %d ports carried traffic", len(lastPkt))
	}
	T := int64(20 * time.Millisecond)
	for k, ts := range maxGap {
		if _, ok := lastLabel[k]; !ok {
			t.Errorf("port %v carried traffic and was never labeled", k)
			continue
		}
		if maxLabel[k] > T+ts {
			t.Errorf("port %v: %v between labels > T + T_s = %v", k, time.Duration(maxLabel[k]), time.Duration(T+ts))
		}
		// and the end of the run is covered too
		if lastPkt[k]-lastLabel[k] > T+ts {
			t.Errorf("port %v: last label %v before its last packet", k, time.Duration(lastPkt[k]-lastLabel[k]))
		}
	}
}

// Base B with F1 is deterministic: label when CT − LT > T; else when CT − LT ≥ T1 and the
// packet carries an item; else not.
func TestBaseBF1FollowsTheRule(t *testing.T) {
	for _, t1 := range []time.Duration{0, 25 * time.Millisecond} {
		f := testbed(t, AlgoB, func(c *Config) { c.Label.T1 = t1; c.Label.F = label.F1; c.Seed = 7 })
		rec := &recorder{}
		f.SetTracer(rec)
		f.RunVirtual(int64(4 * time.Second))
		T := int64(50 * time.Millisecond)
		prev := map[[2]uint8]int64{}
		nLab, nProb := 0, 0
		for i, ev := range rec.evs {
			k := [2]uint8{ev.sw, ev.port}
			lt, ok := prev[k]
			if !ok {
				lt = -1 << 62
			}
			since := ev.ct - lt
			want := since > T || since >= int64(t1) && ev.n > 0
			if ev.labeled != want {
				t.Fatalf("T1=%v event %d %+v: labeled %v, rule says %v (CT-LT=%v)", t1, i, ev, ev.labeled, want, time.Duration(since))
			}
			if ev.labeled {
				prev[k] = ev.ct
				nLab++
				if since <= T {
					nProb++
				}
			}
		}
		if nLab == 0 || nProb == 0 {
			t.Fatalf("T1=%v: %d labels, %d probabilistic: the run does not exercise the rule", t1, nLab, nProb)
		}
	}
}

// Every export decodes with intake's own decoder to exactly the items the switches wrote,
// newest first.
func TestExportsDecodeToWrittenItems(t *testing.T) {
	f := testbed(t, AlgoB, func(c *Config) {
		c.Label.F = label.F2
		c.Specific = []SpecificFlow{{Src: 0, Dst: 5, Every: 3}}
	})
	rec := &recorder{}
	col := &collect{}
	f.SetTracer(rec)
	f.SetSink(col)
	f.RunVirtual(int64(2 * time.Second))
	rt := newRoundTrip(t)
	written := map[telemetry.LabelItem]int{}
	for _, ev := range rec.evs {
		if ev.labeled {
			written[ev.item]++
		}
	}
	nspec := 0
	for i := range col.labels {
		got := rt.do(t, wire.InputLabel, &col.labels[i], "export", i)
		for k, it := range got.LabelList() {
			if written[it] == 0 {
				t.Fatalf("export %d item %d %+v was never written by a switch", i, k, it)
			}
			written[it]--
			if k > 0 && it.EgressTS > got.Labels[k-1].EgressTS {
				t.Fatalf("export %d: items not newest first", i)
			}
		}
		if got.LabelSpecific {
			nspec++
		}
	}
	if len(col.labels) == 0 || nspec == 0 {
		t.Fatalf("%d exports, %d specific", len(col.labels), nspec)
	}
	st := f.Stats()
	if st.Exports != uint64(len(col.labels)) || st.LostItems != 0 && st.Lost == 0 && st.Drops == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// roundTrip encodes what the fabric sent with intake's encoder and decodes the datagram
// with intake's decoder, as the collector would.
type roundTrip struct {
	enc *wire.Encoder
	dec *wire.Decoder
	rd  wire.Reader
	got telemetry.Report
}

func newRoundTrip(t *testing.T) *roundTrip {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &roundTrip{enc: enc, dec: dec}
}

// do returns r as decoded from its datagram, failing unless it decodes to r itself.
func (rt *roundTrip) do(t *testing.T, in wire.Input, r *telemetry.Report, what string, i int) *telemetry.Report {
	t.Helper()
	pkt, err := rt.enc.Append(nil, r)
	if err != nil {
		t.Fatalf("%s %d: encode: %v", what, i, err)
	}
	rt.rd.Reset(rt.dec, in, pkt)
	if err := rt.rd.Next(&rt.got); err != nil {
		t.Fatalf("%s %d: decode: %v", what, i, err)
	}
	if !rt.got.Equal(r) {
		t.Fatalf("%s %d decodes to %+v, want %+v", what, i, rt.got, *r)
	}
	return &rt.got
}

func BenchmarkVirtualFatTree(b *testing.B) {
	topo, _ := FatTree(4, LinkParams{Bandwidth: 10e9, DelayMean: 2 * time.Microsecond, DelayStd: 500, Queue: 1000})
	f, err := New(Config{Topology: topo, Traffic: Traffic{Rate: 1e9, PacketSize: 1000}, Label: LabelConfig{Algo: AlgoB, T: time.Millisecond}, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	f.SetSink(&discard{})
	f.RunVirtual(int64(10 * time.Millisecond)) // warm the pools
	b.ReportAllocs()
	b.ResetTimer()
	h0 := f.Stats().PacketHops
	t0 := f.Now()
	for i := 0; i < b.N; i++ {
		t0 += int64(100 * time.Microsecond)
		f.RunVirtual(t0)
	}
	b.StopTimer()
	hops := f.Stats().PacketHops - h0
	b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "hops/s")
}

type discard struct{}

func (discard) Label(int64, *telemetry.Report)  {}
func (discard) Report(int64, *telemetry.Report) {}

// BenchmarkEventHeapBaseline is the floor under BenchmarkVirtualFatTree: the same event
// heap with as many events in flight, one push, one pop and one PCG draw per event and no
// switch logic. The fabric's packet-hops/s over these events/s says what the emulation
// costs beyond its event queue.
func BenchmarkEventHeapBaseline(b *testing.B) {
	f := &Fabric{}
	f.rng = testbed(b, AlgoA, nil).rng
	for i := range 4096 {
		f.push(event{t: int64(i) * 1000})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := f.pop()
		e.t += 1000 + int64(f.rng.IntN(4096000))
		f.push(e)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
