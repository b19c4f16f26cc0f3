package ingest

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// The INT sink (docs/sink.md, the SmartNIC paper's sink in XDP): package xdp's sink program
// on an interface of a host takes the INT out of the data packets that arrive, hands them on
// intact, and puts the frame up to INT's end into a ring buffer. A sink is a listener of
// mode sink and input int-md with one worker, which reads the ring and hands each frame to
// the same Dispatcher as every other worker: the pipeline (detection, flow cache, DTA
// translation, exports, Kafka, the console) sees a raw INT-MD packet, as an int-md
// listener's. Where configured, the worker adds the host's own hop first, as the spec's sink
// node does, and sends each report on as a TR v2.0 report (report_to), as a switch's sink
// would.

// ModeSink is the mode of the listeners made from sinks[].
const ModeSink = "sink"

// Sink is one entry of sinks[] (docs/config.md, "sinks").
type Sink struct {
	// Name labels the sink's counters; default "sink:<interface>".
	Name string `yaml:"name"`
	// Interface is the host's interface the sink program attaches to (required).
	Interface string `yaml:"interface"`
	// DSCP values that mark INT (at most 4). Default, when port is not set either: the
	// spec's example 0x17 (mask 0x3f) only: a DSCP bit (as ONOS marks) would match host
	// traffic that carries no INT.
	DSCP []wire.DSCPMatch `yaml:"dscp"`
	// Port is a UDP destination port that marks INT (the spec's port-based marking: v2.x
	// NPT 1 keeps the original port in the shim, NPT 2 inserts a UDP header; a v0.5 tail
	// keeps the port); 0: none.
	Port int `yaml:"port"`
	// Versions are the INT versions whose shims are taken out: "0.5", "1.0", "2.x".
	// Default: all three.
	Versions []string `yaml:"versions"`
	// TCPShimBeforeOptions: INT sits after the first 20 bytes of TCP, before its options.
	TCPShimBeforeOptions bool `yaml:"tcp_shim_before_options"`
	// Quirks of the sources, as the decoder's (quirks.host_int takes out Intel host-int's
	// shim type 3).
	Quirks wire.Quirks `yaml:"quirks"`
	// NodeID, when set, is the host's own node id: each report gets the host's hop first
	// (node id, ingress interface index, ingress timestamp), as the spec's sink adds its
	// own metadata. 0: none.
	NodeID uint32 `yaml:"node_id"`
	// ReportTo are collectors (host:port) the sink also sends each report to, as TR v2.0.
	ReportTo []string `yaml:"report_to,omitempty"`
	// Ring is the ring buffer's size in bytes (a power of two, at least 4096); 0: 4 MiB.
	Ring int `yaml:"ring"`
	// Attach is how the program attaches: "" (native where the driver has it, else
	// generic), "native" or "generic".
	Attach string `yaml:"attach"`
}

// FillDefaults replaces zero settings with their defaults.
func (s *Sink) FillDefaults() {
	if s.Name == "" {
		s.Name = "sink:" + s.Interface
	}
	if len(s.DSCP) == 0 && s.Port == 0 {
		s.DSCP = []wire.DSCPMatch{{Value: 0x17, Mask: 0x3f}}
	}
	if len(s.Versions) == 0 {
		s.Versions = []string{"0.5", "1.0", "2.x"}
	}
	if s.Ring == 0 {
		s.Ring = xdp.DefaultSinkRing
	}
}

// Validate checks one sink; key is its path ("sinks[0]").
func (s *Sink) Validate(key string) error {
	if s.Interface == "" {
		return errAt(key+".interface", `""`, "is required: the interface of this host that receives the INT-carrying packets")
	}
	if s.Port < 0 || s.Port > 65535 {
		return errAt(key+".port", s.Port, "must be 0-65535 (0: no port marks INT)")
	}
	for _, v := range s.Versions {
		switch v {
		case "0.5", "1.0", "2.x":
		default:
			return errAt(key+".versions", strconv.Quote(v), "each must be 0.5, 1.0 or 2.x")
		}
	}
	switch s.Attach {
	case "", xdp.ModeNative, xdp.ModeGeneric:
	default:
		return errAt(key+".attach", strconv.Quote(s.Attach), "must be native or generic (empty: native where the driver has it)")
	}
	for i, a := range s.ReportTo {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return errAt(fmt.Sprintf("%s.report_to[%d]", key, i), strconv.Quote(a), "must be host:port")
		}
	}
	c := s.program()
	if err := c.Check(); err != nil {
		return fmt.Errorf("%s.%w", key, err)
	}
	return nil
}

