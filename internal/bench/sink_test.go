package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/gen"
)

// TestSinkResult: bench sink's figures per packet from its phases (machine CPU, above the
// floor, the collector's, the XDP program's and that above the floor's) and the JSON keys
// (docs/sink.md lists them). 1000 packets in a second: the floor 3000 ns of machine CPU a
// packet, the ring and pipeline phases 150 and 900 above it; their collectors 0, 50 and 700
// ns a packet; the programs 40, 160 and 170 ns.
func TestSinkResult(t *testing.T) {
	p := func(machine, collector, bpf time.Duration, stripped uint64) sinkPhase {
		r := sinkPhase{Phase: Phase{Sent: gen.Stats{Datagrams: 1000, Reports: 1000, Elapsed: time.Second}, Received: 1000,
			SystemCPU: machine, SystemAll: 2 * machine, CPU: collector, BPFTime: bpf, Attach: "native"}, stripped: stripped, delivered: 1000}
		if stripped > 0 {
			r.outcomes = map[string]uint64{"stripped": stripped, "ring_full": 0}
		}
		r.finish()
		return r
	}
	pipe := p(3900*time.Microsecond, 700*time.Microsecond, 170*time.Microsecond, 1000)
	pipe.Reports = 1000
	var res SinkResult
	res.set([]sinkPhase{p(3*time.Millisecond, 0, 40*time.Microsecond, 0), p(3150*time.Microsecond, 50*time.Microsecond, 160*time.Microsecond, 1000), pipe})
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(j, &got); err != nil {
		t.Fatal(err)
	}
	if got["floor_attach"] != "native" || got["sink_attach"] != "native" {
		t.Errorf("attach %v, %v", got["floor_attach"], got["sink_attach"])
	}
	for phase, want := range map[string]map[string]float64{
		"floor":    {"machine_cpu_ns_per_packet": 3000, "machine_above_floor_ns_per_packet": 0, "collector_cpu_ns_per_packet": 0, "bpf_ns_per_packet": 40, "bpf_above_floor_ns_per_packet": 0, "stripped": 0, "reports": 0},
		"ring":     {"machine_cpu_ns_per_packet": 3150, "machine_above_floor_ns_per_packet": 150, "collector_cpu_ns_per_packet": 50, "bpf_ns_per_packet": 160, "bpf_above_floor_ns_per_packet": 120, "stripped": 1000, "reports": 0},
		"pipeline": {"machine_cpu_ns_per_packet": 3900, "machine_above_floor_ns_per_packet": 900, "collector_cpu_ns_per_packet": 700, "bpf_ns_per_packet": 170, "bpf_above_floor_ns_per_packet": 130, "stripped": 1000, "reports": 1000},
	} {
		m, _ := got[phase].(map[string]any)
		for k, v := range map[string]float64{"packets_per_s": 1000, "packets_sent": 1000, "packets": 1000, "delivered": 1000, "machine_busy": 0.5} {
			want[k] = v
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s.%s: %v, want %v", phase, k, m[k], v)
			}
		}
		if _, has := m["outcomes"]; has != (phase != "floor") {
			t.Errorf("%s: outcomes %v", phase, m["outcomes"])
		}
	}

	// Without the pipeline phase, no pipeline key.
	res = SinkResult{}
	res.set([]sinkPhase{p(3*time.Millisecond, 0, 0, 0), p(3*time.Millisecond, 0, 0, 1000)})
	got = nil
	if j, _ := json.Marshal(res); json.Unmarshal(j, &got) != nil || got["pipeline"] != nil {
		t.Errorf("no pipeline phase: %s", j)
	}
}
