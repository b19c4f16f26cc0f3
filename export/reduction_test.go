package export_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/detect"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/metrics"
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
	cfg := export.DefaultConfig()
	cfg.Period = 0 // pushed below, at the run's own times
	cfg.Prometheus.Gauges = false
	p, err := export.New(cfg, export.Deps{Bus: bus, Source: d, Metrics: reg, Values: func() uint64 { return d.Stats().Values }, Ring: 1 << 16})
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