// program is the sink program's configuration.
func (s *Sink) program() xdp.SinkConfig {
	c := xdp.SinkConfig{Port: uint16(s.Port), HostINT: s.Quirks.HostINT,
		TCPBeforeOptions: s.TCPShimBeforeOptions, RingBytes: s.Ring, Mode: s.Attach}
	for _, m := range s.DSCP {
		c.DSCP = append(c.DSCP, xdp.DSCPMatch{Value: m.Value, Mask: m.Mask})
	}
	for _, v := range s.Versions {
		switch v {
		case "0.5":
			c.V05 = true
		case "1.0":
			c.V10 = true
		case "2.x":
			c.V2x = true
		}
	}
	return c
}

// decoder is the configuration the sink's worker decodes with: base's, with the sink's
// marking, and no probing (the program lifts only what a marking says is INT).
func (s *Sink) decoder(base wire.Config) wire.Config {
	d := base
	d.DSCP = append([]wire.DSCPMatch(nil), s.DSCP...)
	d.ProbeShim = false
	d.INTPort = uint16(s.Port)
	d.TCPShimBeforeOptions = s.TCPShimBeforeOptions
	d.Quirks = s.Quirks
	return d
}

// listener is the sink as a listener of mode sink.
func (s *Sink) listener() Listener {
	l := Listener{Name: s.Name, Format: wire.InputINTMD.String(), Mode: ModeSink, Interface: s.Interface, Sockets: 1}
	l.FillDefaults()
	return l
}

// sinkState is a sink listener's program and its counters before the current one.
type sinkState struct {
	cfg  Sink
	prog *xdp.Sink
	base [xdp.NumSinkOutcomes]uint64
	last [xdp.NumSinkOutcomes]uint64
}

// openSink attaches the sink's program; its one worker reads the ring.
func (rcv *Receiver) openSink(l *listener) error {
	p, err := xdp.AttachSink(l.cfg.Interface, l.sink.cfg.program())
	if err != nil {
		return fmt.Errorf("sink on interface %s: %w", l.cfg.Interface, err)
	}
	host := l.workers[0].sinkHop
	if host != nil {
		host.ifindex = uint32(p.Ifindex())
		if err := host.dial(); err != nil {
			p.Close()
			return fmt.Errorf("sink on interface %s: report_to: %w", l.cfg.Interface, err)
		}
	}
	l.mu.Lock()
	l.sink.prog = p
	l.boundAddr = "sink:" + l.cfg.Interface
	l.mu.Unlock()
	rcv.log.Info("INT sink attached", "sink", l.cfg.Name, "interface", l.cfg.Interface, "attach", p.Mode(),
		"dscp", fmt.Sprint(l.sink.cfg.DSCP), "port", l.sink.cfg.Port, "node_id", l.sink.cfg.NodeID, "report_to", fmt.Sprint(l.sink.cfg.ReportTo))
	return nil
}

// closeSink detaches the sink's program, keeping its counters.
func (l *listener) closeSink() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sink == nil || l.sink.prog == nil {
		return
	}
	var c [xdp.NumSinkOutcomes]uint64
	if l.sink.prog.Counts(&c) == nil {
		l.sink.last = c
	}
	for i := range c {
		l.sink.base[i] += l.sink.last[i]
	}
	l.sink.last = [xdp.NumSinkOutcomes]uint64{}
	l.sink.prog.Close()
	l.sink.prog = nil
	if h := l.workers[0].sinkHop; h != nil {
		h.close()
	}
}

// sinkCounts returns the sink program's packet counts by outcome, cumulative; nil when the
// listener is not a sink.
func (l *listener) sinkCounts() map[string]uint64 {
	if l.sink == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sink.prog != nil {
		var c [xdp.NumSinkOutcomes]uint64
		if l.sink.prog.Counts(&c) == nil {
			l.sink.last = c
		}
	}
	m := make(map[string]uint64, xdp.NumSinkOutcomes)
	for o := range xdp.NumSinkOutcomes {
		m[o.String()] = l.sink.base[o] + l.sink.last[o]
	}
	return m
}

