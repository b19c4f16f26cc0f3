package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/bench"
	"github.com/intake-int/intake/internal/gen"
)

// TestBenchIngestCPUShareText: the text gives the collector's CPU share, the CPUs it needed and
// the machine's busy share, and says the collector was short of CPU when it lost datagrams
// with well under what it needed on a busy machine, and that it was too slow when what it
// needed is more than a CPU per socket, each only then.
func TestBenchIngestCPUShareText(t *testing.T) {
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
		r := bench.IngestResult{Format: "tr2.0", Sockets: c.sockets, Loss: c.loss, CollectorCPUShare: c.share,
			CollectorCPUsNeeded: c.need, SystemBusy: c.busy}
		var b strings.Builder
		writeIngestResult(&b, &r, false)
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
	r := bench.IngestResult{Sockets: 1, Loss: 0.28, CollectorCPUShare: 0.39, CollectorCPUsNeeded: 0.6, SystemBusy: 0.98}
	var b strings.Builder
	writeIngestResult(&b, &r, false)
	slow := bench.IngestResult{Sockets: 1, Loss: 0.8, CollectorCPUShare: 0.88, CollectorCPUsNeeded: 5.37, SystemBusy: 0.91}
	var sb strings.Builder
	writeIngestResult(&sb, &slow, false)
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

// TestBenchKernelText: --mode kernel's table, byte for byte, of the figures bench's
// TestKernelComparison computes from its phases; a kernel phase in which nothing ended in
// XDP says so.
func TestBenchKernelText(t *testing.T) {
	kc := bench.KernelComparison{Format: "tr2.0", DurationS: 1, Rounds: 3, ReportsPerDatagram: 1, Processors: []string{"detect", "flowcache"},
		ProcessorsOff: []string{"dta", "label"}, XDPAttach: "native", FloorAttach: "native",
		Floor:             bench.ModeCost{ReportsPerS: 1000, MachineCPU: 500, BPF: 20},
		Socket:            bench.ModeCost{ReportsPerS: 1000, MachineCPU: 4500, AboveFloor: 4000, CollectorCPU: 4000},
		XDP:               bench.ModeCost{ReportsPerS: 1000, MachineCPU: 3500, AboveFloor: 3000, CollectorCPU: 2400, BPF: 66},
		Kernel:            bench.ModeCost{ReportsPerS: 1000, MachineCPU: 700, AboveFloor: 200, CollectorCPU: 100, BPF: 120, KernelReports: 990},
		CollectorCPURatio: 40, AboveFloorSocketRatio: 20, AboveFloorXDPRatio: 15}
	var b strings.Builder
	writeKernelComparison(&b, &kc)
	want := `bench ingest: tr2.0 across a veth pair, 1 reports/datagram, 1s per phase, 3 rounds (medians by machine CPU per report)
  processors in every mode: detect, flowcache; turned off in every mode (they need every report in user space): dta, label
  floor: an XDP program that counts and drops every frame (native), no collector; kernel: xdp mode with detect.kernel and flowcache.kernel (native)
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
	kc.Kernel.KernelReports = 0
	b.Reset()
	writeKernelComparison(&b, &kc)
	if note := "  note: the kernel phase detected no report in the XDP program (outcome kernel 0): detect.kernel was not in effect, and its figures are xdp mode's\n"; !strings.HasSuffix(b.String(), note) {
		t.Errorf("no note %q in\n%s", note, b.String())
	}
}

// TestBenchIngestText: `bench ingest`'s text and `--mode xdp`'s, byte for byte: both phases, the
// ratio, the CPU share, the too-slow note (two sockets) and the baseline line.
func TestBenchIngestText(t *testing.T) {
	ph := func(reports uint64, cpu time.Duration, kernel uint64) bench.Phase {
		return bench.Phase{Sent: gen.Stats{Datagrams: 1000, Reports: 2000, Elapsed: time.Second}, Received: 1000 - kernel, Reports: reports,
			Errors: 1, Kernel: kernel, Backlog: 2, CPU: cpu, ReportsPS: float64(reports), Loss: float64(kernel) / 1000}
	}
	r := bench.IngestResult{Format: "tr2.0", ReportsPerDatagram: 2, DurationS: 1.5, Sockets: 2, Processors: []string{"detect", "flowcache"},
		Drain: ph(2000, 100*time.Microsecond, 0), Full: ph(1000, 900*time.Microsecond, 500), Ratio: 0.5, DrainCPUNsPerDatagram: 100,
		SystemCPUNsPerReport: 1234.56, CollectorCPUShare: 1.9, CollectorCPUsNeeded: 3.8, SystemBusy: 0.5, Loss: 0.5,
		BaselineCPUNsPerDatagram: 80, DrainVsBaseline: 1.25}
	r.Base.Received, r.Base.Sent.Datagrams = 990, 1000
	var b strings.Builder
	writeIngestResult(&b, &r, true)
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
	mc := bench.ModeComparison{Socket: r, XDP: r, XDPAttach: "native", DrainCPURatio: 1.5, CollectorCPURatio: 2.25, RateRatio: 1.75,
		BPFNsPerFrame: 35.25, KernelDTAReports: 7}
	mc.XDP.Sockets, mc.XDP.Processors = 1, nil
	b.Reset()
	writeModeComparison(&b, &mc)
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
