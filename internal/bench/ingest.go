// Package bench measures intake on the machine it runs on. Ingest (`intake bench ingest`)
// is the receive path against its ceiling: the same load, sent for the same time, first to
// a receiver that only drains and counts its sockets, then to the full collector serve
// runs, with every processor the configuration turns on. The sender is the caller's (the
// verb runs `intake gen` as a child process, so that this process's CPU time is the
// collector's alone). Across a veth pair, IngestModes compares the listener's socket and xdp
// modes, and IngestKernel those and detection in the kernel against an XDP drop floor. Sink
// (`intake bench sink`, sink.go) is the INT sink's cost against an XDP_PASS floor.
package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/xdp"
)

// IngestConfig is one ingest measurement.
type IngestConfig struct {
	// Collector is the configuration of both phases: its first listener receives; the drain
	// phase uses only the listeners.
	Collector config.Config
	// Send sends the load to addr (the first listener's) and returns what was sent; it
	// must return once the phase's load is sent.
	Send func(addr string) (gen.Stats, error)
	// Rounds of both phases, alternating; each phase's median round counts. Default 1.
	Rounds int
	// CPUProfile, if set, is a file the collector phase's CPU profile is written to (the
	// last round's).
	CPUProfile string
	// Progress, if set, is told when a phase starts.
	Progress func(round, rounds int, phase string)
	// Baseline, if set, is a receiver program run as a third phase with the same load: a
	// minimal recvmmsg loop (testdata/recvmmsg.c) whose CPU per datagram is what the drain
	// phase's is compared with. It is started as `Baseline 0 RCVBUF`, prints "port N", and
	// at SIGTERM (after the load) "datagrams N cpu_ns C".
	Baseline string
	// Host is the IPv4 address the baseline receiver binds (the collector's listeners bind
	// what Collector says); default 127.0.0.1.
	Host string
}

// Phase is one phase's outcome (the median round's).
type Phase struct {
	Sent      gen.Stats
	Received  uint64 // datagrams
	Reports   uint64 // decoded (drain: received × reports per datagram)
	Errors    uint64
	Kernel    uint64 // the collector's sockets' drops (receive buffer full)
	GRO       uint64 // datagrams that arrived in GRO super-datagrams (included in Received)
	Backlog   uint64 // the whole host's input backlog drops over the phase (softnet_stat)
	CPU       time.Duration
	SystemCPU time.Duration // the whole machine's: sender, collector, kernel (/proc/stat)
	SystemAll time.Duration // the whole machine's CPU time, busy or idle, over the same interval
	Wall      time.Duration // the interval CPU and SystemCPU were measured over
	ReportsPS float64
	Loss      float64
	Attach    string // an xdp listener's attach mode (native, generic)
	// KernelDTA is the DTA reports the XDP program wrote into the stores (dta.kernel), and
	// KernelDetect the reports it detected and ended there (detect.kernel, outcome kernel),
	// both included in Received and Reports; BPFRuns and BPFTime the program's runs and run
	// time (with BPF statistics on).
	KernelDTA    uint64
	KernelDetect uint64
	BPFRuns      uint64
	BPFTime      time.Duration
	// Events are the events the collector's detector raised over the phase (its own
	// counters, the kernel's included), new keys apart: every key's first value is one, and
	// each phase's collector starts empty. 0 without detection.
	Events, NewKeys uint64
}

// EventsPerS is the events raised (new keys apart) per second the sender sent; 0 without
// a send time.
func (p Phase) EventsPerS() float64 {
	if s := p.Sent.Elapsed.Seconds(); s > 0 {
		return float64(p.Events) / s
	}
	return 0
}

// CPUPerDatagram is CPU nanoseconds per received datagram; 0 without datagrams.
func (p Phase) CPUPerDatagram() float64 {
	if p.Received == 0 {
		return 0
	}
	return float64(p.CPU.Nanoseconds()) / float64(p.Received)
}

// CPUPerReport is CPU nanoseconds per decoded report; 0 without reports.
func (p Phase) CPUPerReport() float64 {
	if p.Reports == 0 {
		return 0
	}
	return float64(p.CPU.Nanoseconds()) / float64(p.Reports)
}

