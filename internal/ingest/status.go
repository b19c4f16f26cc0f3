package ingest

import (
	"net/http"
	"strings"

	"sync"
	"time"

	"github.com/intake-int/intake/api"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Status is the Receiver's state for /api/v1/status and `intake status`. Other tools rely on
// packets_received, reports_decoded, decode_errors (total, by_reason), kernel_drops and
// uptime_s: keep those names.
type Status struct {
	Running             bool              `json:"running"`
	UptimeS             float64           `json:"uptime_s"`
	Workers             int               `json:"workers"`
	Totals                                // packets_received, ..., at the top level
	ProcessorQueueDrops map[string]uint64 `json:"processor_queue_drops"`
	Rates               Rates             `json:"rates"`
	Listeners           []ListenerStatus  `json:"listeners"`
}

// Totals are the counters of the whole collector or of one listener.
type Totals struct {
	PacketsReceived uint64            `json:"packets_received"`
	BytesReceived   uint64            `json:"bytes_received"`
	ReportsDecoded  uint64            `json:"reports_decoded"`
	ReportsByFormat map[string]uint64 `json:"reports_by_format"`
	DecodeErrors    ByReason          `json:"decode_errors"`
	IngestDrops     ByReason          `json:"ingest_drops"`
	// InnerErrors counts reports that decoded (and are in reports_decoded) whose inner
	// data packet did not: they reached the processors with their header metadata only.
	InnerErrors ByReason `json:"inner_errors"`
	KernelDrops uint64   `json:"kernel_drops"`
	// SocketReads is the recvmmsg calls that returned datagrams: packets_received over it
	// is the mean batch a read took.
	SocketReads uint64 `json:"socket_reads"`
	// GRODatagrams is the datagrams that arrived coalesced in GRO super-datagrams (UDP_GRO),
	// counted after splitting; they are in packets_received too.
	GRODatagrams uint64 `json:"gro_datagrams"`
}

// ByReason is a total and its breakdown; every reason is listed, zeros included, so that
// readers see a stable set of keys.
type ByReason struct {
	Total    uint64            `json:"total"`
	ByReason map[string]uint64 `json:"by_reason"`
}

// Rates are per-second rates over the last sampling interval, computed from counter deltas
// once a second while the Receiver runs (zero until the first sample).
type Rates struct {
	IntervalS        float64 `json:"interval_s"`
	PacketsPerS      float64 `json:"packets_per_s"`
	BytesPerS        float64 `json:"bytes_per_s"`
	ReportsPerS      float64 `json:"reports_per_s"`
	DecodeErrorsPerS float64 `json:"decode_errors_per_s"`
	IngestDropsPerS  float64 `json:"ingest_drops_per_s"`
	KernelDropsPerS  float64 `json:"kernel_drops_per_s"`
}

// ListenerStatus is one listener's configuration as bound and its counters.
type ListenerStatus struct {
	Name            string `json:"name"`
	Format          string `json:"format"`
	Address         string `json:"address"` // as bound, e.g. "[::]:32766"; empty when stopped
	Port            int    `json:"port"`    // as configured
	Sockets         int    `json:"sockets"`
	Batch           int    `json:"batch"`
	MaxDatagram     int    `json:"max_datagram"`
	RcvBufRequested int    `json:"rcvbuf_requested"`
	RcvBufGranted   int    `json:"rcvbuf_granted"`
	// Allow is the listener's allow list (absent: every source).
	Allow []string `json:"allow,omitempty"`
	// Mode is the listener's mode (socket, xdp); Interface, XDPAttach (native, generic) and
	// XDPZeroCopy say where and how an xdp listener's program and sockets are bound, and
	// XDPFrames counts its program's frames by outcome (absent for socket listeners).
	Mode        string            `json:"mode"`
	Interface   string            `json:"interface,omitempty"`
	XDPAttach   string            `json:"xdp_attach,omitempty"`
	XDPZeroCopy bool              `json:"xdp_zero_copy,omitempty"`
	XDPFrames   map[string]uint64 `json:"xdp_frames,omitempty"`
	// SinkPackets counts a sink's packets by outcome (docs/sink.md; absent for listeners).
	SinkPackets map[string]uint64 `json:"sink_packets,omitempty"`
	// ReportToErrors counts the reports a sink's report_to could not send (absent without).
	ReportToErrors *uint64 `json:"report_to_errors,omitempty"`
	// XDPRuns and XDPRunNs are the program's runs and run time while BPF statistics are on
	// (sysctl kernel.bpf_stats_enabled=1); absent otherwise.
	XDPRuns  uint64 `json:"xdp_runs,omitempty"`
	XDPRunNs uint64 `json:"xdp_run_ns,omitempty"`
	// Spread says how a socket listener's datagrams are spread over its sockets: "flow" (by
	// owner key, the reuseport program attached), "source" (the kernel's hash of the
	// sender), or "source" with the reason the program could not be attached after a colon.
	// Absent with mode xdp.
	Spread string `json:"spread,omitempty"`
	// ForeignSockets counts the sockets not intake's found on the listener's port while it
	// ran (they take a share of its datagrams).
	ForeignSockets uint64 `json:"foreign_sockets"`
	Totals
	Rates Rates `json:"rates"`
}

// snapshot is the counters needed for rates, per listener.
type snapshot struct {
	t time.Time
	v [][5]uint64 // per listener: packets, bytes, reports, errors+drops split below
	d [][2]uint64 // per listener: ingest drops, kernel drops
}

type rateState struct {
	mu    sync.Mutex
	prev  snapshot
	rates []Rates // per listener
	total Rates
}

func (rcv *Receiver) snap() snapshot {
	s := snapshot{t: time.Now(), v: make([][5]uint64, len(rcv.listeners)), d: make([][2]uint64, len(rcv.listeners))}
	for i, l := range rcv.listeners {
		s.v[i] = [5]uint64{sum(l.workers, cPackets), sum(l.workers, cBytes), sum(l.workers, cReports), sum(l.workers, cErrors)}
		var drops uint64
		for r := 0; r < int(numDropReasons); r++ {
			drops += sum(l.workers, cDrop0+r)
		}
		s.d[i] = [2]uint64{drops, sum(l.workers, cKernelDrops)}
	}
	return s
}

func rate(a, b snapshot, i int) Rates {
	dt := b.t.Sub(a.t).Seconds()
	if dt <= 0 {
		return Rates{}
	}
	f := func(x, y uint64) float64 { return float64(y-x) / dt }
	return Rates{
		IntervalS:        dt,
		PacketsPerS:      f(a.v[i][0], b.v[i][0]),
		BytesPerS:        f(a.v[i][1], b.v[i][1]),
		ReportsPerS:      f(a.v[i][2], b.v[i][2]),
		DecodeErrorsPerS: f(a.v[i][3], b.v[i][3]),
		IngestDropsPerS:  f(a.d[i][0], b.d[i][0]),
		KernelDropsPerS:  f(a.d[i][1], b.d[i][1]),
	}
}

// sample recomputes the rates every second until done is closed.
func (rcv *Receiver) sample(done chan struct{}) {
	defer rcv.wg.Done()
	rcv.rates.mu.Lock()
	rcv.rates.prev = rcv.snap()
	rcv.rates.rates = nil
	rcv.rates.mu.Unlock()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastCheck := time.Now()
	for {
		var now time.Time
		select {
		case <-done:
			return
		case now = <-t.C:
		}
		if now.Sub(lastCheck) >= portCheckEvery {
			lastCheck = now
			rcv.checkPorts(now)
		}
		s := rcv.snap()
		rcv.rates.mu.Lock()
		rcv.rates.rates = make([]Rates, len(rcv.listeners))
		var tot Rates
		for i := range rcv.listeners {
			r := rate(rcv.rates.prev, s, i)
			rcv.rates.rates[i] = r
			tot.IntervalS = r.IntervalS
			tot.PacketsPerS += r.PacketsPerS
			tot.BytesPerS += r.BytesPerS
			tot.ReportsPerS += r.ReportsPerS
			tot.DecodeErrorsPerS += r.DecodeErrorsPerS
			tot.IngestDropsPerS += r.IngestDropsPerS
			tot.KernelDropsPerS += r.KernelDropsPerS
		}
		rcv.rates.total = tot
		rcv.rates.prev = s
		rcv.rates.mu.Unlock()
	}
}

func totals(ws []*worker, in []wire.Input) Totals {
	t := Totals{
		PacketsReceived: sum(ws, cPackets),
		BytesReceived:   sum(ws, cBytes),
		ReportsDecoded:  sum(ws, cReports),
		ReportsByFormat: map[string]uint64{},
		DecodeErrors:    ByReason{Total: sum(ws, cErrors), ByReason: map[string]uint64{}},
		IngestDrops:     ByReason{ByReason: map[string]uint64{}},
		InnerErrors:     ByReason{ByReason: map[string]uint64{}},
		KernelDrops:     sum(ws, cKernelDrops),
		SocketReads:     sum(ws, cReads),
		GRODatagrams:    sum(ws, cGRO),
	}
	for f := telemetry.Format(1); int(f) < numFormats; f++ {
		for _, x := range in {
			if formatOn(x, f) {
				t.ReportsByFormat[f.String()] = sum(ws, cFormat0+int(f))
				break
			}
		}
	}
	for _, r := range wire.Reasons() {
		t.DecodeErrors.ByReason[r.String()] = sum(ws, cReason0+int(r))
	}
	for _, r := range wire.Reasons() {
		n := sum(ws, cInner0+int(r))
		t.InnerErrors.ByReason[r.String()] = n
		t.InnerErrors.Total += n
	}
	for _, r := range DropReasons() {
		n := sum(ws, cDrop0+int(r))
		t.IngestDrops.ByReason[r.String()] = n
		t.IngestDrops.Total += n
	}
	return t
}

// Status returns the counters as of now. The rates are those of the last sampling interval.
func (rcv *Receiver) Status() Status {
	st := Status{
		Running:             rcv.started.Load() != 0,
		UptimeS:             rcv.uptime().Seconds(),
		Workers:             len(rcv.workers),
		ProcessorQueueDrops: map[string]uint64{},
	}
	ins := make([]wire.Input, len(rcv.listeners))
	for i, l := range rcv.listeners {
		ins[i] = l.in
	}
	st.Totals = totals(rcv.workers, ins)
	rcv.rates.mu.Lock()
	st.Rates = rcv.rates.total
	rates := rcv.rates.rates
	rcv.rates.mu.Unlock()
	for i, l := range rcv.listeners {
		l.mu.Lock()
		ls := ListenerStatus{
			Name: l.cfg.Name, Format: l.cfg.Format, Port: l.cfg.Port, Sockets: len(l.workers),
			Batch: l.cfg.Batch, MaxDatagram: l.cfg.MaxDatagram,
			RcvBufRequested: l.cfg.RcvBuf, RcvBufGranted: l.rcvbufGranted,
			Allow: l.cfg.Allow, ForeignSockets: l.foreign.Load(),
			Totals: totals(l.workers, ins[i:i+1]),
		}
		if st.Running {
			ls.Address = l.boundAddr
		}
		ls.Mode, ls.Interface = l.cfg.Mode, l.cfg.Interface
		if l.cfg.Mode != ModeXDP {
			ls.Spread = l.spread
		}
		ls.XDPAttach, ls.XDPZeroCopy = l.xdpAttach()
		if l.x.prog != nil {
			runs, d := l.x.prog.RunStats()
			ls.XDPRuns, ls.XDPRunNs = runs, uint64(d)
		}
		if l.sink != nil && l.sink.prog != nil {
			ls.XDPAttach = l.sink.prog.Mode()
			runs, d := l.sink.prog.RunStats()
			ls.XDPRuns, ls.XDPRunNs = runs, uint64(d)
		}
		l.mu.Unlock()
		ls.XDPFrames = l.xdpCounts()
		ls.SinkPackets = l.sinkCounts()
		if h := l.workers[0].sinkHop; l.sink != nil && h != nil && len(h.to) > 0 {
			n := h.sendErr.Load()
			ls.ReportToErrors = &n
		}
		if i < len(rates) {
			ls.Rates = rates[i]
		}
		st.Listeners = append(st.Listeners, ls)
	}
	for _, p := range rcv.procs {
		if q, ok := p.(QueueDropper); ok {
			st.ProcessorQueueDrops[p.Name()] = q.QueueDrops()
		}
	}
	return st
}

// RegisterAPI serves GET /api/v1/status.
func (rcv *Receiver) RegisterAPI(s *api.Server) {
	s.HandleFunc("GET /api/v1/status", rcv.StatusHandler(nil))
}

// StatusHandler is GET /api/v1/status: the Status, ?listener=NAME narrowing the listeners
// shown. wrap, when set, turns it into what is served (the collector adds the other
// components' counters).
func (rcv *Receiver) StatusHandler(wrap func(Status) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "listener") {
			return
		}
		st := rcv.Status()
		if name := r.URL.Query().Get("listener"); name != "" {
			var names []string
			var keep []ListenerStatus
			for _, l := range st.Listeners {
				names = append(names, l.Name)
				if l.Name == name {
					keep = append(keep, l)
				}
			}
			if keep == nil {
				api.BadParam(w, "listener", name, "one of "+strings.Join(names, ", "))
				return
			}
			st.Listeners = keep
		}
		if wrap != nil {
			api.JSON(w, http.StatusOK, wrap(st))
			return
		}
		api.JSON(w, http.StatusOK, st)
	}
}

// Settle waits until the receiver has read what the kernel still held when the senders
// stopped: the received count stops moving for 200 ms (at most 3 s).
func (rcv *Receiver) Settle() {
	last, still := rcv.Status().PacketsReceived, 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && still < 4; {
		time.Sleep(50 * time.Millisecond)
		if n := rcv.Status().PacketsReceived; n != last {
			last, still = n, 0
		} else {
			still++
		}
	}
}
