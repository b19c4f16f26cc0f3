package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/xdp"
)

// Sink is `intake bench sink` (docs/sink.md, "What it costs"): what the INT sink costs the
// machine per packet above an XDP_PASS floor, in the same run. The same load of INT-MD data
// packets goes across a veth pair to a UDP socket on the receiving side that reads and
// discards (in every phase, so the host's stack delivers the same datagrams), with on the
// receiving interface in turn:
//   - floor: an XDP program that counts every packet and passes it (xdp.AttachFloorPass);
//   - ring: the sink program, its ring read by the sink's worker, which counts each record
//     and throws it away (a drain-only receiver): what the kernel does;
//   - pipeline: the sink as serve runs it, a sinks[] entry of a collector whose ring
//     reader hands every frame to the processors.

// SinkConfig is one bench sink measurement.
type SinkConfig struct {
	// Collector is the pipeline phase's configuration: its processors apply; its listeners
	// and sinks are replaced by Sink.
	Collector config.Config
	// Sink is the sinks[] entry of both sink phases (its Interface is set to Dev).
	Sink ingest.Sink
	// Dev is the receiving interface and Host its IPv4 address, where the discarding socket
	// listens.
	Dev, Host string
	// Send sends the load of a phase, INT-MD data packets to addr (the discarding socket's
	// host:port), and returns what was sent once it is.
	Send func(addr string) (gen.Stats, error)
	// Rounds of the phases, alternating; each phase's median round by machine CPU per
	// packet counts. Default 1.
	Rounds int
	// NoPipeline leaves the pipeline phase out.
	NoPipeline bool
	// Progress, if set, is told when a phase starts: "floor", "ring" or "pipeline".
	Progress func(round, rounds int, phase string)
}

// The phases of bench sink.
const (
	SinkPhaseFloor    = "floor"
	SinkPhaseRing     = "ring"
	SinkPhasePipeline = "pipeline"
)

// SinkResult is `bench sink --json` (docs/sink.md lists the keys). Format, Hops and
// DurationS are the caller's, which knows the load.
type SinkResult struct {
	Format    string  `json:"format"`
	Hops      int     `json:"hops"`
	DurationS float64 `json:"duration_s"`
	Rounds    int     `json:"rounds"`
	// FloorAttach and SinkAttach say how the floor and the sink program were attached
	// (native, generic): compare like with like.
	FloorAttach string `json:"floor_attach"`
	SinkAttach  string `json:"sink_attach"`
	// Processors are the pipeline phase's.
	Processors []string  `json:"processors"`
	Floor      SinkCost  `json:"floor"`
	Ring       SinkCost  `json:"ring"`
	Pipeline   *SinkCost `json:"pipeline,omitempty"`
}

// SinkCost is one phase's figures (its median round's). Per packet means per packet the
// phase's XDP program ran on.
type SinkCost struct {
	PacketsPerS float64 `json:"packets_per_s"`
	PacketsSent uint64  `json:"packets_sent"`
	// Packets is the packets the XDP program counted (the sink: every outcome's); Stripped
	// the sink's outcome stripped (0 for the floor); Delivered the datagrams the discarding
	// socket read; Reports the reports the pipeline decoded.
	Packets   uint64 `json:"packets"`
	Stripped  uint64 `json:"stripped"`
	Delivered uint64 `json:"delivered"`
	Reports   uint64 `json:"reports"`
	// Outcomes is the sink program's count of every outcome (docs/sink.md); absent for
	// the floor.
	Outcomes map[string]uint64 `json:"outcomes,omitempty"`
	// MachineCPU is the whole machine's CPU per packet (/proc/stat: sender, kernel, the
	// discarding socket's reader, the collector); AboveFloor that less the floor's;
	// CollectorCPU this process's, less the discarding reader's (the ring reader, the
	// pipeline); BPF the XDP program's run time per packet (kernel BPF statistics) and
	// BPFAboveFloor that less the floor program's; MachineBusy the machine's busy share
	// (0-1).
	MachineCPU    float64 `json:"machine_cpu_ns_per_packet"`
	AboveFloor    float64 `json:"machine_above_floor_ns_per_packet"`
	CollectorCPU  float64 `json:"collector_cpu_ns_per_packet"`
	BPF           float64 `json:"bpf_ns_per_packet"`
	BPFAboveFloor float64 `json:"bpf_above_floor_ns_per_packet"`
	MachineBusy   float64 `json:"machine_busy"`
}