// IngestResult is a measurement: the JSON of `bench ingest --json` (the first five keys are
// the contract) and the two phases.
type IngestResult struct {
	DrainReportsPerS     float64  `json:"drain_reports_per_s"`
	CollectorReportsPerS float64  `json:"collector_reports_per_s"`
	CPUNsPerReport       float64  `json:"cpu_ns_per_report"`
	Loss                 float64  `json:"loss"`
	Ratio                float64  `json:"ratio"`
	DrainLoss            float64  `json:"drain_loss"`
	DrainCPUNsPerReport  float64  `json:"drain_cpu_ns_per_report"`
	DurationS            float64  `json:"duration_s"`
	Rounds               int      `json:"rounds"`
	Format               string   `json:"format"`
	ReportsPerDatagram   float64  `json:"reports_per_datagram"`
	DatagramsSent        uint64   `json:"datagrams_sent"`
	KernelDrops          uint64   `json:"kernel_drops"`
	GRODatagrams         uint64   `json:"gro_datagrams"`
	BacklogDrops         uint64   `json:"backlog_drops"`
	DecodeErrors         uint64   `json:"decode_errors"`
	Processors           []string `json:"processors"`
	Sockets              int      `json:"sockets"`
	// SystemCPUNsPerReport is the whole machine's CPU per report in the collector phase:
	// sender, collector and the kernel's receive work, which loopback charges partly to
	// the sender.
	SystemCPUNsPerReport float64 `json:"system_cpu_ns_per_report"`
	// DrainCPUNsPerDatagram is the drain phase's CPU per received datagram, and
	// BaselineCPUNsPerDatagram the baseline receiver's (with Baseline); DrainVsBaseline is
	// their ratio.
	DrainCPUNsPerDatagram    float64 `json:"drain_cpu_ns_per_datagram"`
	BaselineCPUNsPerDatagram float64 `json:"baseline_cpu_ns_per_datagram,omitempty"`
	DrainVsBaseline          float64 `json:"drain_vs_baseline,omitempty"`
	// CollectorCPUShare is the CPU the collector used in its phase, in CPUs (0.4: 40% of
	// one); CollectorCPUsNeeded the CPUs it would have needed to take all that was sent at
	// its CPU per report; SystemBusy the share of the whole machine that was busy then (0-1).
	// A collector that lost datagrams using well under what it needed, on a busy machine,
	// was short of CPU (the sender and the kernel's delivery took it), not too slow.
	CollectorCPUShare   float64 `json:"collector_cpu_share"`
	CollectorCPUsNeeded float64 `json:"collector_cpus_needed"`
	SystemBusy          float64 `json:"system_busy"`
	// EventsPerS is the events the collector phase's detector raised (new keys apart) per
	// second sent, and NewKeyEvents its new_key events (Phase.Events, Phase.NewKeys).
	EventsPerS   float64 `json:"events_per_s"`
	NewKeyEvents uint64  `json:"new_key_events"`

	Drain, Full, Base Phase `json:"-"`
}

// noteLoss is the loss above which Starved and TooSlow say why the collector lost datagrams
// (bench ingest's text gives a note then).
const noteLoss = 0.001

// Starved reports whether the collector lost datagrams that its sockets' workers could have
// taken (it needed no more than a CPU per socket), while it used less than 90% of what it
// needed on a machine at least 90% busy: it was short of CPU, not too slow.
func (r IngestResult) Starved() bool {
	return r.Loss > noteLoss && r.SystemBusy >= 0.9 && r.CollectorCPUsNeeded <= r.WorkerCPUs() &&
		r.CollectorCPUShare < 0.9*r.CollectorCPUsNeeded
}

// TooSlow reports whether the collector lost datagrams whose taking would have needed more
// CPUs than its sockets' workers can use.
func (r IngestResult) TooSlow() bool {
	return r.Loss > noteLoss && r.CollectorCPUsNeeded > r.WorkerCPUs()
}

