package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Endpoints are where a real-time fabric sends and listens.
type Endpoints struct {
	// Label is the collector's INT-label listener (host:port, UDP; intake's default 40050).
	Label string
	// Report is the collector's telemetry report listener for INT-MD sink reports and
	// postcards (default 32766); empty with INT-MD and postcards off.
	Report string
	// Control is the HTTP control endpoint's listen address (e.g. 127.0.0.1:8050; port 0
	// picks one); empty: none.
	Control string
	// Labels and Reports, when set, replace Label and Report with a cluster's members, in
	// cluster.members order: each export and report goes to the member that owns it
	// (package partition, docs/scale-out.md).
	Labels, Reports []string
}

// UDPSink encodes exports and reports with intake's encoder and sends each as one UDP
// datagram, to its owner when there are several collectors.
type UDPSink struct {
	enc        *wire.Encoder
	label, rep []*net.UDPConn // one per collector, in cluster.members order
	// repSeq is the next sequence number of each member's reports by switch id, when
	// reports go to several members: a report's sequence counts the reports of its
	// (switch, hw_id) to one destination (TR v2.0), so that each member sees its own
	// sequence without gaps; the fabric's own numbering counts all of a switch's reports.
	// The fabric's switch ids are 8 bits and its hw_id always 0.
	repSeq       [][256]uint32
	buf          []byte
	Sent, Errors atomic.Uint64
}

// NewUDPSink dials the collector's listeners (either address may be empty).
func NewUDPSink(labelAddr, reportAddr string) (*UDPSink, error) {
	var ls, rs []string
	if labelAddr != "" {
		ls = []string{labelAddr}
	}
	if reportAddr != "" {
		rs = []string{reportAddr}
	}
	return NewClusterSink(ls, rs)
}

// NewClusterSink dials the listeners of a cluster's members (package cluster): each export
// goes to labelAddrs[owner], each report to reportAddrs[owner]. Either list may be empty.
func NewClusterSink(labelAddrs, reportAddrs []string) (*UDPSink, error) {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		return nil, err
	}
	s := &UDPSink{enc: enc, buf: make([]byte, 0, 2048)}
	dial := func(a string) (*net.UDPConn, error) {
		if a == "" {
			return nil, nil
		}
		ua, err := net.ResolveUDPAddr("udp", a)
		if err != nil {
			return nil, err
		}
		return net.DialUDP("udp", nil, ua)
	}
	for _, a := range labelAddrs {
		c, err := dial(a)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("label collector %s: %w", a, err)
		}
		s.label = append(s.label, c)
	}
	for _, a := range reportAddrs {
		c, err := dial(a)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("report collector %s: %w", a, err)
		}
		s.rep = append(s.rep, c)
	}
	if len(s.rep) > 1 {
		s.repSeq = make([][256]uint32, len(s.rep))
	}
	return s, nil
}

// send sends r to its owner among cs; with seq (reports to several members) it first
// numbers r in the owner's sequence of r's switch.
func (s *UDPSink) send(cs []*net.UDPConn, r *telemetry.Report, seq [][256]uint32) {
	if len(cs) == 0 {
		return
	}
	m := 0
	if len(cs) > 1 {
		m = partition.ReportOwner(r, len(cs))
	}
	c := cs[m]
	if seq != nil && r.Has&telemetry.HasSeq != 0 {
		n := &seq[m][uint8(r.NodeID)]
		r.Seq = *n & seqMask
		*n++
	}
	b, err := s.enc.Append(s.buf[:0], r)
	if err == nil {
		s.buf = b[:0]
		_, err = c.Write(b)
	}
	if err != nil {
		s.Errors.Add(1)
		return
	}
	s.Sent.Add(1)
}

// Label implements Sink.
func (s *UDPSink) Label(_ int64, r *telemetry.Report) { s.send(s.label, r, nil) }

// Report implements Sink.
func (s *UDPSink) Report(_ int64, r *telemetry.Report) { s.send(s.rep, r, s.repSeq) }

// Close closes the sockets.
func (s *UDPSink) Close() {
	for _, c := range append(s.label, s.rep...) {
		c.Close()
	}
}

// Listen opens the UDP sockets and the control endpoint; Run calls it when it was not
// called. After Listen, ControlAddr says where the control endpoint is.
func (f *Fabric) Listen(ep Endpoints) error {
	if f.udp != nil {
		return nil
	}
	var s *UDPSink
	var err error
	if len(ep.Labels) > 0 || len(ep.Reports) > 0 {
		s, err = NewClusterSink(ep.Labels, ep.Reports)
	} else {
		s, err = NewUDPSink(ep.Label, ep.Report)
	}
	if err != nil {
		return err
	}
	f.udp = s
	if ch, ok := f.sink.(interface{ SetNext(Sink) }); ok {
		ch.SetNext(s)
	} else {
		f.sink = s
	}
	f.cmds = make(chan func(), 64)
	if ep.Control != "" {
		ln, err := net.Listen("tcp", ep.Control)
		if err != nil {
			s.Close()
			return fmt.Errorf("control %s: %w", ep.Control, err)
		}
		f.ctl = ln
	}
	return nil
}

