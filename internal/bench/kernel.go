package bench

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/xdp"
)

// ModeKernel is bench ingest's --mode kernel: IngestKernel.
const ModeKernel = "kernel"

// KernelComparison is `bench ingest --mode kernel` (docs/xdp.md, "Measuring the modes"):
// the same load, in the same run, sent to a floor (an XDP program that counts and drops
// every frame, no collector), to the collector with its first listener in socket mode, in
// xdp mode, and in xdp mode with detection and the flow cache in the kernel (detect.kernel,
// flowcache.kernel). Every mode runs the same processors, detection and the flow cache (the
// flow cache off in the configuration: detection alone); the others need every report in
// user space.
type KernelComparison struct {
	Format             string  `json:"format"`
	DurationS          float64 `json:"duration_s"`
	Rounds             int     `json:"rounds"`
	ReportsPerDatagram float64 `json:"reports_per_datagram"`
	// Processors are the processors of every mode, and ProcessorsOff those the
	// configuration turned on that the measurement turned off in every mode.
	Processors    []string `json:"processors"`
	ProcessorsOff []string `json:"processors_off"`
	// XDPAttach and FloorAttach are how the kernel phase's program and the floor were
	// attached (native, generic).
	XDPAttach   string   `json:"xdp_attach"`
	FloorAttach string   `json:"floor_attach"`
	Floor       ModeCost `json:"floor"`
	Socket      ModeCost `json:"socket"`
	XDP         ModeCost `json:"xdp"`
	Kernel      ModeCost `json:"kernel"`
	// CollectorCPURatio is the collector's CPU per report, socket over kernel mode; the
	// AboveFloor ratios the machine's CPU per report above the floor, socket and xdp mode
	// over kernel mode.
	CollectorCPURatio     float64 `json:"collector_cpu_socket_over_kernel"`
	AboveFloorSocketRatio float64 `json:"machine_above_floor_socket_over_kernel"`
	AboveFloorXDPRatio    float64 `json:"machine_above_floor_xdp_over_kernel"`
}

// ModeCost is one mode's figures (the median round's, by machine CPU per report). Per
// report means per report received: by the collector (decoded in user space or detected in
// the kernel), or counted by the floor.
type ModeCost struct {
	ReportsPerS   float64 `json:"reports_per_s"`
	Loss          float64 `json:"loss"`
	DatagramsSent uint64  `json:"datagrams_sent"`
	Reports       uint64  `json:"reports"`
	// KernelReports is the reports the XDP program detected and ended itself (kernel mode:
	// outcome kernel), which never reach user space.
	KernelReports uint64 `json:"kernel_reports"`
	// MachineCPU is the whole machine's CPU per report (/proc/stat: sender, kernel,
	// collector); AboveFloor that less the floor's; CollectorCPU the collector process's
	// own (0 for the floor); BPF the XDP program's run time per report (kernel BPF
	// statistics; 0 in socket mode); MachineBusy the machine's busy share (0-1).
	MachineCPU   float64 `json:"machine_cpu_ns_per_report"`
	AboveFloor   float64 `json:"machine_above_floor_ns_per_report"`
	CollectorCPU float64 `json:"collector_cpu_ns_per_report"`
	BPF          float64 `json:"bpf_ns_per_report"`
	MachineBusy  float64 `json:"machine_busy"`
	// EventsPerS is the events the mode's detector raised (new keys apart) per second sent,
	// from its own counters (0 for the floor), and NewKeyEvents its new_key events.
	EventsPerS   float64 `json:"events_per_s"`
	NewKeyEvents uint64  `json:"new_key_events"`

	Phase Phase `json:"-"`
}

// IngestKernel runs the floor, socket, xdp and kernel phases, alternating in each round, on
// interface dev (cfg.Host must be one of its addresses). The collector's configuration is
// cfg's with the processors the kernel runs (KernelProcessors) in every mode; the kernel
// phase adds detect.kernel, and flowcache.kernel if the flow cache is on. BPF statistics are on during the phases with an XDP program. Progress is
// told phases as "floor", "socket:collector", "xdp:collector", "kernel:collector".
func IngestKernel(cfg IngestConfig, dev string) (KernelComparison, error) {
	kc := KernelComparison{Rounds: max(cfg.Rounds, 1)}
	base := cfg
	base.Baseline = ""
	base.Collector, kc.ProcessorsOff = KernelProcessors(cfg.Collector)
	base.Collector.Detect.Kernel, base.Collector.FlowCache.Kernel = false, false // the kernel phase's alone
	sock := base
	sock.CPUProfile = ""
	x, err := onXDP(base, dev)
	if err != nil {
		return kc, err
	}
	x.CPUProfile = ""
	k := x
	k.CPUProfile = cfg.CPUProfile // the kernel phase's profile
	k.Collector.Detect.Kernel = true
	k.Collector.FlowCache.Kernel = k.Collector.FlowCache.Enabled
	floorAddr := net.JoinHostPort(cmp.Or(cfg.Host, "127.0.0.1"), strconv.Itoa(x.Collector.Listeners[0].Port))
	modes := []struct {
		name string
		run  func() (Phase, []string, error)
	}{
		{"floor", func() (Phase, []string, error) { p, err := cfg.floor(dev, floorAddr); return p, nil, err }},
		{ingest.ModeSocket, func() (Phase, []string, error) { return sock.phase(false) }},
		{ingest.ModeXDP, func() (Phase, []string, error) { return x.phase(false) }},
		{ModeKernel, func() (Phase, []string, error) { return k.phase(false) }},
	}
	runs := make([][]Phase, len(modes))
	for round := 1; round <= kc.Rounds; round++ {
		for i, m := range modes {
			if cfg.Progress != nil {
				phase := "floor"
				if m.name != phase {
					phase = m.name + ":collector"
				}
				cfg.Progress(round, kc.Rounds, phase)
			}
			p, names, err := withRunStats(m.name != ingest.ModeSocket, m.run)
			if err != nil {
				return kc, fmt.Errorf("%s phase: %w", m.name, err)
			}
			runs[i] = append(runs[i], p)
			if names != nil {
				kc.Processors = names
			}
		}
	}
	if kc.Processors == nil {
		kc.Processors = []string{}
	}
	kc.set(median(runs[0], machinePerReport), median(runs[1], machinePerReport),
		median(runs[2], machinePerReport), median(runs[3], machinePerReport))
	return kc, nil
}

