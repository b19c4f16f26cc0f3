package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/gen"
)

// TestWriteTextCPUShare: the text gives the collector's CPU share, the CPUs it needed and
// the machine's busy share, and says the collector was short of CPU when it lost datagrams
// with well under what it needed on a busy machine, and that it was too slow when what it
// needed is more than a CPU per socket, each only then.
func TestWriteTextCPUShare(t *testing.T) {
	for _, c := range []struct {
		name                    string
		sockets                 int
		loss, share, need, busy float64
		starved, slow           bool
	}{
		{"starved", 1, 0.28, 0.39, 0.60, 0.98, true, false},
		{"no loss", 1, 0, 0.39, 0.60, 0.98, false, false},
		{"what it needed", 1, 0.28, 0.58, 0.60, 0.98, false, false},
		{"an idle machine", 1, 0.28, 0.39, 0.60, 0.5, false, false},
		{"too slow for one socket", 1, 0.28, 0.88, 4.2, 0.98, false, true},
		{"two sockets, short of CPU", 2, 0.28, 0.95, 1.9, 0.98, true, false},
		{"too slow for two sockets", 2, 0.28, 1.95, 4.2, 0.98, false, true},
	} {
		r := IngestResult{Format: "tr2.0", Sockets: c.sockets, Loss: c.loss, CollectorCPUShare: c.share,
			CollectorCPUsNeeded: c.need, SystemBusy: c.busy}
		var b strings.Builder
		r.WriteText(&b, false)
		out := b.String()
		if !strings.Contains(out, "  CPU share  collector ") || !strings.Contains(out, " needed to take all that was sent; the machine ") {
			t.Errorf("%s: no CPU share line in\n%s", c.name, out)
		}
		note := "note: the collector lost 28.0% with "
		if got := strings.Contains(out, note); got != c.starved || r.Starved() != c.starved {
			t.Errorf("%s: starved note %v, Starved() %v, want %v:\n%s", c.name, got, r.Starved(), c.starved, out)
		}
		slow := "note: the collector lost 28.0%: taking all that was sent would need 4.20 CPUs"
		if got := strings.Contains(out, slow); got != c.slow || r.TooSlow() != c.slow {
			t.Errorf("%s: too-slow note %v, TooSlow() %v, want %v:\n%s", c.name, got, r.TooSlow(), c.slow, out)
		}
	}
	r := IngestResult{Sockets: 1, Loss: 0.28, CollectorCPUShare: 0.39, CollectorCPUsNeeded: 0.6, SystemBusy: 0.98}
	var b strings.Builder
	r.WriteText(&b, false)
	slow := IngestResult{Sockets: 1, Loss: 0.8, CollectorCPUShare: 0.88, CollectorCPUsNeeded: 5.37, SystemBusy: 0.91}
	var sb strings.Builder
	slow.WriteText(&sb, false)
	if want := "  note: the collector lost 80.0%: taking all that was sent would need 5.37 CPUs at its CPU per report, more than its 1 socket's worker can use (one CPU each)\n"; !strings.Contains(sb.String(), want) {
		t.Errorf("no %q in\n%s", want, sb.String())
	}
	for _, want := range []string{"  CPU share  collector 0.39 of a CPU, 0.60 needed to take all that was sent; the machine 98% busy (collector phase)\n",
		"  note: the collector lost 28.0% with 0.39 of the 0.60 CPUs it needed on a machine 98% busy: it was short of CPU"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

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
// above the floor, the collector's, the XDP program's), the ratios, the table and the JSON
// keys; a kernel phase in which nothing ended in XDP says so.
func TestKernelComparison(t *testing.T) {
	kc := KernelComparison{Format: "tr2.0", DurationS: 1, Rounds: 3, Processors: []string{"detect"},
		ProcessorsOff: []string{"flowcache", "dta", "label"}}
	kc.set(kernelPhases())
	var b strings.Builder
	kc.WriteText(&b)
	want := `bench ingest: tr2.0 across a veth pair, 1 reports/datagram, 1s per phase, 3 rounds (medians by machine CPU per report)
  processors in every mode: detect; turned off in every mode (they need every report in user space): flowcache, dta, label
  floor: an XDP program that counts and drops every frame (native), no collector; kernel: xdp mode with detect.kernel (native)
                                  machine CPU  above floor    collector        BPF    reports
  mode        reports/s     loss    ns/report    ns/report    ns/report  ns/report     in XDP
  floor            1000   0.0000        500.0          0.0          0.0       20.0          0
  socket           1000   0.0000       4500.0       4000.0       4000.0        0.0          0
  xdp              1000   0.0000       3500.0       3000.0       2400.0       66.0          0
  kernel           1000   0.0000        700.0        200.0        100.0      120.0        990
  collector CPU per report socket / kernel 40.00x; machine CPU per report above the floor: socket / kernel 20.00x, xdp / kernel 15.00x
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
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
	if fmt.Sprint(got["processors"], got["processors_off"]) != "[detect] [flowcache dta label]" {
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

	// Nothing ended in the kernel: detect.kernel was not in effect. xdp mode measured below
	// the floor (noise) has no ratio.
	floor, sock, x, k := kernelPhases()
	k.KernelDetect = 0
	x.SystemCPU = 400 * time.Microsecond
	kc.set(floor, sock, x, k)
	if kc.XDP.AboveFloor != -100 || kc.AboveFloorXDPRatio != 0 || kc.AboveFloorSocketRatio != 20 {
		t.Errorf("xdp above the floor %g, ratios xdp / kernel %g, socket / kernel %g: want -100, 0, 20", kc.XDP.AboveFloor, kc.AboveFloorXDPRatio, kc.AboveFloorSocketRatio)
	}
	b.Reset()
	kc.WriteText(&b)
	if note := "  note: the kernel phase detected no report in the XDP program (outcome kernel 0): detect.kernel was not in effect, and its figures are xdp mode's\n"; !strings.HasSuffix(b.String(), note) {
		t.Errorf("no note %q in\n%s", note, b.String())
	}
}

// TestIngestText: `bench ingest`'s text and `--mode xdp`'s, byte for byte: both phases, the
// ratio, the CPU share, the too-slow note (two sockets) and the baseline line.
func TestIngestText(t *testing.T) {
	ph := func(reports uint64, cpu time.Duration, kernel uint64) Phase {
		p := Phase{Sent: gen.Stats{Datagrams: 1000, Reports: 2000, Elapsed: time.Second}, Received: 1000 - kernel, Reports: reports,
			Errors: 1, Kernel: kernel, Backlog: 2, CPU: cpu}
		p.setRates()
		return p
	}
	r := IngestResult{Format: "tr2.0", ReportsPerDatagram: 2, DurationS: 1.5, Sockets: 2, Processors: []string{"detect", "flowcache"},
		Drain: ph(2000, 100*time.Microsecond, 0), Full: ph(1000, 900*time.Microsecond, 500), Ratio: 0.5, DrainCPUNsPerDatagram: 100,
		SystemCPUNsPerReport: 1234.56, CollectorCPUShare: 1.9, CollectorCPUsNeeded: 3.8, SystemBusy: 0.5, Loss: 0.5,
		BaselineCPUNsPerDatagram: 80, DrainVsBaseline: 1.25}
	r.Base.Received, r.Base.Sent.Datagrams = 990, 1000
	var b strings.Builder
	r.WriteText(&b, true)
	want := `bench ingest: tr2.0, 2 reports/datagram, 1.5s per phase, 2 collector sockets, processors: detect, flowcache
  drain              2000 reports/s      50.0 CPU ns/report  loss 0.0000  (1000 of 1000 datagrams; drops: 0 socket, 2 host backlog; 1 decode errors)
  collector          1000 reports/s     900.0 CPU ns/report  loss 0.5000  (500 of 1000 datagrams; drops: 500 socket, 2 host backlog; 1 decode errors)
  ratio      0.500 (collector / drain); CPU per datagram: drain 100.0 ns; whole machine per report (collector phase): 1234.6 ns
  CPU share  collector 1.90 of a CPU, 3.80 needed to take all that was sent; the machine 50% busy (collector phase)
  note: the collector lost 50.0%: taking all that was sent would need 3.80 CPUs at its CPU per report, more than its 2 sockets' workers can use (one CPU each)
  baseline   80.0 CPU ns/datagram (990 of 1000 datagrams); drain / baseline 1.250
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	mc := ModeComparison{Socket: r, XDP: r, XDPAttach: "native", DrainCPURatio: 1.5, CollectorCPURatio: 2.25, RateRatio: 1.75,
		BPFNsPerFrame: 35.25, KernelDTAReports: 7}
	mc.XDP.Sockets, mc.XDP.Processors = 1, nil
	b.Reset()
	mc.WriteText(&b)
	want = `bench ingest: tr2.0 across a veth pair, 2 reports/datagram, 1.5s per phase, processors: none
  socket mode, 2 workers:
    drain              2000 reports/s      50.0 CPU ns/report  loss 0.0000  (1000 of 1000 datagrams; drops: 0 socket, 2 host backlog; 1 decode errors)
    collector          1000 reports/s     900.0 CPU ns/report  loss 0.5000  (500 of 1000 datagrams; drops: 500 socket, 2 host backlog; 1 decode errors)
    ratio      0.500 (collector / drain); drain CPU 100.0 ns/datagram
  xdp (native) mode, 1 workers:
    drain              2000 reports/s      50.0 CPU ns/report  loss 0.0000  (1000 of 1000 datagrams; drops: 0 socket, 2 host backlog; 1 decode errors)
    collector          1000 reports/s     900.0 CPU ns/report  loss 0.5000  (500 of 1000 datagrams; drops: 500 socket, 2 host backlog; 1 decode errors)
    ratio      0.500 (collector / drain); drain CPU 100.0 ns/datagram
  socket / xdp CPU: drain 1.50x per datagram, collector 2.25x per report; collector reports/s xdp / socket 1.75
  XDP program: 35.2 ns per frame (collector phase); DTA reports written in the kernel: 7
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
