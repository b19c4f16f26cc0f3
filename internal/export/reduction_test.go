package export_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// TestReductionSynthetic is INTCollector §V-B2's accounting on a synthetic run, read off the
// counters /metrics serves. 100 flows over the same 5 switches send 20 reports a second for
// 60 s (120,000 reports); each report carries k = 17 values (path, flow latency, 5 hop
// latencies, 5 queue occupancies, 5 tx utilizations), so M_all = 2,040,000. Hop latencies
// jitter by at most ±20 around 500 on switches 1 and 2 in opposite directions (flow latency
// stays 2500) and queue occupancies by at most ±10 around 100: below T = 50, no events. At
// 30 s switch 3's hop latency and queue occupancy jump by 200.
//
// Events: K = 710 keys are new (100 × 7 flow keys, 5 queue and 5 port keys); at the jump
// each flow raises a change of its flow latency and of its hop latency at switch 3 (200),
// and switch 3's queue one change (1): E = 911. Periodic pushes every P = 10 s, at 10, 20,
// ..., 60 s: 6 × 710 = 4260. Reduction factor M_all / (E + 6K) = 2,040,000 / 5171 = 394.5
// (the paper's formula: R·k / (E/T + K/P) = 2000 × 17 / (15.18 + 71)).
func TestReductionSynthetic(t *testing.T) {
	bus := &event.Bus{}
	reg := metrics.NewRegistry()
	d := detect.New(detect.DefaultConfig(), detect.Deps{Bus: bus, Metrics: reg}) // T(m) = 50, expire 1 min
	cfg := config.DefaultExport()
	cfg.Period = 0 // pushed below, at the run's own times
	cfg.Prometheus.Gauges = false
	// A value is exported when a sink stored it: a sink that keeps every value it is
	// offered stands in for a database that takes every measurement.
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: reg, Values: func() uint64 { return d.Stats().Values }, Ring: 1 << 16,
		Sinks: []export.EventSink{&keepAll{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const flows, rate, secs = 100, 20, 60
	var r telemetry.Report
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for tick := 0; tick < secs*rate; tick++ {
		now := t0 + int64(tick)*int64(time.Second)/rate
		jump := uint32(0)
		if tick >= secs*rate/2 {
			jump = 200
		}
		for f := 0; f < flows; f++ {
			j := uint32((f*7+tick*13)%41) - 20 // −20..20, wrapping as uint32
			r = telemetry.Report{Has: telemetry.HasFlow, RecvTime: now}
			r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, 0, byte(f)}), netip.MustParseAddr("10.0.1.1"))
			r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(1000+f), 80, 6
			lat := [5]uint32{500 + j, 500 - j, 500 + jump, 500, 500}
			for i := 4; i >= 0; i-- { // newest (sink side) first
				h := r.AddHop()
				h.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy |
					telemetry.FEgressPort | telemetry.FTxUtil
				h.NodeID, h.HopLatency, h.TxUtil, h.EgressPort = uint32(i+1), lat[i], 10, 1
				h.QueueOccupancy = 100 + uint32(int32(j)/2)
				if i == 2 {
					h.QueueOccupancy += jump
				}
			}
			d.Process(0, &r)
		}
		d.Flush(0)
		if (tick+1)%(10*rate) == 0 {
			p.PushNow(now + int64(time.Second)/rate)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ev, _ := p.Exported(); ev >= 911 || time.Now().After(deadline) {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Stop(ctx)

	var b bytes.Buffer
	reg.WriteText(&b)
	got := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		for _, name := range []string{"intake_detect_values_total ", `intake_export_values_total{source="event"} `,
			`intake_export_values_total{source="periodic"} `, "intake_export_reduction_factor "} {
			if v, ok := strings.CutPrefix(line, name); ok {
				got[name] = v
			}
		}
	}
	want := map[string]string{
		"intake_detect_values_total ":                    fmt.Sprint(2040000.0),
		`intake_export_values_total{source="event"} `:    "911",
		`intake_export_values_total{source="periodic"} `: "4260",
		"intake_export_reduction_factor ":                fmt.Sprint(2040000.0 / 5171),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("/metrics: %s%s, want %s", k, got[k], v)
		}
	}
	st := p.Status()
	t.Logf("M_all %d, exported %d events + %d periodic: reduction factor %.1f", *st.Values, st.ExportedEvents, st.ExportedPeriodic, *st.ReductionFactor)
}