// WorkerCPUs is the CPUs the collector's receive workers can use: one per socket.
func (r IngestResult) WorkerCPUs() float64 {
	if r.Sockets <= 0 {
		return float64(runtime.NumCPU()) // one socket per core
	}
	return float64(r.Sockets)
}

// Ingest runs the measurement. The caller fills Format and DurationS of the result, which
// it knows from the load it sends.
func Ingest(cfg IngestConfig) (IngestResult, error) {
	rounds := max(cfg.Rounds, 1)
	// Rounds alternate the phases, so that a machine whose load drifts weighs on both alike.
	var as, bs, cs []Phase
	var procs []string
	for round := 1; round <= rounds; round++ {
		if cfg.Baseline != "" {
			if cfg.Progress != nil {
				cfg.Progress(round, rounds, "baseline")
			}
			c, err := cfg.baseline()
			if err != nil {
				return IngestResult{}, fmt.Errorf("baseline phase: %w", err)
			}
			cs = append(cs, c)
		}
		if cfg.Progress != nil {
			cfg.Progress(round, rounds, "drain")
		}
		a, _, err := cfg.phase(true)
		if err != nil {
			return IngestResult{}, fmt.Errorf("drain phase: %w", err)
		}
		if cfg.Progress != nil {
			cfg.Progress(round, rounds, "collector")
		}
		b, names, err := cfg.phase(false)
		if err != nil {
			return IngestResult{}, fmt.Errorf("collector phase: %w", err)
		}
		as, bs, procs = append(as, a), append(bs, b), names
	}
	a, b := median(as, reportRate), median(bs, reportRate)
	res := IngestResult{DrainReportsPerS: a.ReportsPS, CollectorReportsPerS: b.ReportsPS, Loss: b.Loss,
		DrainLoss: a.Loss, Rounds: rounds, DatagramsSent: b.Sent.Datagrams, KernelDrops: b.Kernel, GRODatagrams: b.GRO,
		BacklogDrops: b.Backlog, DecodeErrors: b.Errors, Processors: procs, Sockets: cfg.Collector.Listeners[0].Sockets,
		CPUNsPerReport: b.CPUPerReport(), DrainCPUNsPerReport: a.CPUPerReport(), Drain: a, Full: b,
		DrainCPUNsPerDatagram: a.CPUPerDatagram(), EventsPerS: b.EventsPerS(), NewKeyEvents: b.NewKeys}
	if b.Reports > 0 {
		res.SystemCPUNsPerReport = float64(b.SystemCPU.Nanoseconds()) / float64(b.Reports)
	}
	if b.Wall > 0 {
		res.CollectorCPUShare = b.CPU.Seconds() / b.Wall.Seconds()
	}
	if s := b.Sent.Elapsed.Seconds(); s > 0 {
		res.CollectorCPUsNeeded = b.CPUPerReport() * float64(b.Sent.Reports) / s / 1e9
	}
	if b.SystemAll > 0 {
		res.SystemBusy = b.SystemCPU.Seconds() / b.SystemAll.Seconds()
	}
	if len(cs) > 0 {
		res.Base = median(cs, Phase.CPUPerDatagram)
		res.BaselineCPUNsPerDatagram = res.Base.CPUPerDatagram()
		if res.BaselineCPUNsPerDatagram > 0 {
			res.DrainVsBaseline = res.DrainCPUNsPerDatagram / res.BaselineCPUNsPerDatagram
		}
	}
	if procs == nil {
		res.Processors = []string{}
	}
	if b.Sent.Datagrams > 0 {
		res.ReportsPerDatagram = float64(b.Sent.Reports) / float64(b.Sent.Datagrams)
	}
	if a.ReportsPS > 0 {
		res.Ratio = b.ReportsPS / a.ReportsPS
	}
	return res, nil
}

