package bench

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/gen"
)

// kernelPhases are the phases of a --mode kernel run of 1000 single-report datagrams in a
// second, none lost: the floor 500 ns of machine CPU a report; socket, xdp and kernel mode
// 4000, 3000 and 200 above it; their collectors 4000, 2400 and 100 ns a report; the XDP
// programs 20 (floor), 66 (xdp) and 120 ns (kernel, 990 of the reports ended in XDP).
func kernelPhases() (floor, sock, x, k Phase) {
	p := func(machine, collector, bpf time.Duration, kernel uint64) Phase {
		r := Phase{Sent: gen.Stats{Datagrams: 1000, Reports: 1000, Elapsed: time.Second}, Received: 1000, Reports: 1000,
			KernelDetect: kernel, SystemCPU: machine, SystemAll: 4 * machine, CPU: collector, BPFTime: bpf, Attach: "native"}
		r.setRates()
		return r
	}
	return p(500*time.Microsecond, 0, 20*time.Microsecond, 0), p(4500*time.Microsecond, 4*time.Millisecond, 0, 0),
		p(3500*time.Microsecond, 2400*time.Microsecond, 66*time.Microsecond, 0),
		p(700*time.Microsecond, 100*time.Microsecond, 120*time.Microsecond, 990)
}

// TestKernelComparison: --mode kernel's figures per report from its phases (machine CPU,
// above the floor, the collector's, the XDP program's), the ratios and the JSON keys
// (cmd/intake's TestBenchKernelText prints these figures).
func TestKernelComparison(t *testing.T) {
	kc := KernelComparison{Format: "tr2.0", DurationS: 1, Rounds: 3, Processors: []string{"detect", "flowcache"},
		ProcessorsOff: []string{"dta", "label"}}
	kc.set(kernelPhases())
	j, err := json.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(j, &got); err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]any{
		"format": "tr2.0", "duration_s": 1.0, "rounds": 3.0, "reports_per_datagram": 1.0, "xdp_attach": "native", "floor_attach": "native",
		"collector_cpu_socket_over_kernel": 40.0, "machine_above_floor_socket_over_kernel": 20.0, "machine_above_floor_xdp_over_kernel": 15.0,
	} {
		if got[key] != v {
			t.Errorf("%s: %v, want %v", key, got[key], v)
		}
	}
	if fmt.Sprint(got["processors"], got["processors_off"]) != "[detect flowcache] [dta label]" {
		t.Errorf("processors %v, processors_off %v", got["processors"], got["processors_off"])
	}
	for mode, want := range map[string]map[string]float64{
		"floor":  {"machine_cpu_ns_per_report": 500, "machine_above_floor_ns_per_report": 0, "collector_cpu_ns_per_report": 0, "bpf_ns_per_report": 20, "kernel_reports": 0},
		"socket": {"machine_cpu_ns_per_report": 4500, "machine_above_floor_ns_per_report": 4000, "collector_cpu_ns_per_report": 4000, "bpf_ns_per_report": 0, "kernel_reports": 0},
		"xdp":    {"machine_cpu_ns_per_report": 3500, "machine_above_floor_ns_per_report": 3000, "collector_cpu_ns_per_report": 2400, "bpf_ns_per_report": 66, "kernel_reports": 0},
		"kernel": {"machine_cpu_ns_per_report": 700, "machine_above_floor_ns_per_report": 200, "collector_cpu_ns_per_report": 100, "bpf_ns_per_report": 120, "kernel_reports": 990},
	} {
		m, _ := got[mode].(map[string]any)
		for _, k := range []string{"reports_per_s", "loss", "datagrams_sent", "reports", "machine_busy"} {
			want[k] = map[string]float64{"reports_per_s": 1000, "loss": 0, "datagrams_sent": 1000, "reports": 1000, "machine_busy": 0.25}[k]
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s.%s: %v, want %v", mode, k, m[k], v)
			}
		}
	}

	// xdp mode measured below the floor (noise) has no ratio.
	floor, sock, x, k := kernelPhases()
	k.KernelDetect = 0
	x.SystemCPU = 400 * time.Microsecond
	kc.set(floor, sock, x, k)
	if kc.XDP.AboveFloor != -100 || kc.AboveFloorXDPRatio != 0 || kc.AboveFloorSocketRatio != 20 {
		t.Errorf("xdp above the floor %g, ratios xdp / kernel %g, socket / kernel %g: want -100, 0, 20", kc.XDP.AboveFloor, kc.AboveFloorXDPRatio, kc.AboveFloorSocketRatio)
	}
}