// paperNet is INTCollector §V-B2's network: a k = 4 fat tree (20 switches of 4 ports: edges
// 1-8, aggregations 9-16, cores 17-20), 16 hosts, 5000 flows on 5-hop paths between pods,
// every INT field on, so a report carries k = 22 metric values (path, flow latency, and per
// hop latency, queue occupancy, queue congestion, tx utilization). Queue id = egress port.
// Its metric keys: 5000 paths + 5000 flow latencies + 25,000 (flow, switch) hop latencies +
// 80 queue occupancies + 80 queue congestions + 80 tx utilizations = K = 35,240. (The paper
// counts 100,000 hop-latency keys, K = 110,240: 20 per flow, where a 5-hop path has 5.)
const (
	paperFlows = 5000
	paperK     = 5000 + 5000 + paperFlows*5 + 3*80
	paperVals  = 22
)

// paperHops returns flow f's path, source first: (switch, egress port) per hop.
func paperHops(f int) (hops [5][2]uint32) {
	src, dst := f%16, (f/16)%16
	if src/4 == dst/4 { // same pod: take the next pod's host, keeping 5 hops
		dst = (dst + 4) % 16
	}
	ps, pd := src/4, dst/4
	a, c := (f/256)%2, (f/512)%2 // which aggregation, which of its cores
	es, ed := 1+src/2, 1+dst/2
	hops[0] = [2]uint32{uint32(es), uint32(3 + a)}            // edge: ports 1-2 hosts, 3-4 up
	hops[1] = [2]uint32{uint32(9 + 2*ps + a), uint32(3 + c)}  // aggregation: 1-2 down, 3-4 up
	hops[2] = [2]uint32{uint32(17 + 2*a + c), uint32(1 + pd)} // core: port to each pod
	hops[3] = [2]uint32{uint32(9 + 2*pd + a), uint32(1 + (ed-1)%2)}
	hops[4] = [2]uint32{uint32(ed), uint32(1 + dst%2)}
	return hops
}