// set fills the figures of the modes from their phases.
func (kc *KernelComparison) set(floor, sock, x, k Phase) {
	kc.Floor, kc.Socket, kc.XDP, kc.Kernel = modeCost(floor, floor), modeCost(sock, floor), modeCost(x, floor), modeCost(k, floor)
	kc.FloorAttach, kc.XDPAttach = floor.Attach, k.Attach
	if k.Sent.Datagrams > 0 {
		kc.ReportsPerDatagram = float64(k.Sent.Reports) / float64(k.Sent.Datagrams)
	}
	kc.CollectorCPURatio = ratio(kc.Socket.CollectorCPU, kc.Kernel.CollectorCPU)
	kc.AboveFloorSocketRatio = ratio(kc.Socket.AboveFloor, kc.Kernel.AboveFloor)
	kc.AboveFloorXDPRatio = ratio(kc.XDP.AboveFloor, kc.Kernel.AboveFloor)
}

// KernelProcessors returns c with the processors that need every report in user space
// turned off (DTA, INT-label and the Kafka export, whose reports topic takes every report)
// and detection on, and the names of those it turned off. The flow cache stays as c has it
// (on by default): with detection, it is what the kernel phase runs in XDP, issue 27's
// steady-state target.
func KernelProcessors(c config.Config) (config.Config, []string) {
	off := []string{}
	for _, p := range []struct {
		name string
		on   *bool
	}{{"dta", &c.DTA.Enabled}, {"label", &c.Label.Enabled}} {
		if *p.on {
			off = append(off, p.name)
			*p.on = false
		}
	}
	c.DTA.Kernel = false
	if c.Export.Kafka.Enabled() {
		off = append(off, "kafka")
		c.Export.Kafka.Brokers = nil
	}
	c.Detect.Enabled = true
	return c, off
}

// floor attaches the floor program to dev, sends the load to addr and counts what it
// dropped. No collector runs: the phase's CPU is 0.
func (cfg *IngestConfig) floor(dev, addr string) (Phase, error) {
	f, err := xdp.AttachFloor(dev)
	if err != nil {
		return Phase{}, err
	}
	defer f.Close()
	sys0, all0 := systemCPU()
	t0, backlog0 := time.Now(), softnetDrops()
	sent, err := cfg.Send(addr)
	if err != nil {
		return Phase{}, err
	}
	settle(func() uint64 { n, _ := f.Count(); return n })
	sys1, all1 := systemCPU()
	n, err := f.Count()
	if err != nil {
		return Phase{}, err
	}
	runs, bt := f.RunStats()
	p := Phase{Sent: sent, Received: n, SystemCPU: sys1 - sys0, SystemAll: all1 - all0, Wall: time.Since(t0),
		Backlog: softnetDrops() - backlog0, Attach: f.Mode(), BPFRuns: runs, BPFTime: bt}
	p.reportsOfDatagrams()
	p.setRates()
	return p, nil
}

// withRunStats runs phase with the kernel's BPF run-time statistics on if on (they cost
// two clock reads per program run, so only the phases that have an XDP program pay them).
func withRunStats(on bool, phase func() (Phase, []string, error)) (Phase, []string, error) {
	if on {
		if c, err := xdp.EnableRunStats(); err == nil {
			defer c.Close()
		}
	}
	return phase()
}

func machinePerReport(p Phase) float64 { return perReport(p.SystemCPU, p) }

func perReport(d time.Duration, p Phase) float64 {
	if p.Reports == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(p.Reports)
}

// ratio is a / b, 0 unless both are positive (a mode at or below the floor has no ratio).
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// modeCost is p's figures, against floor's machine CPU per report.
func modeCost(p, floor Phase) ModeCost {
	m := ModeCost{ReportsPerS: p.ReportsPS, Loss: p.Loss, DatagramsSent: p.Sent.Datagrams, Reports: p.Reports,
		KernelReports: p.KernelDetect, MachineCPU: machinePerReport(p), CollectorCPU: p.CPUPerReport(),
		BPF: perReport(p.BPFTime, p), MachineBusy: ratio(p.SystemCPU.Seconds(), p.SystemAll.Seconds()),
		EventsPerS: p.EventsPerS(), NewKeyEvents: p.NewKeys, Phase: p}
	m.AboveFloor = m.MachineCPU - machinePerReport(floor)
	return m
}
