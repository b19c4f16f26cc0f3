//go:build linux

package gen

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
	"golang.org/x/sys/unix"
)

// receiver is a plain UDP socket with a receive buffer large enough for the tests' bursts.
func receiver(t testing.TB, network, addr string) *net.UDPConn {
	t.Helper()
	la, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP(network, la)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	rc, _ := c.SyscallConn()
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20) != nil {
			c.SetReadBuffer(32 << 20)
		}
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// receive reads n datagrams (or until a quiet second) in a goroutine.
func receive(c *net.UDPConn, n int) <-chan [][]byte {
	out := make(chan [][]byte, 1)
	go func() {
		var got [][]byte
		buf := make([]byte, 65536)
		for len(got) < n {
			c.SetReadDeadline(time.Now().Add(time.Second))
			m, _, err := c.ReadFromUDP(buf)
			if err != nil {
				break
			}
			got = append(got, append([]byte(nil), buf[:m]...))
		}
		// Anything beyond n is a bug too: wait briefly for extras.
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if m, _, err := c.ReadFromUDP(buf); err == nil {
			got = append(got, append([]byte(nil), buf[:m]...))
		}
		out <- got
	}()
	return out
}

func send(t *testing.T, g *Generator, cfg SendConfig) (*Sender, Stats) {
	t.Helper()
	s, err := NewSender(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestSendExact sends N datagrams to a loopback socket below its capacity and checks that
// exactly N arrive, byte for byte the stream Walk rebuilds, and that they decode to the
// reports the generator built; the Stats agree with the generator's Truth.
func TestSendExact(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg     func(c *Config)
		sockets int
		network string
		n       int
		gso     int
	}{
		"tr2.0-batch8":                 {func(c *Config) { c.Batch, c.Ring = 8, 500 }, 1, "udp4", 1500, 0},
		"tr0.5-fresh":                  {func(c *Config) { c.Format, c.Fresh = "tr0.5", true }, 1, "udp4", 800, 0},
		"tr2.0-fresh-batch16-2sockets": {func(c *Config) { c.Fresh, c.Batch, c.Fields = true, 16, 9 }, 2, "udp4", 600, 0},
		"tr1.0-xd-2sockets":            {func(c *Config) { c.Format, c.Mode, c.Ring = "tr1.0", "xd", 300 }, 2, "udp4", 1000, 0},
		"dta-postcard-ipv6":            {func(c *Config) { c.Format, c.DTA.Op, c.DTA.HeaderLen, c.Batch, c.Ring = "dta", "postcard", 3, 16, 200 }, 1, "udp6", 700, 0},
		"int-label":                    {func(c *Config) { c.Format, c.Ring = "int-label", 100 }, 1, "udp4", 300, 0},
		// GSO: the kernel splits each send back into the datagrams, in order.
		"tr2.0-gso8":             {func(c *Config) { c.Ring = 300 }, 1, "udp4", 1000, 8},
		"tr2.0-batch8-gso64":     {func(c *Config) { c.Batch, c.Ring = 8, 500 }, 1, "udp4", 1500, 64},
		"dta-postcard-ipv6-gso4": {func(c *Config) { c.Format, c.DTA.Op, c.DTA.HeaderLen, c.Batch, c.Ring = "dta", "postcard", 3, 16, 200 }, 1, "udp6", 700, 4},
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			tc.cfg(&c)
			g := mustNew(t, c)
			addr := "127.0.0.1:0"
			if tc.network == "udp6" {
				addr = "[::1]:0"
			}
			rx := receiver(t, tc.network, addr)
			got := receive(rx, tc.n)
			_, st := send(t, g, SendConfig{To: rx.LocalAddr().String(), Sockets: tc.sockets, Rate: 20000, Count: uint64(tc.n), Vector: 32, GSO: tc.gso})
			dgrams := <-got
			if len(dgrams) != tc.n || st.Datagrams != uint64(tc.n) || st.Claimed != uint64(tc.n) || st.SendErrors != 0 {
				t.Fatalf("received %d, stats %+v; want %d", len(dgrams), st, tc.n)
			}
			want := map[string]int{}
			var wantOrder [][]byte
			dec, _ := wire.NewDecoder(g.WireConfig())
			var rd wire.Reader
			var r telemetry.Report
			reports := map[string][]telemetry.Report{}
			g.Walk(uint64(tc.n), func(_ uint64, b []byte, rs []telemetry.Report) error {
				want[string(b)]++
				wantOrder = append(wantOrder, append([]byte(nil), b...))
				reports[string(b)] = append([]telemetry.Report(nil), rs...)
				return nil
			}, nil)
			var nrep, nbytes uint64
			for i, b := range dgrams {
				if tc.sockets == 1 && !bytes.Equal(b, wantOrder[i]) { // one socket keeps the order on loopback
					t.Fatalf("datagram %d differs from the stream", i)
				}
				if want[string(b)] == 0 {
					t.Fatalf("datagram %d was not in the stream (or came twice)", i)
				}
				want[string(b)]--
				rd.Reset(dec, g.Input(), b)
				for j, w := range reports[string(b)] {
					if err := rd.Next(&r); err != nil || !r.Equal(&w) {
						t.Fatalf("datagram %d report %d: %v\n%s", i, j, err, diff(&r, &w))
					}
					nrep++
				}
				nbytes += uint64(len(b))
			}
			tr := g.Truth(st.Claimed)
			if st.Reports != nrep || tr.Reports != nrep || st.Bytes != nbytes || tr.Bytes != nbytes {
				t.Fatalf("reports: stats %d truth %d received %d; bytes: stats %d truth %d received %d",
					st.Reports, tr.Reports, nrep, st.Bytes, tr.Bytes, nbytes)
			}
		})
	}
}