// TestReductionPaperSetup measures INTCollector §V-B2's reduction factor end to end with the
// paper's setup: R = 1 M reports/s (5000 flows, 200 reports/s each, in the reports' own
// time), P = 10 s, E = 1000 events/s, through the detector and the export pipeline into a
// real InfluxDB (Debian's influxd). One round of every flow at t = 0 creates the keys (their
// new_key events and the values are left out, as the paper's steady-state formula does);
// the window is the next 10 s (2000 rounds, 10 M reports) and the push at its end. Each
// second 500 flows move 200 of latency from their first hop to their second (the flow's
// latency stays): 2 change events per flow, 1000 a second; queue and port values are
// constant. Measured: M_all = 10 M × 22 values, M_event = 10,000 events + one push of K =
// 35,240 keys; factor 2.2·10⁸ / 45,240 = 4862.9, the paper's formula R·k / (E + K/P) at
// this K (22·10⁶ / 4524). With the paper's K = 110,240 the same formula gives its 1829.7.
func TestReductionPaperSetup(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("10 M reports: seconds, but many minutes under the race detector")
	}
	s := startInflux(t)
	d, bus, reg := meteredDetector()
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = s.url, "reduction"
	// A push of K = 35,240 values at once overflows the default queue of 20,000 (the sink
	// drops the excess, and the values exported are only those stored: TestExportedIsStored):
	// the paper's K needs a queue above it.
	cfg.Queue = 1 << 17
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: reg, Values: func() uint64 { return d.Stats().Values }, Ring: 1 << 17})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var paths [paperFlows][5][2]uint32
	for f := range paths {
		paths[f] = paperHops(f)
	}
	const rounds, step = 2000, 5 * time.Millisecond // 200 rounds a second
	start := time.Now()
	var r telemetry.Report
	round := func(j int) {
		now := base + int64(j)*int64(step)
		for f := 0; f < paperFlows; f++ {
			// Flow f's latencies move at round 2000 − 200·(f mod 10): group g at second
			// 10 − g of the window, every group once.
			shift := uint32(((j + 200*(f%10)) / rounds) % 2 * 200)
			r = telemetry.Report{Has: telemetry.HasFlow, RecvTime: now}
			r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, byte(f >> 8), byte(f)}), netip.MustParseAddr("10.1.0.1"))
			r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(1024+f), 80, 17
			for i := 4; i >= 0; i-- { // newest (sink side) first
				h := r.AddHop()
				h.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy |
					telemetry.FQueueCongestion | telemetry.FEgressPort | telemetry.FTxUtil
				sw, port := paths[f][i][0], paths[f][i][1]
				h.NodeID, h.EgressPort, h.QueueID = sw, port, uint16(port)
				h.HopLatency, h.QueueOccupancy, h.QueueCongestion, h.TxUtil = 500, 100+sw, 5, 1000+10*sw+port
				switch i {
				case 0:
					h.HopLatency += shift
				case 1:
					h.HopLatency += 200 - shift
				}
			}
			d.Process(0, &r)
		}
		d.Flush(0)
	}
	// drain waits for want events through the pipeline and then in InfluxDB: a value is
	// exported once the server accepted it, and on a loaded machine 70,000 points of the
	// warm-up take InfluxDB longer than the pipeline.
	drain := func(want uint64) {
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d events offered", want), func() bool { ev, _ := p.Offered(); return ev >= want })
		testutil.Eventually(t, 3*time.Minute, fmt.Sprintf("%d events stored", want), func() bool { ev, _ := p.Exported(); return ev >= want })
	}
	round(0)
	drain(paperK)
	v0 := d.Stats().Values
	ev0, per0 := p.Exported()
	if v0 != paperFlows*paperVals || ev0 != paperK || per0 != 0 {
		t.Fatalf("warm-up: M_all %d, events %d, periodic %d; want %d, %d, 0", v0, ev0, per0, paperFlows*paperVals, paperK)
	}
	for j := 1; j <= rounds; j++ {
		round(j)
	}
	drain(ev0 + 10000)
	end := base + int64(rounds)*int64(step) + int64(time.Millisecond)
	p.PushNow(end)
	elapsed := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	v1 := d.Stats().Values
	ev1, per1 := p.Exported()
	mAll, mEvent := v1-v0, (ev1-ev0)+(per1-per0)
	factor := float64(mAll) / float64(mEvent)
	t.Logf("window: M_all %d, events %d, periodic %d: reduction factor %.1f (%v for %d reports)", mAll, ev1-ev0, per1-per0, factor, elapsed, (rounds+1)*paperFlows)
	if mAll != rounds*paperFlows*paperVals || ev1-ev0 != 10000 || per1-per0 != paperK {
		t.Errorf("window: M_all %d, events %d, periodic %d; want %d, 10000, %d", mAll, ev1-ev0, per1-per0, rounds*paperFlows*paperVals, paperK)
	}
	const R, k, E, P = 1e6, paperVals, 1000.0, 10.0
	if want := R * k / (E + paperK/P); math.Abs(factor-want) > 0.01 || math.Abs(factor-4862.95) > 0.01 {
		t.Errorf("reduction factor %.2f, formula at K = %d %.2f, want 4862.9", factor, paperK, want)
	}
	if paper := R * k / (E + 110240/P); math.Abs(paper-1829.7) > 0.05 {
		t.Errorf("the paper's formula at its K = 110240: %.2f, want 1829.7", paper)
	}
	if st := p.Status(); st.RingOverflow != 0 {
		t.Fatalf("ring overflow %d", st.RingOverflow)
	}
	// What InfluxDB stored in the window: every value exported, no more.
	in := p.Sinks()[0].(*influx.Sink)
	if in.Dropped() != 0 {
		t.Fatalf("influx sink dropped %d", in.Dropped())
	}
	var out string
	for _, m := range []string{"flow_path", "flow_latency", "flow_hop_latency", "queue_occupancy", "queue_congestion", "tx_utilization"} {
		out += influxQuery(t, s, "reduction", fmt.Sprintf(`SELECT count(value) FROM %s WHERE time > %d`, m, base))
	}
	stored := 0
	for _, line := range strings.Split(out, "\n") {
		var ts, n int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "[%d %d]", &ts, &n); err == nil {
			stored += n
		}
	}
	t.Logf("InfluxDB, values stored in the window by measurement:\n%s", out)
	if uint64(stored) != mEvent {
		t.Errorf("InfluxDB holds %d values in the window, the pipeline counted %d", stored, mEvent)
	}
}