// ControlAddr returns the control endpoint's address once listening, else "".
func (f *Fabric) ControlAddr() string {
	if f.ctl == nil {
		return ""
	}
	return f.ctl.Addr().String()
}

// UDPSent returns the datagrams sent and send errors in real time.
func (f *Fabric) UDPSent() (sent, errs uint64) {
	if f.udp == nil {
		return 0, 0
	}
	return f.udp.Sent.Load(), f.udp.Errors.Load()
}

// Run drives the fabric by the wall clock until ctx ends: the event loop sleeps until each
// event is due, every export and report is a UDP datagram, and the control endpoint
// applies shift updates between events. Fabric time (the switches' timestamps) is ns since
// Run started.
func (f *Fabric) Run(ctx context.Context, ep Endpoints) error {
	if err := f.Listen(ep); err != nil {
		return err
	}
	defer f.udp.Close()
	f.running = make(chan struct{})
	defer close(f.running)
	if f.ctl != nil {
		srv := &http.Server{Handler: f.controlHandler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(f.ctl)
		defer srv.Close()
	}
	f.start()
	t0 := time.Now()
	base := f.now
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Run everything due; look at the clock once per batch.
		el := base + int64(time.Since(t0))
		for n := 0; len(f.heap) > 0 && f.heap[0].t <= el && n < 4096; n++ {
			f.step(f.pop())
		}
		select {
		case <-ctx.Done():
			return nil
		case c := <-f.cmds:
			c()
			continue
		default:
		}
		wait := time.Hour
		if len(f.heap) > 0 {
			wait = time.Duration(f.heap[0].t - (base + int64(time.Since(t0))))
		}
		if wait <= 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case c := <-f.cmds:
			c()
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// LiveStats returns the counters of a fabric that Run drives, read in its event loop; the
// zero Stats once Run has returned (Stats then).
func (f *Fabric) LiveStats() Stats {
	var s Stats
	f.do(func() { s = f.Stats() })
	return s
}

// do runs fn in the event loop's goroutine and waits for it.
// Once Run has returned, fn is not run.
func (f *Fabric) do(fn func()) {
	done := make(chan struct{})
	select {
	case f.cmds <- func() { fn(); close(done) }:
	case <-f.running:
		return
	}
	select {
	case <-done:
	case <-f.running:
	}
}

// TopologyView is GET /v1/topology.
type TopologyView struct {
	Name     string       `json:"name"`
	Switches []SwitchView `json:"switches"`
	Hosts    []string     `json:"hosts"`
}

// SwitchView is one switch and its ports.
type SwitchView struct {
	Name     string     `json:"name"`
	SwitchID uint8      `json:"switch_id"`
	Ports    []PortView `json:"ports"`
}

// PortView is one egress port.
type PortView struct {
	Port  uint8  `json:"port"`
	Peer  string `json:"peer"`
	Shift uint8  `json:"shift"`
	PortStats
}

// View returns the topology with per-port counters and shifts. Call it from the loop (or
// when the fabric is not running).
func (f *Fabric) View() TopologyView {
	v := TopologyView{Name: f.topo.Name}
	for i, n := range f.topo.Nodes {
		if n.Kind == Host {
			v.Hosts = append(v.Hosts, n.Name)
			continue
		}
		sv := SwitchView{Name: n.Name, SwitchID: n.ID}
		for p := range n.Links {
			e := &f.ports[f.base[i]+int32(p)]
			sv.Ports = append(sv.Ports, PortView{Port: e.port, Peer: f.topo.Nodes[e.peer].Name, Shift: e.shift, PortStats: e.Stats})
		}
		v.Switches = append(v.Switches, sv)
	}
	return v
}

// controlHandler serves the control endpoint (docs/fabric.md): the shift channel of
// label.ControlPath, plus GET /v1/topology and GET /v1/stats for people and the demo.
func (f *Fabric) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+label.ControlPath, func(w http.ResponseWriter, r *http.Request) {
		var s label.Shift
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			api.Error(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		if s.Shift > 16 {
			api.Error(w, http.StatusBadRequest, fmt.Sprintf("shift %d: must be at most 16", s.Shift))
			return
		}
		ok := false
		f.do(func() {
			if e := f.egressOf(s.SwitchID, s.Port); e != nil {
				e.shift, ok = s.Shift, true
			}
		})
		if !ok {
			api.Error(w, http.StatusNotFound, fmt.Sprintf("no switch %d port %d", s.SwitchID, s.Port))
			return
		}
		api.JSON(w, http.StatusOK, s)
	})
	mux.HandleFunc("GET "+label.ControlPath, func(w http.ResponseWriter, r *http.Request) {
		out := label.Shifts{Shifts: []label.Shift{}}
		f.do(func() {
			for i := range f.ports {
				e := &f.ports[i]
				if e.shift > 0 {
					out.Shifts = append(out.Shifts, label.Shift{SwitchID: f.topo.Nodes[e.node].ID, Port: e.port, Shift: e.shift})
				}
			}
		})
		api.JSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /v1/topology", func(w http.ResponseWriter, r *http.Request) {
		var v TopologyView
		f.do(func() { v = f.View() })
		api.JSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, r *http.Request) {
		var s Stats
		f.do(func() { s = f.Stats() })
		api.JSON(w, http.StatusOK, s)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api.Error(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}
