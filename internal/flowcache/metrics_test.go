package flowcache

import (
	"bytes"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/metrics"
)

// The per-switch histograms are real Prometheus histograms on /metrics: cumulative buckets
// in base units (hop latency in seconds), _count exact, _sum from the bins' midpoints.
func TestHistogramMetrics(t *testing.T) {
	c := small(16, 4)
	c.Histograms = HistConfig{Scale: "linear", Bins: 3, MaxSwitches: 8,
		Width: Widths{HopLatency: 1000, QueueOccupancy: 10, TxUtil: 10, Latency: 1000}}
	reg := metrics.NewRegistry()
	f := New(c, Deps{Metrics: reg})
	// Switch 7: hop latencies 500, 1500, 1600 and 9000 ns (bins [0,1000), [1000,2000), ≥2000).
	for i, hl := range []uint32{500, 1500, 1600, 9000} {
		f.Process(0, report(flow(uint16(i)), int64(i+1), hop{7, hl, 5, 15}))
	}
	f.Flush(0)
	var b bytes.Buffer
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE intake_flowcache_hop_latency_seconds histogram\n",
		`intake_flowcache_hop_latency_seconds_bucket{switch="7",le="1e-06"} 1` + "\n",
		`intake_flowcache_hop_latency_seconds_bucket{switch="7",le="2e-06"} 3` + "\n",
		`intake_flowcache_hop_latency_seconds_bucket{switch="7",le="+Inf"} 4` + "\n",
		// 0.5 µs + 2 × 1.5 µs + 2 µs (the open bin at its lower bound) = 5.5 µs
		`intake_flowcache_hop_latency_seconds_sum{switch="7"} 5.5e-06` + "\n",
		`intake_flowcache_hop_latency_seconds_count{switch="7"} 4` + "\n",
		`intake_flowcache_queue_occupancy_bucket{switch="7",le="10"} 4` + "\n",
		`intake_flowcache_tx_utilization_bucket{switch="7",le="20"} 4` + "\n",
		`intake_flowcache_e2e_latency_seconds_count 4` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

// Each switch's Prometheus histogram holds its own samples only: two switches, one sample
// each (the scrape once added every switch's counts to the next one's).
func TestHistogramMetricsPerSwitch(t *testing.T) {
	c := small(16, 4)
	c.Histograms = HistConfig{Scale: "linear", Bins: 3, MaxSwitches: 8,
		Width: Widths{HopLatency: 1000, QueueOccupancy: 10, TxUtil: 10, Latency: 1000}}
	reg := metrics.NewRegistry()
	f := New(c, Deps{Metrics: reg})
	f.Process(0, report(flow(1), 1, hop{7, 500, 5, 15}))
	f.Process(0, report(flow(2), 2, hop{8, 1500, 5, 15}))
	f.Flush(0)
	var b bytes.Buffer
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`intake_flowcache_hop_latency_seconds_bucket{switch="7",le="1e-06"} 1` + "\n",
		`intake_flowcache_hop_latency_seconds_count{switch="7"} 1` + "\n",
		`intake_flowcache_hop_latency_seconds_bucket{switch="8",le="1e-06"} 0` + "\n",
		`intake_flowcache_hop_latency_seconds_bucket{switch="8",le="2e-06"} 1` + "\n",
		`intake_flowcache_hop_latency_seconds_count{switch="8"} 1` + "\n",
		`intake_flowcache_queue_occupancy_count{switch="8"} 1` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}