// meteredDetector is a detector of 4 shards with its counters (M_all) on a registry, which
// the pipeline's counters then join.
func meteredDetector() (*detect.Detector, *event.Bus, *metrics.Registry) {
	bus, reg := &event.Bus{}, metrics.NewRegistry()
	dc := detect.DefaultConfig()
	dc.Shards = 4
	return detect.New(dc, detect.Deps{Bus: bus, Metrics: reg}), bus, reg
}

// keepAll is a sink that stores every value it is offered, in memory.
type keepAll struct{ events, periodic atomic.Uint64 }

func (k *keepAll) SinkStatus() export.SinkStatus {
	return export.SinkStatus{Name: "memory", Sent: k.events.Load() + k.periodic.Load(), Dropped: map[string]uint64{}}
}
func (k *keepAll) Offer(e *event.Event) {
	switch e.Kind {
	case event.KindPeriodic:
		k.periodic.Add(1)
	case event.KindExpire:
	default:
		k.events.Add(1)
	}
}
func (k *keepAll) ValueCounts() export.ValueCounts {
	return export.ValueCounts{Events: k.events.Load(), Periodic: k.periodic.Load(), Dropped: map[string]uint64{}}
}

// flowReport is a report of flow f (10.0.x.y:1024+f > 10.1.0.1:80 udp) at time t over
// switches 1 and 2, source first, each hop with a latency and the occupancy of its queue 3.
func flowReport(f int, t int64) *telemetry.Report {
	r := &telemetry.Report{Has: telemetry.HasFlow, RecvTime: t}
	r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, byte(f >> 8), byte(f)}), netip.MustParseAddr("10.1.0.1"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(1024+f), 80, 17
	for _, sw := range []uint32{2, 1} { // newest (sink side) first
		h := r.AddHop()
		h.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy
		h.NodeID, h.HopLatency, h.QueueID, h.QueueOccupancy = sw, 100*sw, 3, 10*sw
	}
	return r
}

