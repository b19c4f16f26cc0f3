package ingest

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// genDatagrams returns n datagrams of a gen format, with the listener input they go to.
func genDatagrams(t *testing.T, format string, n int) [][]byte {
	t.Helper()
	cfg := gen.DefaultConfig()
	cfg.Format = format
	return genStream(t, cfg, n)
}

// TestXDPReceiveExactCounts runs an xdp listener of every input format on a veth pair and
// checks the counters against the offline decoder's count of what was sent, as
// TestReceiveExactCounts does for sockets: good datagrams and garbage, over IPv4 and IPv6.
func TestXDPReceiveExactCounts(t *testing.T) {
	cases := []struct {
		format string // listener format
		gen    string // gen format of the good datagrams
		in     wire.Input
	}{
		{"report", "tr2.0", wire.InputReport},
		{"report", "tr0.5", wire.InputReport},
		{"dta", "dta", wire.InputDTA},
		{"int-label", "int-label", wire.InputLabel},
	}
	for i, tc := range cases {
		t.Run(tc.gen, func(t *testing.T) {
			v := xdptest.New(t)
			port := 41000 + i
			cfg := testConfig(Listener{Format: tc.format, Mode: ModeXDP, Interface: v.Dev, Port: port, Sockets: 1})
			p := &counting{}
			c, err := New(cfg, Deps{Processors: []Processor{p}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.Stop(context.Background())
			var e expect
			good := genDatagrams(t, tc.gen, 50)
			var bs [][]byte
			for j, g := range good {
				bs = append(bs, g)
				if j < len(garbage) {
					bs = append(bs, garbage[j])
				}
			}
			for _, b := range bs {
				e.add(t, tc.in, b)
			}
			v.Send(t, "udp4", net.JoinHostPort(v.Host, fmt.Sprint(port)), bs...)
			v.Send(t, "udp6", net.JoinHostPort(v.Host6, fmt.Sprint(port)), good[:5]...)
			for _, b := range good[:5] {
				e.add(t, tc.in, b)
			}
			// Another port is the kernel's: passed, not counted by the listener.
			v.Send(t, "udp4", net.JoinHostPort(v.Host, fmt.Sprint(port+100)), good[0])
			c.Settle()
			st := c.Status()
			if err := c.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			l := c.Status().Listeners[0]
			if l.PacketsReceived != e.packets || l.BytesReceived != e.bytes || l.ReportsDecoded != e.reports ||
				l.DecodeErrors.Total != e.errTotal || l.KernelDrops != 0 || l.IngestDrops.Total != 0 {
				t.Errorf("packets %d bytes %d reports %d errors %d kernel drops %d ingest drops %d; want %d %d %d %d 0 0",
					l.PacketsReceived, l.BytesReceived, l.ReportsDecoded, l.DecodeErrors.Total, l.KernelDrops, l.IngestDrops.Total,
					e.packets, e.bytes, e.reports, e.errTotal)
			}
			for _, r := range wire.Reasons() {
				if got, want := l.DecodeErrors.ByReason[r.String()], e.errs[r.String()]; got != want {
					t.Errorf("%s errors %d, want %d", r, got, want)
				}
			}
			for f, n := range l.ReportsByFormat {
				if n != e.byFormat[f] {
					t.Errorf("%s reports %d, want %d", f, n, e.byFormat[f])
				}
			}
			if p.total() != e.reports || e.reports == 0 {
				t.Errorf("processor saw %d reports, want %d (> 0)", p.total(), e.reports)
			}
			// veth has native XDP, and AF_XDP in copy mode only.
			if r := st.Listeners[0]; r.Mode != ModeXDP || r.XDPAttach != xdp.ModeNative || r.XDPZeroCopy || r.Address != "xdp:"+v.Dev+":"+fmt.Sprint(port) || r.Interface != v.Dev {
				t.Errorf("running: mode %q interface %q attach %q zero copy %v address %q", r.Mode, r.Interface, r.XDPAttach, r.XDPZeroCopy, r.Address)
			}
			if l.XDPAttach != "" || l.Address != "" {
				t.Errorf("stopped: attach %q address %q", l.XDPAttach, l.Address)
			}
			if got := l.XDPFrames["redirected"]; got != e.packets {
				t.Errorf("xdp redirected %d, want %d (%v)", got, e.packets, l.XDPFrames)
			}
			if l.XDPFrames["pass_other"] == 0 || l.XDPFrames["pass_no_socket"] != 0 || l.XDPFrames["pass_malformed"] != 0 {
				t.Errorf("xdp outcomes %v", l.XDPFrames)
			}
			// Stopped: the program is detached.
			if ids, err := xdp.Attached(ifindex(t, v.Dev)); err != nil || len(ids) != 0 {
				t.Errorf("after Stop, intake's XDP links on %s: %v (%v)", v.Dev, ids, err)
			}
		})
	}
}

func ifindex(t *testing.T, name string) int {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return ifc.Index
}

// TestXDPHotPathAllocs: an AF_XDP worker takes frames, decodes them and hands reports to
// a batch processor without allocating per datagram (the whole process is measured: the
// sender's writes included, which allocate nothing either).
func TestXDPHotPathAllocs(t *testing.T) {
	v := xdptest.New(t)
	cfg := testConfig(Listener{Format: "report", Mode: ModeXDP, Interface: v.Dev, Port: 41500, Sockets: 1, Batch: 64, RcvBuf: 32 << 20})
	plain, batch := &counting{}, &batchCounting{}
	c, err := New(cfg, Deps{Processors: []Processor{plain, batch}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	good := genDatagrams(t, "tr2.0", 64)
	conn := v.Dial(t, "udp4", net.JoinHostPort(v.Host, "41500"))
	send := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := conn.Write(good[i%len(good)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(200) // warm up: first batches, lazily sized state
	c.Settle()
	const n = 5000
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	send(n)
	// Waiting on the published counter itself: Status and Settle allocate.
	testutil.Eventually(t, 3*time.Second, "the datagrams received", func() bool { return sum(c.workers, cPackets) >= 200+n })
	runtime.ReadMemStats(&m1)
	got := c.Status().Listeners[0].PacketsReceived
	if got != 200+n {
		t.Fatalf("received %d datagrams, want %d", got, 200+n)
	}
	// The receiver's once-a-second sampler may run meanwhile; per datagram would be thousands.
	if a := m1.Mallocs - m0.Mallocs; a > 20 {
		t.Errorf("%d allocations for %d datagrams", a, n)
	}
	if plain.total() != 200+n || batch.n.Load() != 200+n {
		t.Errorf("processors saw %d and %d reports, want %d", plain.total(), batch.n.Load(), 200+n)
	}
}

// batchCounting counts the reports handed to its batch path.
type batchCounting struct{ n atomic.Uint64 }

func (p *batchCounting) Name() string                              { return "batch-counting" }
func (p *batchCounting) Process(int, *telemetry.Report)            { p.n.Add(1) }
func (p *batchCounting) ProcessBatch(_ int, rs []telemetry.Report) { p.n.Add(uint64(len(rs))) }

// TestXDPRecvTimePerFrame: an AF_XDP worker gives each frame's reports the time the XDP
// program redirected that frame (its metadata), not one time per ring read: 300 frames read
// in batches of up to 64 get 300 receive times, strictly increasing in send order, all
// within the run.
func TestXDPRecvTimePerFrame(t *testing.T) {
	v := xdptest.New(t)
	rec := newRecorder("rec", nil)
	coalesce := 20 * time.Millisecond // a read that drained the ring waits: the next takes many
	cfg := testConfig(Listener{Format: "report", Mode: ModeXDP, Interface: v.Dev, Port: 41010, Sockets: 1, Batch: 64, Coalesce: &coalesce, RcvBuf: 1 << 22})
	c, err := New(cfg, Deps{Processors: []Processor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	const n = 300
	before := time.Now().UnixNano()
	v.Send(t, "udp4", net.JoinHostPort(v.Host, "41010"), seqReports(t, n, 1, 1)...)
	c.Settle()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	checkRecvTimes(t, rec.got[0], n, c.Status().Listeners[0].SocketReads, before, after)
}