// sinkPhase is one round of a phase.
type sinkPhase struct {
	Phase
	stripped, delivered uint64
	outcomes            map[string]uint64
}

// Sink runs the measurement.
func Sink(cfg SinkConfig) (SinkResult, error) {
	res := SinkResult{Rounds: max(cfg.Rounds, 1), Processors: []string{}}
	cfg.Sink.Interface = cfg.Dev
	cfg.Sink.FillDefaults()
	phases := []struct {
		name string
		run  func(d *discard) (sinkPhase, error)
	}{
		{SinkPhaseFloor, cfg.floorPass},
		{SinkPhaseRing, func(d *discard) (sinkPhase, error) { return cfg.receiver(true, d, nil) }},
		{SinkPhasePipeline, func(d *discard) (sinkPhase, error) { return cfg.receiver(false, d, &res.Processors) }},
	}
	if cfg.NoPipeline {
		phases = phases[:2]
	}
	runs := make([][]sinkPhase, len(phases))
	for round := 1; round <= res.Rounds; round++ {
		for i, ph := range phases {
			if cfg.Progress != nil {
				cfg.Progress(round, res.Rounds, ph.name)
			}
			p, err := cfg.sinkPhase(ph.run)
			if err != nil {
				return res, fmt.Errorf("%s phase: %w", ph.name, err)
			}
			runs[i] = append(runs[i], p)
		}
	}
	med := make([]sinkPhase, len(runs))
	for i, rs := range runs {
		med[i] = median(rs, func(p sinkPhase) float64 { return perPacket(p.SystemCPU, p) })
	}
	res.set(med)
	return res, nil
}

// set fills the figures from the phases' medians: floor, ring and, if run, pipeline.
func (res *SinkResult) set(med []sinkPhase) {
	floor := med[0]
	res.FloorAttach, res.SinkAttach = floor.Attach, med[1].Attach
	res.Floor, res.Ring = sinkCost(floor, floor), sinkCost(med[1], floor)
	if len(med) > 2 {
		p := sinkCost(med[2], floor)
		res.Pipeline = &p
	}
}

// sinkPhase runs one phase with the kernel's BPF run-time statistics on (every phase has
// an XDP program, so each pays them alike) and a discarding socket.
func (cfg *SinkConfig) sinkPhase(run func(*discard) (sinkPhase, error)) (sinkPhase, error) {
	if c, err := xdp.EnableRunStats(); err == nil {
		defer c.Close()
	}
	d, err := newDiscard(cfg.Host)
	if err != nil {
		return sinkPhase{}, fmt.Errorf("the discarding socket: %w", err)
	}
	p, err := run(d)
	p.CPU -= d.Close()
	p.delivered = d.Count()
	return p, err
}

// measure sends the load to d and waits until count (the program's packets) and d's
// datagrams stop changing; it returns the phase with what was sent, the machine's and
// this process's CPU, and the wall time over it.
func (cfg *SinkConfig) measure(d *discard, count func() uint64) (sinkPhase, error) {
	sys0, all0 := systemCPU()
	cpu0, t0, backlog0 := processCPU(), time.Now(), softnetDrops()
	sent, err := cfg.Send(d.Addr())
	if err != nil {
		return sinkPhase{}, err
	}
	settle(func() uint64 { return count() + d.Count() })
	sys1, all1 := systemCPU()
	return sinkPhase{Phase: Phase{Sent: sent, SystemCPU: sys1 - sys0, SystemAll: all1 - all0, CPU: processCPU() - cpu0,
		Wall: time.Since(t0), Backlog: softnetDrops() - backlog0}}, nil
}

// floorPass is the floor phase: the pass floor on Dev.
func (cfg *SinkConfig) floorPass(d *discard) (sinkPhase, error) {
	f, err := xdp.AttachFloorPass(cfg.Dev)
	if err != nil {
		return sinkPhase{}, err
	}
	defer f.Close()
	p, err := cfg.measure(d, func() uint64 { n, _ := f.Count(); return n })
	if err != nil {
		return p, err
	}
	if p.Received, err = f.Count(); err != nil {
		return p, err
	}
	p.Attach = f.Mode()
	p.BPFRuns, p.BPFTime = f.RunStats()
	p.finish()
	return p, nil
}