// TestExportedIsStored: values exported are values stored. Two sinks, InfluxDB and remote
// write into VictoriaMetrics, each with a queue of 100, get the new_key events of K keys
// and then a periodic push of all K: far more than their queues hold. Each sink's exported
// values, by source, are what its server holds (read back from it), the rest are dropped
// values with their reason; the pipeline's values exported are, by source, the most that
// one sink stored, and the reduction factor is M_all over them. (Before, the pipeline
// counted every value it offered as exported, the dropped ones included.)
func TestExportedIsStored(t *testing.T) {
	influx, vm := startInflux(t), startVM(t)
	d, bus, reg := meteredDetector()
	cfg := exportConfig()
	cfg.Queue = 100
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = influx.url, "stored"
	cfg.Prometheus.RemoteWrite = vm.url + "/api/v1/write"
	p, err := newPipeline(cfg, nil, export.Deps{Bus: bus, Source: d, Metrics: reg, Values: func() uint64 { return d.Stats().Values }, Ring: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// K = 1000 flows × 4 keys (path, flow latency, 2 hop latencies) + 2 queue keys; the
	// path is not a value remote write can carry: 3002 of them are VictoriaMetrics'.
	const flows, K, numeric = 1000, 1000*4 + 2, 1000*3 + 2
	for f := range flows {
		d.Process(0, flowReport(f, base))
	}
	d.Flush(0)
	testutil.Eventually(t, 10*time.Second, "the new_key events offered", func() bool { ev, _ := p.Offered(); return ev == K })
	push := base + 10*int64(time.Second)
	p.PushNow(push)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	st := p.Status()
	// M_all: 6 values a report (path, flow latency, 2 hop latencies, 2 queue occupancies).
	if st.OfferedEvents != K || st.OfferedPeriodic != K || *st.Values != flows*6 {
		t.Fatalf("offered %d events, %d periodic, M_all %d; want %d, %d, %d", st.OfferedEvents, st.OfferedPeriodic, *st.Values, K, K, flows*6)
	}

	// What each server holds: value points before the push are events', at it periodic.
	var inEv, inPer uint64
	for _, m := range []string{"flow_path", "flow_latency", "flow_hop_latency", "queue_occupancy"} {
		for _, q := range []struct {
			where string
			n     *uint64
		}{{fmt.Sprintf("time < %d", push), &inEv}, {fmt.Sprintf("time >= %d", push), &inPer}} {
			for _, line := range strings.Split(influxQuery(t, influx, "stored", fmt.Sprintf("SELECT count(value) FROM %s WHERE %s", m, q.where)), "\n") {
				var ts, n uint64
				if _, err := fmt.Sscanf(strings.TrimSpace(line), "[%d %d]", &ts, &n); err == nil {
					*q.n += n
				}
			}
		}
	}
	var vmEv, vmPer uint64
	testutil.Eventually(t, 20*time.Second, "VictoriaMetrics to show what it took", func() bool {
		vmEv, vmPer = 0, 0
		for _, sample := range strings.Fields(vmExport(t, vm, `{__name__=~"intake_.*"}`)) {
			_, at, _ := strings.Cut(sample, "@")
			if ms, _ := strconv.ParseInt(at, 10, 64); ms < push/1e6 {
				vmEv++
			} else {
				vmPer++
			}
		}
		rw := sinkStatus(t, st, "remote_write")
		return vmEv == *rw.ExportedEvents && vmPer == *rw.ExportedPeriodic
	})
	stored := map[string][2]uint64{"influxdb": {inEv, inPer}, "remote_write": {vmEv, vmPer}}
	takes := map[string]uint64{"influxdb": K, "remote_write": numeric}
	var most [2]uint64
	for name, want := range stored {
		s := sinkStatus(t, st, name)
		got := [2]uint64{*s.ExportedEvents, *s.ExportedPeriodic}
		t.Logf("%s: stored %d events + %d periodic, dropped %v; its server holds %v", name, got[0], got[1], s.DroppedValues, want)
		if got != want {
			t.Errorf("%s: exported %v values (events, periodic), its server holds %v", name, got, want)
		}
		if want[1] >= takes[name] || s.DroppedValues["queue_full"] == 0 {
			t.Errorf("%s: the push was not larger than the queue: %v stored, dropped %v", name, want, s.DroppedValues)
		}
		if d := s.DroppedValues; got[0]+got[1]+d["queue_full"]+d["rejected"]+d["shutdown"] != 2*takes[name] {
			t.Errorf("%s: stored %v + dropped %v != offered %d", name, got, d, 2*takes[name])
		}
		if want := float64(*st.Values) / float64(got[0]+got[1]); *s.ReductionFactor != want {
			t.Errorf("%s: reduction factor %v, want %v", name, *s.ReductionFactor, want)
		}
		most = [2]uint64{max(most[0], got[0]), max(most[1], got[1])}
	}
	if st.ExportedEvents != most[0] || st.ExportedPeriodic != most[1] {
		t.Errorf("pipeline: exported %d events, %d periodic; want the most one sink stored, %v", st.ExportedEvents, st.ExportedPeriodic, most)
	}
	if want := float64(*st.Values) / float64(most[0]+most[1]); st.ReductionFactor == nil || *st.ReductionFactor != want {
		t.Errorf("reduction factor %v, want %v", p.ReductionFactor(), want)
	}
	var b bytes.Buffer
	reg.WriteText(&b)
	for _, line := range []string{
		fmt.Sprintf(`intake_export_values_total{source="event"} %d`, most[0]),
		fmt.Sprintf(`intake_export_values_total{source="periodic"} %d`, most[1]),
		fmt.Sprintf(`intake_export_offered_values_total{source="periodic"} %d`, K),
		fmt.Sprintf(`intake_export_sink_values_total{sink="influxdb",source="periodic"} %d`, inPer),
		fmt.Sprintf(`intake_export_sink_values_total{sink="remote_write",source="periodic"} %d`, vmPer),
		fmt.Sprintf(`intake_export_sink_dropped_values_total{reason="queue_full",sink="influxdb"} %d`, sinkStatus(t, st, "influxdb").DroppedValues["queue_full"]),
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

func sinkStatus(t *testing.T, st export.Status, name string) export.SinkStatus {
	t.Helper()
	for _, s := range st.Sinks {
		if s.Name == name {
			if s.ExportedEvents == nil || s.ExportedPeriodic == nil {
				t.Fatalf("sink %s counts no values: %+v", name, s)
			}
			return s
		}
	}
	t.Fatalf("no sink %s in %+v", name, st.Sinks)
	return export.SinkStatus{}
}
