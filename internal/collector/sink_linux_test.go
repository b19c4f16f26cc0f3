package collector

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
	"golang.org/x/sys/unix"
)

// reportRecorder is a component that keeps a copy of every report the pipeline handles.
type reportRecorder struct {
	mu sync.Mutex
	rs []telemetry.Report
}

func (r *reportRecorder) Name() string                { return "recorder" }
func (r *reportRecorder) Start(context.Context) error { return nil }
func (r *reportRecorder) Stop(context.Context) error  { return nil }
func (r *reportRecorder) Reports() ingest.Processor   { return r }
func (r *reportRecorder) Process(_ int, rep *telemetry.Report) {
	r.mu.Lock()
	r.rs = append(r.rs, *rep)
	r.mu.Unlock()
}

func (r *reportRecorder) all() []telemetry.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]telemetry.Report(nil), r.rs...)
}

// TestSink runs the collector as the INT sink of the server end of an xdptest.Path. The relay
// inserts 5 hops of INT v2.x (DSCP-marked) into every frame the client sends to the server's
// ports, each frame's hops numbered by a sequence in the first hop's latency. Real UDP
// servers and real TCP connections, over IPv4 and IPv6, with INT on and then off:
//   - every payload arrives byte for byte, and the kernel counted no checksum error;
//   - the pipeline got one report per frame with INT, holding exactly the inserted hops
//     after the host's own (node_id, the interface's index as ingress port);
//   - report_to got each report as TR v2.0, which decodes to the same hops;
//   - the sink counted every frame with INT as stripped and the rest as passed.
func TestSink(t *testing.T) {
	p := xdptest.NewPath(t)
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	collectorIn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer collectorIn.Close()
	// Room for the bursts a sink's batch sends (rmem_max does not bind root's FORCE).
	if rc, err := collectorIn.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) })
	}
	// What report_to sends, read as it comes (a burst would overflow a socket buffer).
	var toMu sync.Mutex
	var toGot [][]byte
	go func() {
		b := make([]byte, 4096)
		for {
			k, _, err := collectorIn.ReadFromUDP(b)
			if err != nil {
				return
			}
			toMu.Lock()
			toGot = append(toGot, bytes.Clone(b[:k]))
			toMu.Unlock()
		}
	}()

	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.Label.Enabled = false
	cfg.Listeners = nil
	cfg.Sinks = []ingest.Sink{{Interface: p.Dev, NodeID: 77, ReportTo: []string{collectorIn.LocalAddr().String()}}}
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rec := &reportRecorder{}
	c, err := New(cfg, Options{NoHTTP: true, Sinks: []Component{rec}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	// The servers.
	udp4, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(p.Server)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp4.Close()
	udp6, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.ParseIP(p.Server6)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp6.Close()
	tcp, err := net.Listen("tcp", net.JoinHostPort("::", "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() { // an echo server
		for {
			cn, err := tcp.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(cn, cn); cn.Close() }()
		}
	}()
	ports := map[uint16]bool{uint16(udp4.LocalAddr().(*net.UDPAddr).Port): true, uint16(udp6.LocalAddr().(*net.UDPAddr).Port): true,
		uint16(tcp.Addr().(*net.TCPAddr).Port): true}

	// The INT source: 5 hops, the first hop's latency the frame's sequence number.
	var mu sync.Mutex
	inserted := map[uint32][]telemetry.Hop{}
	var seq uint32
	buf := make([]byte, 0, 4096)
	hook := func(f []byte) []byte {
		if !toPorts(f, ports) {
			return f
		}
		seq++
		var r telemetry.Report
		r.INT = telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xf100, HopML: 5, RemHops: 3}
		for i := 0; i < 5; i++ {
			h := r.AddHop()
			*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency |
				telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FTxUtil,
				NodeID: uint32(5 - i), IngressPort: uint32(i + 1), EgressPort: uint32(i + 2), HopLatency: seq*10 + uint32(i),
				QueueID: uint16(i), QueueOccupancy: seq % 1000, TxUtil: uint32(i * 7)}
		}
		out, err := enc.InsertINT(buf[:0], f, &r, wire.Marking{DSCP: 0x17})
		if err != nil {
			t.Errorf("InsertINT: %v", err)
			return f
		}
		mu.Lock()
		inserted[seq*10] = append([]telemetry.Hop(nil), r.HopList()...)
		mu.Unlock()
		return out
	}
	csum := xdptest.CsumErrors(t)

	for _, on := range []bool{true, false} {
		if on {
			p.SetHook(hook)
		} else {
			p.SetHook(nil)
		}
		for _, v6 := range []bool{false, true} {
			srv, addr := udp4, p.Server
			if v6 {
				srv, addr = udp6, p.Server6
			}
			name := fmt.Sprintf("int=%v/v6=%v", on, v6)
			// UDP: 100 datagrams of 1 to 1000 bytes.
			cl := p.Dial(t, "udp", net.JoinHostPort(addr, fmt.Sprint(srv.LocalAddr().(*net.UDPAddr).Port)))
			rb := make([]byte, 2048)
			for i := 0; i < 100; i++ {
				want := payload(i, 1+(i*37)%1000)
				if _, err := cl.Write(want); err != nil {
					t.Fatal(err)
				}
				srv.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _, err := srv.ReadFromUDP(rb)
				if err != nil {
					t.Fatalf("%s: udp datagram %d: %v", name, i, err)
				}
				if !bytes.Equal(rb[:n], want) {
					t.Fatalf("%s: udp datagram %d: the server read % x, want % x", name, i, rb[:n], want)
				}
			}
			// TCP: 256 KiB each way through the echo server.
			tc := p.Dial(t, "tcp", net.JoinHostPort(addr, fmt.Sprint(tcp.Addr().(*net.TCPAddr).Port)))
			want := payload(7, 256<<10)
			go tc.Write(want)
			got := make([]byte, len(want))
			tc.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.ReadFull(tc, got); err != nil {
				t.Fatalf("%s: tcp echo: %v", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: tcp echo differs from what was sent", name)
			}
			tc.Close()
		}
	}
	p.SetHook(nil)
	if after := xdptest.CsumErrors(t); !maps.Equal(after, csum) {
		t.Errorf("the kernel's checksum errors went from %v to %v", csum, after)
	}

	// Every frame with INT, in the pipeline: the host's hop, then exactly the inserted hops.
	mu.Lock()
	n := len(inserted)
	mu.Unlock()
	var rs []telemetry.Report
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rs = rec.all(); len(rs) >= n {
			break
		}
	}
	if len(rs) != n || uint64(n) != p.Changed() {
		t.Fatalf("the pipeline got %d reports; the relay inserted INT into %d frames (counted %d)", len(rs), n, p.Changed())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range rs {
		r := &rs[i]
		hs := r.HopList()
		if len(hs) != 6 {
			t.Fatalf("report %d: %d hops, want the host's and 5", i, len(hs))
		}
		host := hs[0]
		if host.NodeID != 77 || host.IngressPort != uint32(p.Ifindex) || host.IngressTS == 0 || !r.ReporterHop {
			t.Fatalf("report %d: the host's hop %+v", i, host)
		}
		want, ok := inserted[hs[1].HopLatency]
		if !ok || !slices.Equal(hs[1:], want) {
			t.Fatalf("report %d: hops\n got %+v\nwant %+v", i, hs[1:], want)
		}
		delete(inserted, hs[1].HopLatency)
	}

	// report_to: one TR v2.0 report per report, with the same hops.
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		toMu.Lock()
		sent = toGot
		toMu.Unlock()
		if len(sent) >= n {
			break
		}
	}
	if len(sent) != n {
		t.Fatalf("report_to got %d reports, want %d", len(sent), n)
	}
	for i, b := range sent {
		got, errs := dec.DecodeAll(wire.InputReport, b)
		if len(errs) != 0 || len(got) != 1 || got[0].Format != telemetry.FormatTR20 {
			t.Fatalf("report_to datagram %d: %d reports, errors %v", i, len(got), errs)
		}
		if !slices.Equal(got[0].HopList(), rs[i].HopList()) || got[0].NodeID != 77 {
			t.Fatalf("report_to datagram %d: node %d, hops\n got %+v\nwant %+v", i, got[0].NodeID, got[0].HopList(), rs[i].HopList())
		}
	}

	st := c.Receiver.Status()
	sp := st.Listeners[0].SinkPackets
	if sp["stripped"] != uint64(n) || sp["ring_full"] != 0 || sp["pass_int"] != 0 || sp["pass_malformed"] != 0 || sp["pass_error"] != 0 {
		t.Errorf("sink_packets %v: want %d stripped and nothing lost", sp, n)
	}
	if e := st.Listeners[0].ReportToErrors; e == nil || *e != 0 {
		t.Errorf("report_to_errors %v, want 0", e)
	}
	if st.Listeners[0].ReportsDecoded != uint64(n) || st.Listeners[0].DecodeErrors.Total != 0 {
		t.Errorf("the sink's listener: %d reports decoded, %d errors; want %d, 0", st.Listeners[0].ReportsDecoded, st.Listeners[0].DecodeErrors.Total, n)
	}
}

// toPorts says whether frame f is a TCP or UDP packet to one of ports.
func toPorts(f []byte, ports map[uint16]bool) bool {
	if len(f) < 14 {
		return false
	}
	et, ip := binary.BigEndian.Uint16(f[12:]), 14
	var l4 int
	var proto uint8
	switch et {
	case 0x0800:
		if len(f) < ip+20 {
			return false
		}
		l4, proto = ip+int(f[ip]&0x0f)*4, f[ip+9]
	case 0x86dd:
		if len(f) < ip+40 {
			return false
		}
		l4, proto = ip+40, f[ip+6]
	default:
		return false
	}
	return (proto == 6 || proto == 17) && len(f) >= l4+4 && ports[binary.BigEndian.Uint16(f[l4+2:])]
}

// payload is n bytes of a pattern of seed.
func payload(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7 + i>>8)
	}
	return b
}
