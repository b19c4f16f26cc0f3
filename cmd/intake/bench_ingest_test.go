package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBenchIngest runs both phases below capacity: nothing is lost, every report decodes, so
// both rates are the generator's and the ratio is 1 within the pacing's jitter.
func TestBenchIngest(t *testing.T) {
	code, out, errs := runVerb("bench", "ingest", "--duration", "400ms", "--pps", "2500", "--collector-sockets", "1",
		"--format", "tr2.0", "--batch", "4", "--flows", "50", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Drain      float64  `json:"drain_reports_per_s"`
		Collector  float64  `json:"collector_reports_per_s"`
		CPU        float64  `json:"cpu_ns_per_report"`
		Loss       *float64 `json:"loss"`
		Ratio      float64  `json:"ratio"`
		PerDgram   float64  `json:"reports_per_datagram"`
		Sent       uint64   `json:"datagrams_sent"`
		Errors     uint64   `json:"decode_errors"`
		Processors []string `json:"processors"`
		Share      float64  `json:"collector_cpu_share"`
		Busy       float64  `json:"system_busy"`
		Need       float64  `json:"collector_cpus_needed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// 10000 reports/s take a small part of a CPU; the machine is busy at least that much.
	// It took all that was sent: what it needed is its CPU per report at the rate it took.
	if res.Share <= 0 || res.Share >= 1 || res.Busy <= 0 || res.Busy > 1 || res.Busy*float64(runtime.NumCPU()) < res.Share*0.9 ||
		math.Abs(res.Need-res.CPU*res.Collector/1e9) > 0.1*res.Need {
		t.Errorf("collector_cpu_share %.3f, collector_cpus_needed %.4f, system_busy %.3f (of %d CPUs)", res.Share, res.Need, res.Busy, runtime.NumCPU())
	}
	if res.Loss == nil || *res.Loss != 0 || res.Errors != 0 {
		t.Errorf("loss %v, decode errors %d at 2500 datagrams/s: want none", res.Loss, res.Errors)
	}
	if res.PerDgram != 4 {
		t.Errorf("reports_per_datagram %g, want 4", res.PerDgram)
	}
	// 2500 datagrams/s of 4 reports for 0.4 s: 1000 datagrams, 10000 reports/s.
	if res.Sent < 900 || res.Sent > 1100 {
		t.Errorf("datagrams_sent %d, want about 1000", res.Sent)
	}
	for name, v := range map[string]float64{"drain": res.Drain, "collector": res.Collector} {
		if math.Abs(v-10000) > 1500 {
			t.Errorf("%s_reports_per_s %.0f, want about 10000", name, v)
		}
	}
	if math.Abs(res.Ratio-1) > 0.1 || res.CPU <= 0 {
		t.Errorf("ratio %.3f, cpu_ns_per_report %.0f: want about 1 and positive", res.Ratio, res.CPU)
	}
	if !slices.Contains(res.Processors, "detect") {
		t.Errorf("processors %v: the default configuration's detector is missing", res.Processors)
	}
}

// TestBenchIngestBaselineGSO builds the C baseline receiver with gcc and runs the three
// phases with the GSO sender below capacity: the baseline receives every datagram, its CPU
// per datagram and the drain phase's are measured and compared, and the whole machine's CPU
// per report is measured; the collector receives the runs through GRO, and with --gro=false
// as single datagrams.
func TestBenchIngestBaselineGSO(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "recvmmsg")
	if out, err := exec.Command("gcc", "-O2", "-o", exe, "../../internal/bench/testdata/recvmmsg.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc (installed by .ci/run): %v\n%s", err, out)
	}
	code, out, errs := runVerb("bench", "ingest", "--duration", "400ms", "--pps", "2500", "--collector-sockets", "1",
		"--gso", "8", "--baseline", exe, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Loss      *float64 `json:"loss"`
		DrainDg   float64  `json:"drain_cpu_ns_per_datagram"`
		BaseDg    float64  `json:"baseline_cpu_ns_per_datagram"`
		Vs        float64  `json:"drain_vs_baseline"`
		SystemRep float64  `json:"system_cpu_ns_per_report"`
		Sent      uint64   `json:"datagrams_sent"`
		GRO       uint64   `json:"gro_datagrams"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.Loss == nil || *res.Loss != 0 || res.DrainDg <= 0 || res.BaseDg <= 0 || res.SystemRep <= 0 ||
		math.Abs(res.Vs-res.DrainDg/res.BaseDg) > 1e-9 {
		t.Errorf("result %s", out)
	}
	// GRO on (the default): the runs of 8 arrive as super-datagrams; paced at 2500/s a run
	// may leave the sender as fewer, so most, not all, count.
	if res.GRO < res.Sent/2 || res.GRO > res.Sent {
		t.Errorf("gro_datagrams %d of %d sent: want most of them with GRO on", res.GRO, res.Sent)
	}

	// --gro=false: the kernel cuts the runs back into datagrams before the socket.
	code, out, errs = runVerb("bench", "ingest", "--duration", "400ms", "--pps", "2500", "--collector-sockets", "1",
		"--gso", "8", "--gro=false", "--json")
	if code != 0 {
		t.Fatalf("--gro=false: exit %d: %s", code, errs)
	}
	res.GRO = 1
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.Loss == nil || *res.Loss != 0 || res.GRO != 0 || res.Sent < 900 {
		t.Errorf("--gro=false: loss %v, gro_datagrams %d of %d sent: want no loss and none", res.Loss, res.GRO, res.Sent)
	}
}

// TestBenchIngestKernel runs --mode kernel across a veth pair below capacity, a second a
// phase: the floor and the collector in socket, xdp and kernel mode each take every datagram
// sent; in the kernel phase every report (TR v2.0, 5 hops, one a datagram) is detected in
// the XDP program and ends there, in no other phase; the XDP programs' run times and every
// phase's machine CPU are measured, the floor has no collector CPU, and detection is the
// only processor. It needs the collector's detect.kernel.
func TestBenchIngestKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: --mode kernel needs root (a veth pair in a network namespace, XDP programs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipped: iproute2's ip is not installed (apt-get install iproute2)")
	}
	code, out, errs := runVerb("bench", "ingest", "--mode", "kernel", "--duration", "1s", "--pps", "5000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	type mode struct {
		ReportsPS  float64  `json:"reports_per_s"`
		Loss       *float64 `json:"loss"`
		Sent       uint64   `json:"datagrams_sent"`
		Reports    uint64   `json:"reports"`
		Kernel     uint64   `json:"kernel_reports"`
		Machine    float64  `json:"machine_cpu_ns_per_report"`
		AboveFloor *float64 `json:"machine_above_floor_ns_per_report"`
		Collector  float64  `json:"collector_cpu_ns_per_report"`
		BPF        float64  `json:"bpf_ns_per_report"`
	}
	var res struct {
		Format      string   `json:"format"`
		PerDgram    float64  `json:"reports_per_datagram"`
		Processors  []string `json:"processors"`
		Off         []string `json:"processors_off"`
		XDPAttach   string   `json:"xdp_attach"`
		FloorAttach string   `json:"floor_attach"`
		Floor       mode     `json:"floor"`
		Socket      mode     `json:"socket"`
		XDP         mode     `json:"xdp"`
		Kernel      mode     `json:"kernel"`
		CPURatio    float64  `json:"collector_cpu_socket_over_kernel"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if res.Format != "tr2.0" || res.PerDgram != 1 || !slices.Equal(res.Processors, []string{"detect", "flowcache"}) ||
		!slices.Equal(res.Off, []string{"dta", "label"}) || res.XDPAttach != "native" || res.FloorAttach != "native" {
		t.Errorf("format %q, %g reports/datagram, processors %v (off %v), attach %q, floor %q: want tr2.0, 1, [detect flowcache] ([dta label]), native, native",
			res.Format, res.PerDgram, res.Processors, res.Off, res.XDPAttach, res.FloorAttach)
	}
	for name, m := range map[string]mode{"floor": res.Floor, "socket": res.Socket, "xdp": res.XDP, "kernel": res.Kernel} {
		// 5000 datagrams/s for a second; the floor counts any frame the peer's kernel sends
		// too (an IPv6 router solicitation), so at least those sent.
		if m.Sent < 4500 || m.Sent > 5500 || m.Loss == nil || *m.Loss != 0 || m.Reports < m.Sent || (name != "floor" && m.Reports != m.Sent) {
			loss := "none measured"
			if m.Loss != nil {
				loss = strconv.FormatFloat(*m.Loss, 'g', -1, 64)
			}
			t.Errorf("%s: %d reports of %d datagrams sent, loss %s: want all", name, m.Reports, m.Sent, loss)
		}
		if m.Machine <= 0 || m.AboveFloor == nil || (name == "floor") != (m.Collector == 0) || (name == "socket") != (m.BPF == 0) {
			t.Errorf("%s: machine %.1f ns/report (above the floor %v), collector %.1f, BPF %.1f: want machine and collector (not the floor's) and BPF (not socket mode's) measured",
				name, m.Machine, m.AboveFloor, m.Collector, m.BPF)
		}
		if want := map[bool]uint64{true: m.Reports}[name == "kernel"]; m.Kernel != want {
			t.Errorf("%s: %d of %d reports ended in the XDP program, want %d", name, m.Kernel, m.Reports, want)
		}
	}
	if math.Abs(res.CPURatio-res.Socket.Collector/res.Kernel.Collector) > 1e-6*res.CPURatio {
		t.Errorf("collector_cpu_socket_over_kernel %g: socket %g over kernel %g", res.CPURatio, res.Socket.Collector, res.Kernel.Collector)
	}
}

func TestBenchIngestMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "0s"}, "--duration: 0s: must be positive"},
		{[]string{"--senders", "0"}, "--senders: 0: allowed is 1 to 256"},
		{[]string{"--gso", "65"}, "--gso: 65: allowed is 0 (off) to 64"},
		{[]string{"--format", "tr9"}, "format"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--mode", "kernel", "--baseline", "recvmmsg"}, "--baseline: not with --mode kernel (its floor is the baseline)"},
	} {
		code, _, errs := runVerb(append([]string{"bench", "ingest"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
