//go:build linux

package ingest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
	"go.uber.org/goleak"
)

// refReport is a TR v2.0 report with an INT-MD inner packet and a 5-hop stack (the wire
// package's benchmark reference).
func refReport(seq uint32) telemetry.Report {
	var r telemetry.Report
	r.Format = telemetry.FormatTR20
	r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
	r.NodeID, r.Seq, r.HWID = 5, seq, 1
	r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	r.Flags = telemetry.FlagFlow
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 40000, 443, 17
	r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapUDP, Trailer: 2}
	r.INT = telemetry.INTHeader{Version: telemetry.INT2x, ShimType: 1, Bitmap: 0xff00, HopML: 11, RemHops: 3, ShimExtra: 0x17}
	for i := 0; i < 5; i++ {
		h := r.AddHop()
		*h = telemetry.Hop{Fields: 0x07ff, NodeID: uint32(5 - i), IngressPort: 1, EgressPort: 2,
			HopLatency: 1000, QueueID: 3, QueueOccupancy: 40, IngressTS: 1e9, EgressTS: 1e9 + 1000,
			L2IngressPort: 7, L2EgressPort: 8, TxUtil: 55}
	}
	return r
}

// goodReports returns TR v2.0 datagrams of one and of three coalesced reports, or nil when
// the encoder cannot build them yet (the decoders are written concurrently).
func goodReports(t testing.TB) [][]byte {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := refReport(1)
	one, err := enc.Append(nil, &r)
	if err != nil {
		t.Logf("TR v2.0 encoder not ready (%v): good datagrams left out", err)
		return nil
	}
	rs := []telemetry.Report{refReport(2), refReport(2), refReport(2)}
	three, err := enc.AppendBatch(nil, rs)
	if err != nil {
		t.Logf("TR v2.0 batch encoder not ready (%v): good datagrams left out", err)
		return nil
	}
	return [][]byte{one, three}
}

// garbage is what any telemetry port may receive.
var garbage = [][]byte{
	{},
	{0xff},
	{0x00, 0x01, 0x02},
	bytes.Repeat([]byte{0xff}, 40),
	[]byte("GET / HTTP/1.1\r\n\r\n"),
	bytes.Repeat([]byte{0x20}, 100),
}

// expect is what the collector must count for a set of datagrams, computed with the
// offline decoder, DecodeAll, so the test asserts exact numbers whatever the decoders
// accept today.
type expect struct {
	packets, bytes, reports uint64
	byFormat                map[string]uint64
	errs                    map[string]uint64
	errTotal                uint64
}