// phase runs the receive path alone (drain) or what serve runs, sends the load, and reads
// the counters.
func (cfg *IngestConfig) phase(drain bool) (Phase, []string, error) {
	var recv *ingest.Receiver
	var start, stop func(context.Context) error
	var det *detect.Detector
	if drain {
		r, err := ingest.New(cfg.Collector.Ingest(), ingest.Deps{Logger: quiet})
		if err != nil {
			return Phase{}, nil, err
		}
		r.SetDrainOnly(true)
		recv, start, stop = r, r.Start, r.Stop
	} else {
		c, err := collector.New(cfg.Collector, collector.Options{NoHTTP: true, Logger: quiet})
		if err != nil {
			return Phase{}, nil, err
		}
		recv, start, stop, det = c.Receiver, c.Start, c.Stop, c.Detector
	}
	var names []string
	for _, p := range recv.Processors() {
		names = append(names, p.Name())
	}
	ctx := context.Background()
	if err := start(ctx); err != nil {
		return Phase{}, nil, err
	}
	defer stop(ctx)
	if cfg.CPUProfile != "" && !drain {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return Phase{}, nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return Phase{}, nil, err
		}
		defer pprof.StopCPUProfile()
	}
	sys0, all0 := systemCPU()
	cpu0, t0, backlog0 := processCPU(), time.Now(), softnetDrops()
	addr := recv.ListenerAddr(0)
	if l := cfg.Collector.Listeners[0]; l.Mode == ingest.ModeXDP {
		// An xdp listener binds no socket: the load goes to the host's address and the port
		// the program matches.
		addr = net.JoinHostPort(cmp.Or(cfg.Host, "127.0.0.1"), strconv.Itoa(l.Port))
	}
	sent, err := cfg.Send(addr)
	if err != nil {
		return Phase{}, nil, err
	}
	// As recv.Settle, over the reports the XDP program ends itself too.
	settle(func() uint64 { st := recv.Status(); return st.PacketsReceived + kernelEnded(st.Listeners[0].XDPFrames) })
	sys1, all1 := systemCPU()
	cpu, wall := processCPU()-cpu0, time.Since(t0)
	run := recv.Status().Listeners[0]      // the program's figures go with it at Stop
	events, newKeys := detectedEvents(det) // the kernel's counters go at Stop too
	// Stop reads the sockets' final drop counts (SO_MEMINFO): drops after the last datagram
	// read carry no SO_RXQ_OVFL message.
	if err := stop(ctx); err != nil {
		return Phase{}, nil, err
	}
	st := recv.Status()
	r := Phase{Sent: sent, Received: st.PacketsReceived, Reports: st.ReportsDecoded,
		Errors: st.DecodeErrors.Total, Kernel: st.KernelDrops, GRO: st.GRODatagrams, Backlog: softnetDrops() - backlog0, CPU: cpu, SystemCPU: sys1 - sys0, SystemAll: all1 - all0, Wall: wall, Attach: run.XDPAttach,
		BPFRuns: run.XDPRuns, BPFTime: time.Duration(run.XDPRunNs), Events: events, NewKeys: newKeys}
	// DTA reports the XDP program wrote itself (dta.kernel) and reports it detected
	// (detect.kernel) never reach user space: they are received and turned into state all
	// the same (one report per datagram).
	r.KernelDTA = run.XDPFrames["dta_key_write"] + run.XDPFrames["dta_key_increment"] + run.XDPFrames["dta_append"]
	r.KernelDetect = run.XDPFrames["kernel"]
	r.Received += r.KernelDTA + r.KernelDetect
	r.Reports += r.KernelDTA + r.KernelDetect
	if drain {
		r.reportsOfDatagrams()
	}
	r.setRates()
	return r, names, nil
}

// detectedEvents returns the events d has raised, new keys apart, and its new keys, from
// its counters (user space's as the workers last published them, which they do when idle,
// and the XDP program's); 0 without detection.
func detectedEvents(d *detect.Detector) (events, newKeys uint64) {
	if d == nil {
		return 0, 0
	}
	for kind, n := range d.Stats().Events {
		if kind == event.KindNewKey.String() {
			newKeys += n
		} else {
			events += n
		}
	}
	return events, newKeys
}

// kernelEnded is the frames an XDP program's outcomes say it turned into state itself and
// ended: DTA reports written (dta.kernel) and reports detected (detect.kernel).
func kernelEnded(frames map[string]uint64) uint64 {
	return frames["dta_key_write"] + frames["dta_key_increment"] + frames["dta_append"] + frames["kernel"]
}