// receiver is a sink phase: the ring phase (drain) is a receiver whose one sink's worker
// reads the ring and counts each record without decoding it (SetDrainOnly): what the
// kernel does; the pipeline phase is a collector with the sink, as serve runs it. procs
// gets the processors' names.
func (cfg *SinkConfig) receiver(drain bool, d *discard, procs *[]string) (sinkPhase, error) {
	col := cfg.Collector
	col.Listeners, col.Sinks = nil, []ingest.Sink{cfg.Sink}
	col.HTTP.Address = ""
	var recv *ingest.Receiver
	var start, stop func(context.Context) error
	if drain {
		r, err := ingest.New(col.Ingest(), ingest.Deps{Logger: quiet})
		if err != nil {
			return sinkPhase{}, err
		}
		r.SetDrainOnly(true)
		recv, start, stop = r, r.Start, r.Stop
	} else {
		c, err := collector.New(col, collector.Options{NoHTTP: true, Logger: quiet})
		if err != nil {
			return sinkPhase{}, err
		}
		recv, start, stop = c.Receiver, c.Start, c.Stop
		*procs = (*procs)[:0]
		for _, p := range recv.Processors() {
			*procs = append(*procs, p.Name())
		}
	}
	ctx := context.Background()
	if err := start(ctx); err != nil {
		return sinkPhase{}, err
	}
	defer stop(ctx)
	// The receiver has taken a packet once its worker read it from the ring.
	p, err := cfg.measure(d, func() uint64 {
		st := recv.Status()
		return st.PacketsReceived + sum(slices.Collect(maps.Values(st.Listeners[0].SinkPackets)))
	})
	if err != nil {
		return p, err
	}
	run := recv.Status().Listeners[0] // the program's figures go with it at Stop
	if err := stop(ctx); err != nil {
		return p, err
	}
	st := recv.Status()
	p.outcomes = st.Listeners[0].SinkPackets
	p.Received, p.stripped = sum(slices.Collect(maps.Values(p.outcomes))), p.outcomes[xdp.SinkStripped.String()]
	p.Reports, p.Errors, p.Attach = st.ReportsDecoded, st.DecodeErrors.Total, run.XDPAttach
	p.BPFRuns, p.BPFTime = run.XDPRuns, time.Duration(run.XDPRunNs)
	p.finish()
	return p, nil
}

// finish sets the rates: packets per second of sending time, and the loss, packets sent
// that the program did not see.
func (p *sinkPhase) finish() {
	if s := p.Sent.Elapsed.Seconds(); s > 0 {
		p.ReportsPS = float64(p.Received) / s
	}
	if p.Sent.Datagrams > 0 && p.Received < p.Sent.Datagrams {
		p.Loss = float64(p.Sent.Datagrams-p.Received) / float64(p.Sent.Datagrams)
	}
}

// sinkCost is p's figures, against floor's.
func sinkCost(p, floor sinkPhase) SinkCost {
	c := SinkCost{PacketsPerS: p.ReportsPS, PacketsSent: p.Sent.Datagrams, Packets: p.Received, Stripped: p.stripped,
		Delivered: p.delivered, Reports: p.Reports, Outcomes: p.outcomes, MachineCPU: perPacket(p.SystemCPU, p),
		CollectorCPU: perPacket(p.CPU, p), BPF: perPacket(p.BPFTime, p), MachineBusy: ratio(p.SystemCPU.Seconds(), p.SystemAll.Seconds())}
	c.AboveFloor = c.MachineCPU - perPacket(floor.SystemCPU, floor)
	c.BPFAboveFloor = c.BPF - perPacket(floor.BPFTime, floor)
	return c
}

// perPacket is d per packet the phase's program counted; 0 without packets.
func perPacket(d time.Duration, p sinkPhase) float64 {
	if p.Received == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(p.Received)
}

func sum(ns []uint64) uint64 {
	var s uint64
	for _, n := range ns {
		s += n
	}
	return s
}