func (e *expect) add(t *testing.T, in wire.Input, b []byte) {
	if e.byFormat == nil {
		e.byFormat, e.errs = map[string]uint64{}, map[string]uint64{}
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := dec.DecodeAll(in, b)
	e.packets++
	e.bytes += uint64(len(b))
	e.reports += uint64(len(rs))
	for _, r := range rs {
		e.byFormat[r.Format.String()]++
	}
	for _, er := range errs {
		e.errs[er.Reason.String()]++
		e.errTotal++
	}
}

// counting is a test processor: it counts per worker, checks RecvTime and flushes.
type counting struct {
	reports [64]atomic.Uint64
	flushes atomic.Uint64
	badTime atomic.Uint64
}

func (p *counting) Name() string { return "counting" }
func (p *counting) Process(w int, r *telemetry.Report) {
	p.reports[w].Add(1)
	if d := time.Since(time.Unix(0, r.RecvTime)); d < 0 || d > time.Minute {
		p.badTime.Add(1)
	}
}
func (p *counting) Flush(int)          { p.flushes.Add(1) }
func (p *counting) QueueDrops() uint64 { return 7 }
func (p *counting) total() uint64 {
	var n uint64
	for i := range p.reports {
		n += p.reports[i].Load()
	}
	return n
}

func testConfig(ls ...Listener) Config {
	c := Config{Decoder: wire.DefaultConfig()}
	c.Listeners = ls
	for i := range c.Listeners {
		l := &c.Listeners[i]
		if l.Batch == 0 {
			l.Batch = 8
		}
		if l.RcvBuf == 0 {
			l.RcvBuf = 1 << 20
		}
		if l.MaxDatagram == 0 {
			l.MaxDatagram = 2048
		}
		if l.Sockets == 0 {
			l.Sockets = 1
		}
		if l.Name == "" {
			l.Name = l.Format
		}
	}
	return c
}

func send(t *testing.T, addr string, bs ...[]byte) {
	t.Helper()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range bs {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

func loopback(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort("127.0.0.1", port)
}

func TestReceiveExactCounts(t *testing.T) {
	cfg := testConfig(
		Listener{Format: "report", Address: "127.0.0.1", Sockets: 2},
		Listener{Format: "dta", Sockets: 1}, // both families, dual-stack
		Listener{Format: "int-label", Address: "127.0.0.1", MaxDatagram: 512},
	)
	p := &counting{}
	c, err := New(cfg, Deps{Processors: []Processor{p}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	good := goodReports(t)
	var exp [3]expect
	inputs := []wire.Input{wire.InputReport, wire.InputDTA, wire.InputLabel}
	// Several rounds so that both sockets of the report listener see traffic (the kernel
	// picks a socket by the sender's port), good and bad interleaved.
	for round := 0; round < 4; round++ {
		for i := range cfg.Listeners {
			var bs [][]byte
			for j, g := range garbage {
				bs = append(bs, g)
				if i == 0 && j < len(good) {
					bs = append(bs, good[j])
				}
			}
			for _, b := range bs {
				exp[i].add(t, inputs[i], b)
			}
			send(t, loopback(c.ListenerAddr(i)), bs...)
		}
	}
	// The dual-stack listener also takes IPv6.
	if conn, err := net.Dial("udp6", net.JoinHostPort("::1", portOf(c.ListenerAddr(1)))); err == nil {
		conn.Write(garbage[1])
		conn.Close()
		exp[1].add(t, wire.InputDTA, garbage[1])
	} else {
		t.Logf("no IPv6 loopback: %v", err)
	}
	// An oversize datagram on the int-label listener (max_datagram 512) is counted, not decoded.
	send(t, loopback(c.ListenerAddr(2)), make([]byte, 600))
	if err := c.Stop(context.Background()); err != nil { // drains the sockets
		t.Fatal(err)
	}

	st := c.Status()
	var all expect
	for i, l := range st.Listeners {
		e := exp[i]
		if i == 2 {
			e.packets++
			e.bytes += 512 // the kernel copies max_datagram bytes and flags MSG_TRUNC
		}
		if l.PacketsReceived != e.packets || l.BytesReceived != e.bytes || l.ReportsDecoded != e.reports ||
			l.DecodeErrors.Total != e.errTotal || l.KernelDrops != 0 {
			t.Errorf("listener %s: packets %d bytes %d reports %d errors %d kernel drops %d; want %d %d %d %d 0",
				l.Name, l.PacketsReceived, l.BytesReceived, l.ReportsDecoded, l.DecodeErrors.Total, l.KernelDrops,
				e.packets, e.bytes, e.reports, e.errTotal)
		}
		for _, r := range wire.Reasons() {
			if got, want := l.DecodeErrors.ByReason[r.String()], e.errs[r.String()]; got != want {
				t.Errorf("listener %s: %s errors %d, want %d", l.Name, r, got, want)
			}
		}
		for f, n := range l.ReportsByFormat {
			if n != e.byFormat[f] {
				t.Errorf("listener %s: %s reports %d, want %d", l.Name, f, n, e.byFormat[f])
			}
		}
		wantDrops := uint64(0)
		if i == 2 {
			wantDrops = 1
		}
		if l.IngestDrops.Total != wantDrops || l.IngestDrops.ByReason["oversize"] != wantDrops {
			t.Errorf("listener %s: ingest drops %+v, want %d oversize", l.Name, l.IngestDrops, wantDrops)
		}
		all.packets += e.packets
		all.reports += e.reports
		all.errTotal += e.errTotal
	}
	if st.PacketsReceived != all.packets || st.ReportsDecoded != all.reports || st.DecodeErrors.Total != all.errTotal {
		t.Errorf("totals: %d packets %d reports %d errors, want %d %d %d",
			st.PacketsReceived, st.ReportsDecoded, st.DecodeErrors.Total, all.packets, all.reports, all.errTotal)
	}
	if p.total() != all.reports || p.badTime.Load() != 0 {
		t.Errorf("processor saw %d reports (%d with a bad RecvTime), want %d", p.total(), p.badTime.Load(), all.reports)
	}
	if good != nil && exp[0].reports != 4*4 {
		t.Errorf("the good TR datagrams decoded to %d reports, want 16", exp[0].reports)
	}
	if p.flushes.Load() == 0 {
		t.Error("the processor was never flushed")
	}
	if st.ProcessorQueueDrops["counting"] != 7 {
		t.Errorf("processor queue drops %v", st.ProcessorQueueDrops)
	}
	if l := st.Listeners[0]; l.RcvBufRequested != 1<<20 || l.RcvBufGranted < 1<<20 {
		t.Errorf("rcvbuf requested %d granted %d", l.RcvBufRequested, l.RcvBufGranted)
	}
	t.Logf("listener 0: %d reports, errors %v", exp[0].reports, exp[0].errs)
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestMetricsExposition(t *testing.T) {
	cfg := testConfig(Listener{Format: "dta", Address: "127.0.0.1"})
	reg := metrics.NewRegistry()
	c, err := New(cfg, Deps{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	send(t, c.ListenerAddr(0), garbage[1], garbage[2])
	c.Stop(context.Background())
	var buf bytes.Buffer
	reg.WriteText(&buf)
	version, revision := buildLabels()
	var e expect
	e.add(t, wire.InputDTA, garbage[1])
	e.add(t, wire.InputDTA, garbage[2])
	for _, line := range []string{
		`intake_packets_received_total{format="dta",listener="dta"} 2`,
		`intake_bytes_received_total{format="dta",listener="dta"} 4`,
		fmt.Sprintf(`intake_reports_decoded_total{format="dta",listener="dta"} %d`, e.reports),
		fmt.Sprintf(`intake_decode_errors_total{listener="dta",reason="truncated"} %d`, e.errs["truncated"]),
		fmt.Sprintf(`intake_decode_errors_total{listener="dta",reason="unsupported"} %d`, e.errs["unsupported"]),
		`intake_ingest_drops_total{listener="dta",reason="oversize"} 0`,
		`intake_kernel_drops_total{listener="dta"} 0`,
		`intake_socket_rcvbuf_requested_bytes{listener="dta"} 1.048576e+06`,
		`intake_listener_sockets{listener="dta"} 1`,
		`# TYPE intake_packets_received_total counter`,
		`# TYPE intake_uptime_seconds gauge`,
		// Deprecated for the registry's standard series, which are served beside them.
		`# HELP intake_goroutines Goroutines of the process. Deprecated: use go_goroutines.`,
		`# HELP intake_process_start_time_seconds Unix time the process created its collector. Deprecated: use process_start_time_seconds.`,
		`# TYPE go_goroutines gauge`,
		`# TYPE process_start_time_seconds gauge`,
		// No host label: Prometheus adds instance.
		fmt.Sprintf(`intake_build_info{go_version=%q,revision=%q,version=%q} 1`, runtime.Version(), revision, version),
	} {
		if !bytes.Contains(buf.Bytes(), []byte(line+"\n")) {
			t.Errorf("missing %q in\n%s", line, buf.String())
		}
	}
}

func TestStartStopNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := testConfig(
		Listener{Format: "report", Address: "127.0.0.1", Sockets: 3},
		Listener{Format: "dta", Sockets: 2},
	)
	p := &counting{}
	c, err := New(cfg, Deps{Processors: []Processor{p}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err == nil {
			t.Fatal("second Start succeeded")
		}
		send(t, loopback(c.ListenerAddr(0)), garbage[1])
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.Stop(context.Background()) // idempotent
	}
	if st := c.Status(); st.PacketsReceived != 5 || st.Running || st.Listeners[0].Address != "" {
		t.Errorf("after 5 runs: %d packets, running %v, address %q", st.PacketsReceived, st.Running, st.Listeners[0].Address)
	}
	goleak.VerifyNone(t, before) // retries until the goroutines are gone, and names those left
}

func TestStartErrorLeavesNothingOpen(t *testing.T) {
	// Hold a port without SO_REUSEPORT: the collector's bind fails.
	hold, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	port := hold.LocalAddr().(*net.UDPAddr).Port
	cfg := testConfig(
		Listener{Format: "dta", Address: "127.0.0.1", Sockets: 2},
		Listener{Format: "report", Address: "127.0.0.1", Port: port},
	)
	p := &counting{}
	c, err := New(cfg, Deps{Processors: []Processor{p}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(context.Background())
	if err == nil {
		c.Stop(context.Background())
		t.Fatal("Start succeeded on a taken port")
	}
	t.Log(err)
	if c.Running() {
		t.Error("running after a failed Start")
	}
	for _, w := range c.workers {
		if w.sock != nil {
			t.Error("a socket was left open")
		}
	}
}

// blocking holds the worker in its first Process call until released, so that the socket
// overflows.
type blocking struct {
	entered chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func (p *blocking) Name() string { return "blocking" }
func (p *blocking) Process(int, *telemetry.Report) {
	if p.once.CompareAndSwap(false, true) {
		close(p.entered)
		<-p.release
	}
}

// TestKernelDrops: every datagram sent is either received or counted as a kernel drop.
func TestKernelDrops(t *testing.T) {
	good := goodReports(t)
	if good == nil {
		t.Skip("TR v2.0 encoder not ready")
	}
	cfg := testConfig(Listener{Format: "report", Address: "127.0.0.1", RcvBuf: MinRcvBuf, Batch: 1})
	p := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	c, err := New(cfg, Deps{Processors: []Processor{p}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := c.ListenerAddr(0)
	send(t, addr, good[0])
	<-p.entered
	const n = 500
	for i := 0; i < n; i++ {
		send(t, addr, good[0])
	}
	close(p.release)
	c.Stop(context.Background())
	st := c.Status().Listeners[0]
	if st.KernelDrops == 0 || st.PacketsReceived+st.KernelDrops != n+1 {
		t.Errorf("received %d + kernel drops %d != sent %d (granted rcvbuf %d)", st.PacketsReceived, st.KernelDrops, n+1, st.RcvBufGranted)
	}
	t.Logf("received %d, kernel drops %d, rcvbuf granted %d", st.PacketsReceived, st.KernelDrops, st.RcvBufGranted)
}

// TestCoalesce: datagrams arriving 2 ms apart are each read alone without coalescing, and in
// a couple of reads when a worker waits 50 ms after a read that nearly drained its socket.
// Every datagram is received either way.
func TestCoalesce(t *testing.T) {
	good := goodReports(t)[0]
	for _, tc := range []struct {
		coalesce   time.Duration
		minR, maxR uint64
	}{{0, 10, 20}, {50 * time.Millisecond, 1, 4}} {
		co := tc.coalesce
		cfg := testConfig(Listener{Format: "report", Address: "127.0.0.1", Batch: 16, Coalesce: &co})
		c, err := New(cfg, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("udp", loopback(c.ListenerAddr(0)))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			conn.Write(good)
			time.Sleep(2 * time.Millisecond)
		}
		conn.Close()
		testutil.Eventually(t, 3*time.Second, "20 datagrams received", func() bool { return c.Status().PacketsReceived >= 20 })
		c.Stop(context.Background())
		st := c.Status()
		if st.PacketsReceived != 20 || st.SocketReads < tc.minR || st.SocketReads > tc.maxR {
			t.Errorf("coalesce %v: %d datagrams in %d reads; want 20 in %d-%d", co, st.PacketsReceived, st.SocketReads, tc.minR, tc.maxR)
		}
	}
}