// settle waits until count stops changing (four reads 50 ms apart, at most 3 s): what the
// kernel still held when the sender finished has been received.
func settle(count func() uint64) {
	last, still := count(), 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && still < 4; {
		time.Sleep(50 * time.Millisecond)
		if n := count(); n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}

// reportsOfDatagrams sets Reports for a receiver that counts datagrams only: the received
// ones times the reports per datagram sent.
func (r *Phase) reportsOfDatagrams() {
	if r.Sent.Datagrams > 0 {
		r.Reports = uint64(float64(r.Received) * float64(r.Sent.Reports) / float64(r.Sent.Datagrams))
	}
}

// setRates sets ReportsPS and Loss from what was sent and received.
func (r *Phase) setRates() {
	if s := r.Sent.Elapsed.Seconds(); s > 0 {
		r.ReportsPS = float64(r.Reports) / s
	}
	if r.Sent.Datagrams > 0 && r.Received < r.Sent.Datagrams {
		r.Loss = float64(r.Sent.Datagrams-r.Received) / float64(r.Sent.Datagrams)
	}
}

// baseline runs the baseline receiver with the load and reads what it says.
func (cfg *IngestConfig) baseline() (Phase, error) {
	rcvbuf := 8 << 20
	if ls := cfg.Collector.Listeners; len(ls) > 0 && ls[0].RcvBuf > 0 {
		rcvbuf = ls[0].RcvBuf
	}
	host := cmp.Or(cfg.Host, "127.0.0.1")
	cmd := exec.Command(cfg.Baseline, "0", strconv.Itoa(rcvbuf), host)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Phase{}, err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return Phase{}, err
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var port int
	if !sc.Scan() {
		return Phase{}, fmt.Errorf("%s: no port line (%s)", cfg.Baseline, strings.TrimSpace(errb.String()))
	}
	if _, err := fmt.Sscanf(sc.Text(), "port %d", &port); err != nil {
		return Phase{}, fmt.Errorf("%s: %q: %v", cfg.Baseline, sc.Text(), err)
	}
	backlog0 := softnetDrops()
	sent, err := cfg.Send(net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Phase{}, err
	}
	// As Settle does for intake's receiver: let it read what the kernel still holds.
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	var n, cpu uint64
	if !sc.Scan() {
		return Phase{}, fmt.Errorf("%s: no result line (%s)", cfg.Baseline, strings.TrimSpace(errb.String()))
	}
	if _, err := fmt.Sscanf(sc.Text(), "datagrams %d cpu_ns %d", &n, &cpu); err != nil {
		return Phase{}, fmt.Errorf("%s: %q: %v", cfg.Baseline, sc.Text(), err)
	}
	if err := cmd.Wait(); err != nil {
		return Phase{}, fmt.Errorf("%s: %v", cfg.Baseline, err)
	}
	p := Phase{Sent: sent, Received: n, CPU: time.Duration(cpu), Backlog: softnetDrops() - backlog0}
	if sent.Datagrams > 0 && n < sent.Datagrams {
		p.Loss = float64(sent.Datagrams-n) / float64(sent.Datagrams)
	}
	return p, nil
}

// ModeComparison is `bench ingest --mode xdp`: the same measurement with the first
// listener in socket mode and in xdp mode, the same load in the same run. The ratios say how
// many times less CPU xdp mode takes (socket over xdp), and how its collector rate compares.
type ModeComparison struct {
	Socket IngestResult `json:"socket"`
	XDP    IngestResult `json:"xdp"`
	// DrainCPURatio is the drain phases' CPU per datagram, socket over xdp: the receive
	// path alone.
	DrainCPURatio float64 `json:"drain_cpu_socket_over_xdp"`
	// CollectorCPURatio is the collector phases' CPU per report, socket over xdp.
	CollectorCPURatio float64 `json:"collector_cpu_socket_over_xdp"`
	// RateRatio is the collector phases' reports/s, xdp over socket.
	RateRatio float64 `json:"collector_rate_xdp_over_socket"`
	// XDPAttach is how the program was attached (native, generic).
	XDPAttach string `json:"xdp_attach"`
	// BPFNsPerFrame is the XDP program's run time per frame in the xdp collector phase (from
	// the kernel's BPF statistics, which IngestModes turns on), and KernelDTAReports the DTA
	// reports it wrote into the stores itself (dta.kernel), which cost no user-space CPU.
	BPFNsPerFrame    float64 `json:"bpf_ns_per_frame"`
	KernelDTAReports uint64  `json:"kernel_dta_reports"`
}

// IngestModes runs Ingest twice, with the first listener in socket mode and then in xdp
// mode on interface dev (on a free port: the program matches a fixed one). cfg.Host must be
// an address of dev. Progress is told phases as "socket:drain", "xdp:collector", ...
func IngestModes(cfg IngestConfig, dev string) (ModeComparison, error) {
	var mc ModeComparison
	progress := func(mode string) func(int, int, string) {
		if cfg.Progress == nil {
			return nil
		}
		return func(round, rounds int, phase string) { cfg.Progress(round, rounds, mode+":"+phase) }
	}
	s := cfg
	s.Progress = progress(ingest.ModeSocket)
	s.Collector.DTA.Kernel = false // dta.kernel and detect.kernel need the xdp listener
	s.Collector.Detect.Kernel = false
	sock, err := Ingest(s)
	if err != nil {
		return mc, fmt.Errorf("socket mode: %w", err)
	}
	x, err := onXDP(cfg, dev)
	if err != nil {
		return mc, err
	}
	x.Progress = progress(ingest.ModeXDP)
	if c, err := xdp.EnableRunStats(); err == nil {
		defer c.Close()
	}
	xr, err := Ingest(x)
	if err != nil {
		return mc, fmt.Errorf("xdp mode: %w", err)
	}
	mc = ModeComparison{Socket: sock, XDP: xr, XDPAttach: xr.Full.Attach, KernelDTAReports: xr.Full.KernelDTA}
	if xr.Full.BPFRuns > 0 {
		mc.BPFNsPerFrame = float64(xr.Full.BPFTime.Nanoseconds()) / float64(xr.Full.BPFRuns)
	}
	if xr.DrainCPUNsPerDatagram > 0 {
		mc.DrainCPURatio = sock.DrainCPUNsPerDatagram / xr.DrainCPUNsPerDatagram
	}
	if xr.CPUNsPerReport > 0 {
		mc.CollectorCPURatio = sock.CPUNsPerReport / xr.CPUNsPerReport
	}
	if sock.CollectorReportsPerS > 0 {
		mc.RateRatio = xr.CollectorReportsPerS / sock.CollectorReportsPerS
	}
	return mc, nil
}

// onXDP returns cfg with its first listener in xdp mode on interface dev, on a port free on
// cfg.Host (the program matches a fixed one), without the baseline phase.
func onXDP(cfg IngestConfig, dev string) (IngestConfig, error) {
	port, err := freeUDPPort(cfg.Host)
	if err != nil {
		return cfg, err
	}
	cfg.Collector.Listeners = slices.Clone(cfg.Collector.Listeners)
	l := &cfg.Collector.Listeners[0]
	l.Mode, l.Interface, l.Port, l.Sockets, l.Address = ingest.ModeXDP, dev, port, 0, ""
	l.FillDefaults()
	cfg.Baseline = ""
	return cfg, nil
}

// freeUDPPort returns a UDP port free on host now.
func freeUDPPort(host string) (int, error) {
	c, err := net.ListenPacket("udp", net.JoinHostPort(cmp.Or(host, "127.0.0.1"), "0"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

// quiet is the phases' logger: the drops a benchmark provokes are its result, not news.
var quiet = slog.New(slog.DiscardHandler)

// median returns the phase with the median key: the report rate for the receivers, CPU
// per datagram for the baseline.
func median[P any](rs []P, key func(P) float64) P {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y P) int { return cmp.Compare(key(x), key(y)) })
	return rs[len(rs)/2]
}

func reportRate(p Phase) float64 { return p.ReportsPS }