// A sink worker's wait on an empty ring. The program does not wake it (a wakeup per packet
// would cost the program an irq_work and the worker a context switch), so it polls, and a
// poll is not free either (the thread blocks and wakes, tens of µs on a VM): the wait adapts
// so that a wake finds between sinkWakeLow and sinkWakeHigh records, doubling while it finds
// fewer, halving while it finds more, between sinkPollMin and sinkPollMax. sinkPollMax
// bounds how late a report reaches the processors; at the default ring (4 MiB, about 13,000
// 5-hop packets) it leaves room for bursts of 800,000 packets/s.
const (
	sinkPollMin  = time.Millisecond
	sinkPollMax  = 16 * time.Millisecond
	sinkWakeLow  = 256
	sinkWakeHigh = 2048
	sinkBatch    = 256 // records a Read hands over at most
)

// runSink is a sink worker's loop, on its own locked thread: take what the ring holds (up to
// sinkBatch records a time), decode it, end the batch; wait when the ring is empty, until
// Stop. It then drains what the ring still holds.
func (w *worker) runSink(stopping *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := w.l.sink.prog
	wait := sinkPollMin
	drained, found := 0, 0
	handle := func(r *xdp.SinkRecord) { w.one(r.Frame, w.frameTime(r.Time)) }
	for {
		n, err := s.Read(sinkBatch, wait, handle)
		if n > 0 {
			w.local[cReads]++
			w.endBatch()
		}
		if found += n; n < sinkBatch { // the ring is drained: this wake found found records
			switch {
			case found < sinkWakeLow && wait < sinkPollMax:
				wait *= 2
			case found > sinkWakeHigh && wait > sinkPollMin:
				wait /= 2
			}
			found = 0
		}
		if err != nil || stopping.Load() {
			if n == 0 || err != nil {
				return
			}
			if drained++; drained >= xdpDrainBatches {
				return
			}
		}
	}
}

// sinkHop is what a sink's worker does to each report it decodes: the host's own hop first
// (node_id), and the report sent on as TR v2.0 (report_to).
type sinkHop struct {
	node    uint32
	ifindex uint32
	to      []string
	conns   []*net.UDPConn
	enc     *wire.Encoder
	buf     []byte
	out     telemetry.Report
	seq     uint32
	sendErr atomic.Uint64 // reports report_to could not encode or send (status, metrics)
}

func newSinkHop(s *Sink) *sinkHop {
	if s.NodeID == 0 && len(s.ReportTo) == 0 {
		return nil
	}
	h := &sinkHop{node: s.NodeID, to: s.ReportTo}
	if len(s.ReportTo) > 0 {
		h.enc, _ = wire.NewEncoder(wire.DefaultConfig())
		h.buf = make([]byte, 0, 2048)
	}
	return h
}

// dial connects the report_to sockets.
func (h *sinkHop) dial() error {
	h.close()
	for _, a := range h.to {
		ua, err := net.ResolveUDPAddr("udp", a)
		if err != nil {
			return err
		}
		c, err := net.DialUDP("udp", nil, ua)
		if err != nil {
			return err
		}
		h.conns = append(h.conns, c)
	}
	return nil
}

func (h *sinkHop) close() {
	for _, c := range h.conns {
		c.Close()
	}
	h.conns = nil
}

// apply adds the host's hop to r (received at now, Unix ns) and sends r on.
func (h *sinkHop) apply(r *telemetry.Report, now int64) {
	if h.node != 0 && int(r.NHops) < telemetry.MaxHops {
		copy(r.Hops[1:r.NHops+1], r.Hops[:r.NHops])
		r.NHops++
		r.Hops[0] = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressPort | telemetry.FIngressTS,
			NodeID: h.node, IngressPort: h.ifindex, IngressTS: uint64(now)}
		r.ReporterHop = true
		r.NodeID, r.Has = h.node, r.Has|telemetry.HasNodeID
	}
	if len(h.conns) == 0 {
		return
	}
	h.out = *r
	o := &h.out
	o.Format = telemetry.FormatTR20
	o.TR = telemetry.TRHeader{Ver: 2, NProto: 3, RepType: 1} // InType 3: Ethernet
	if o.ReporterHop {
		o.TR.MDBits = 0x4000 | 0x0800 // the host's hop: ports (bit 1), ingress timestamp (bit 4)
	}
	o.Seq, o.Has = h.seq, o.Has|telemetry.HasSeq
	o.Flags |= telemetry.FlagFlow // F: a tracked flow's report, whose INT collectors read
	h.seq = (h.seq + 1) & (1<<22 - 1)
	b, err := h.enc.Append(h.buf[:0], o)
	if err != nil {
		h.sendErr.Add(1)
		return
	}
	for _, c := range h.conns {
		if _, err := c.Write(b); err != nil {
			h.sendErr.Add(1)
		}
	}
}