// TestSendRateAndRuns: --rate bounds the send rate from above (timing asserted loosely: a
// run cannot end sooner than the rate allows), counts are exact, and a second run
// continues the stream, so sequence numbers keep increasing.
func TestSendRateAndRuns(t *testing.T) {
	c := DefaultConfig()
	c.Ring = 64
	g := mustNew(t, c)
	rx := receiver(t, "udp4", "127.0.0.1:0")
	got := receive(rx, 400)
	s, err := NewSender(g, SendConfig{To: rx.LocalAddr().String(), Rate: 2000, Count: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var total time.Duration
	for run := 0; run < 2; run++ {
		st, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Datagrams != 200 {
			t.Fatalf("run %d: %+v", run, st)
		}
		// 200 datagrams at 2000/s with a burst of 2: at least 99 ms.
		if st.Elapsed < 99*time.Millisecond || st.Elapsed > 5*time.Second {
			t.Fatalf("run %d: 200 datagrams at 2000/s took %v", run, st.Elapsed)
		}
		total += st.Elapsed
	}
	dgrams := <-got
	if len(dgrams) != 400 {
		t.Fatalf("received %d, want 400", len(dgrams))
	}
	i := 0
	g.Walk(400, func(_ uint64, b []byte, _ []telemetry.Report) error {
		if !bytes.Equal(b, dgrams[i]) {
			t.Fatalf("datagram %d differs: runs must continue the stream", i)
		}
		i++
		return nil
	}, nil)
}

// TestSendDurationAndCancel: --duration and a cancelled context end a run without a count.
func TestSendDurationAndCancel(t *testing.T) {
	c := DefaultConfig()
	c.Ring = 64
	g := mustNew(t, c)
	rx := receiver(t, "udp4", "127.0.0.1:0")
	go func() { // drain, so that nothing backs up
		buf := make([]byte, 65536)
		for {
			if _, _, err := rx.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	var progress strings.Builder
	_, st := send(t, g, SendConfig{To: rx.LocalAddr().String(), Rate: 1000, Duration: 150 * time.Millisecond, Progress: &progress})
	if st.Elapsed < 150*time.Millisecond || st.Elapsed > 3*time.Second || st.Datagrams == 0 || st.Datagrams > 1000 {
		t.Fatalf("duration run: %+v", st)
	}
	if st.Claimed != st.Datagrams+st.SendErrors {
		t.Fatalf("claimed %d != sent %d + errors %d", st.Claimed, st.Datagrams, st.SendErrors)
	}

	s, err := NewSender(g, SendConfig{To: rx.LocalAddr().String(), Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	st, err = s.Run(ctx)
	if err != nil || st.Elapsed > 3*time.Second || st.Datagrams == 0 {
		t.Fatalf("cancelled run: %+v %v", st, err)
	}
}

// TestSendErrorsCounted: to a port nobody listens on, every datagram is sent or counted as
// an error (loopback answers with ICMP port unreachable, which fails a later send).
func TestSendErrorsCounted(t *testing.T) {
	c := DefaultConfig()
	c.Ring = 16
	g := mustNew(t, c)
	rx := receiver(t, "udp4", "127.0.0.1:0")
	addr := rx.LocalAddr().String()
	rx.Close()
	_, st := send(t, g, SendConfig{To: addr, Count: 300, Rate: 10000})
	if st.Datagrams+st.SendErrors != 300 || st.Claimed != 300 {
		t.Fatalf("%+v", st)
	}
}

func TestSendConfigErrors(t *testing.T) {
	g := mustNew(t, func() Config { c := DefaultConfig(); c.Ring = 4; return c }())
	for _, tc := range []struct {
		cfg  SendConfig
		want string
	}{
		{SendConfig{To: "127.0.0.1:1", Sockets: 300}, "sockets: 300: allowed is 1 to 256"},
		{SendConfig{To: "127.0.0.1:1", Vector: 2000}, "vector: 2000: allowed is 1 to 1024"},
		{SendConfig{To: "127.0.0.1:1", Rate: -1}, "rate: -1: must be 0"},
		{SendConfig{To: "nonsense"}, "to: "},
	} {
		if _, err := NewSender(g, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// TestSendNoAlloc: a step of the send loop (claim, copy from the ring, patch, sendmmsg)
// allocates nothing, on a ring's first lap and on later ones (INT-label exports' times
// patched too); nor does a fresh stream's (claim, build, sendmmsg), the demo's, whose
// network model runs bursts, build-ups and path changes as it goes.
func TestSendNoAlloc(t *testing.T) {
	ring := DefaultConfig()
	ring.Ring, ring.Batch = 100, 4
	label := DefaultConfig()
	label.Format, label.Ring = "int-label", 100
	fresh := DefaultConfig()
	fresh.Fresh, fresh.Flows, fresh.Interval = true, 200, 50*time.Millisecond // 40 s of generated time: bursts, build-ups, path changes
	for name, c := range map[string]Config{"ring": ring, "int-label": label, "fresh": fresh} {
		g := mustNew(t, c)
		rx := receiver(t, "udp4", "127.0.0.1:0")
		for _, gso := range []int{0, 8} {
			s, err := NewSender(g, SendConfig{To: rx.LocalAddr().String(), GSO: gso})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w := s.workers[0]
			if a := testing.AllocsPerRun(50, func() {
				if _, err := w.step(16); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Fatalf("%s, gso %d: %.1f allocations per step", name, gso, a)
			}
		}
	}
}

// BenchmarkSend is the send loop's cost per datagram: ring copy, sequence patch and
// sendmmsg of 64, to a loopback socket that is not read (the kernel drops what overflows,
// which the sender does not see).
func BenchmarkSend(b *testing.B) { benchSend(b, 0) }

// BenchmarkSendGSO is BenchmarkSend with 16 datagrams per UDP_SEGMENT send.
func BenchmarkSendGSO(b *testing.B) { benchSend(b, 16) }

func benchSend(b *testing.B, gso int) {
	c := DefaultConfig()
	g := mustNew(b, c)
	rx := receiver(b, "udp4", "127.0.0.1:0")
	s, err := NewSender(g, SendConfig{To: rx.LocalAddr().String(), Count: uint64(b.N), GSO: gso})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(int64(g.MaxLen()))
	b.ReportAllocs()
	b.ResetTimer()
	st, err := s.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(st.DatagramsPerSec(), "datagrams/s")
}

// BenchmarkRawSendmmsg is the ceiling: sendmmsg of 64 prebuilt copies of the reference
// packet (TR v2.0, 5 hops of 8 fields) to a loopback socket, nothing else.
func BenchmarkRawSendmmsg(b *testing.B) {
	c := DefaultConfig()
	c.Ring = 1
	g := mustNew(b, c)
	pkt := g.ring
	rx := receiver(b, "udp4", "127.0.0.1:0")
	conn, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const vlen = 64
	iovs := make([]unix.Iovec, vlen)
	msgs := make([]unix.Mmsghdr, vlen)
	for i := range msgs {
		iovs[i].Base = &pkt[0]
		iovs[i].SetLen(len(pkt))
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.Iovlen = 1
	}
	f, _ := conn.File()
	defer f.Close()
	fd := int(f.Fd())
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		k := min(vlen, b.N-sent)
		n, err := sendmmsg(fd, msgs[:k])
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "datagrams/s")
}

func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}
