package gen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
	"golang.org/x/sys/unix"
)

// TestSendData sends INT-MD data packets out of the test's end of a veth pair into a
// namespace. An AF_PACKET socket there reads exactly the frames DataFrames built, a lap of
// the ring repeating them; each
// decodes (InputINTMD) to the INT header and hops of the generator's report, and to the
// flow gen sent; and a UDP socket there receives every one: the kernel checked the IP and
// UDP checksums (and counted no checksum error).
func TestSendData(t *testing.T) {
	v := xdptest.New(t)
	var peerMAC net.HardwareAddr
	var peerIndex int
	err := v.In(func() error {
		ifs, err := net.Interfaces()
		for _, ifi := range ifs {
			if ifi.Flags&net.FlagLoopback == 0 {
				peerMAC, peerIndex = ifi.HardwareAddr, ifi.Index
			}
		}
		return err
	})
	if err != nil || peerIndex == 0 {
		t.Fatalf("the namespace's interface: %v", err)
	}
	for _, tc := range []struct {
		name    string
		version string
		v6      bool
		m       wire.Marking
		npt     uint8
		hostINT bool
	}{
		{name: "v2.x dscp ipv4", version: "2.x", m: wire.Marking{DSCP: 0x17}},
		{name: "v2.x npt1 ipv6", version: "2.x", v6: true, m: wire.Marking{Port: 5555}, npt: 1},
		{name: "v2.x npt2 ipv4", version: "2.x", m: wire.Marking{Port: 5555}, npt: 2},
		{name: "v1.0 dscp ipv6", version: "1.0", v6: true, m: wire.Marking{DSCP: 0x17}},
		{name: "v0.5 port ipv4", version: "0.5", m: wire.Marking{Port: 5555}},
		{name: "host-int ipv4", version: "0.5", m: wire.Marking{DSCP: 0x17}, hostINT: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.INTVersion, cfg.Flows, cfg.Ring, cfg.Payload = tc.version, 8, 32, 100
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			to := netip.MustParseAddrPort(v.Peer + ":7001")
			dc := DataConfig{Iface: v.Dev, Marking: tc.m, NPT: tc.npt, HostINT: tc.hostINT}
			if tc.v6 {
				to = netip.AddrPortFrom(netip.MustParseAddr(v.Peer6), 7001)
				dc.DstMAC = peerMAC // IPv6 neighbours are not looked up
			}
			dc.To = to
			if err := dc.Validate(cfg); err != nil {
				t.Fatal(err)
			}
			if tc.v6 && dc.From.String() != v.Host6 || !tc.v6 && (dc.From.String() != v.Host || !bytes.Equal(dc.DstMAC, peerMAC)) {
				t.Fatalf("validated from %v, next hop %v; want %s and the neighbour's %v", dc.From, dc.DstMAC, v.Host, peerMAC)
			}
			const n = 40 // more than the ring: a lap repeats
			port := to.Port()
			if tc.m.Port != 0 {
				port = tc.m.Port
			}
			frames, udp, csum := receiveData(t, v, peerIndex, tc.v6, port, n)
			st, err := SendData(context.Background(), g, &dc, SendConfig{Count: n})
			if err != nil || st.Datagrams != n || st.SendErrors != 0 {
				t.Fatalf("SendData: %+v, %v", st, err)
			}
			got := <-frames
			if len(got) != n {
				t.Fatalf("the namespace read %d frames, want %d", len(got), n)
			}
			var want [][]byte
			DataFrames(g, &dc, uint64(cfg.Ring), func(_ uint64, f []byte, _ *telemetry.Report) error {
				want = append(want, append([]byte(nil), f...))
				return nil
			})
			wcfg := g.WireConfig()
			wcfg.INTPort, wcfg.Quirks.HostINT = 5555, tc.hostINT
			d, _ := wire.NewDecoder(wcfg)
			i := 0
			g.Walk(n, func(_ uint64, _ []byte, rs []telemetry.Report) error {
				if !bytes.Equal(got[i], want[i%cfg.Ring]) {
					t.Errorf("frame %d differs from DataFrames'", i)
				}
				checkDataFrame(t, d, got[i], &rs[0], &dc, tc.v6)
				i++
				return nil
			}, nil)
			if c := <-udp; c != n {
				t.Errorf("the UDP socket in the namespace received %d datagrams, want %d", c, n)
			}
			if c := <-csum; c != 0 {
				t.Errorf("the namespace counted %d UDP checksum errors", c)
			}
		})
	}
}

// checkDataFrame decodes one data frame and compares it with the generator's report r.
func checkDataFrame(t *testing.T, d *wire.Decoder, frame []byte, r *telemetry.Report, dc *DataConfig, v6 bool) {
	t.Helper()
	rs, errs := d.DecodeAll(wire.InputINTMD, frame)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("decode: %d reports, errors %v", len(rs), errs)
	}
	got := &rs[0]
	if got.INT.Version != r.INT.Version || got.INT.Bitmap != r.INT.Bitmap || got.INT.HopML != r.INT.HopML ||
		got.INT.RemHops != r.INT.RemHops || got.INT.MaxHops != r.INT.MaxHops {
		t.Errorf("INT header %+v, the generator's %+v", got.INT, r.INT)
	}
	if got.NHops != r.NHops || got.NHops == 0 {
		t.Fatalf("%d hops, the generator's %d", got.NHops, r.NHops)
	}
	for j, h := range r.HopList() {
		if got.Hops[j] != h {
			t.Errorf("hop %d: %+v, the generator's %+v", j, got.Hops[j], h)
		}
	}
	k := got.Flow
	dport := dc.To.Port() // the original: wire restores v2.x NPT 1's port and v0.5's tail's
	if k.SrcAddr() != dc.From || k.DstAddr() != dc.To.Addr() || k.SrcPort != r.Flow.SrcPort || k.DstPort != dport || k.Proto != 17 || k.IPv6 != v6 {
		t.Errorf("flow %v:%d -> %v:%d proto %d, want %v:%d -> %v", k.SrcAddr(), k.SrcPort, k.DstAddr(), k.DstPort, k.Proto, dc.From, r.Flow.SrcPort, dc.To)
	}
}

// receiveData starts, inside the namespace, an AF_PACKET socket on its interface and a UDP
// socket on port, and reads n UDP frames to port and n datagrams. The third channel gets
// how much the namespace's UDP InCsumErrors grew.
func receiveData(t *testing.T, v *xdptest.Veth, ifindex int, v6 bool, port uint16, n int) (<-chan [][]byte, <-chan int, <-chan uint64) {
	t.Helper()
	var fd int
	var udp *net.UDPConn
	var before uint64
	host := v.Peer
	if v6 {
		host = v.Peer6
	}
	err := v.In(func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		if err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
			return err
		}
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		before = udpCsumErrors(v6)
		udp, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), port)))
		return err
	})
	if err != nil {
		t.Fatalf("sockets in the namespace: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd); udp.Close() })
	frames, count, csum := make(chan [][]byte, 1), make(chan int, 1), make(chan uint64, 1)
	go func() {
		var got [][]byte
		buf := make([]byte, 1<<16)
		deadline := time.Now().Add(5 * time.Second)
		for len(got) < n && time.Now().Before(deadline) {
			k, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil || k < 14 {
				continue
			}
			if f := buf[:k]; udpDstPort(f) == int(port) {
				got = append(got, append([]byte(nil), f...))
			}
		}
		frames <- got
	}()
	go func() {
		c := 0
		buf := make([]byte, 1<<16)
		for c < n {
			udp.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := udp.Read(buf); err != nil {
				break
			}
			c++
		}
		count <- c
		var after uint64
		v.In(func() error { after = udpCsumErrors(v6); return nil })
		csum <- after - before
	}()
	return frames, count, csum
}

// udpDstPort is the UDP destination port of an IPv4 or IPv6 frame, or -1.
func udpDstPort(f []byte) int {
	switch {
	case len(f) >= 42 && f[12] == 0x08 && f[13] == 0 && f[23] == 17:
		l4 := 14 + int(f[14]&0x0f)*4
		if len(f) >= l4+4 {
			return int(f[l4+2])<<8 | int(f[l4+3])
		}
	case len(f) >= 62 && f[12] == 0x86 && f[13] == 0xdd && f[20] == 17:
		return int(f[56])<<8 | int(f[57])
	}
	return -1
}

// udpCsumErrors reads UDP's (or UDP over IPv6's) InCsumErrors in the calling thread's
// namespace.
func udpCsumErrors(v6 bool) uint64 {
	file, key := "/proc/thread-self/net/snmp", "Udp:"
	if v6 {
		file, key = "/proc/thread-self/net/snmp6", "Udp6InCsumErrors"
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		switch {
		case len(fields) == 2 && fields[0] == key:
			var n uint64
			fmt.Sscan(fields[1], &n)
			return n
		case len(fields) > 1 && fields[0] == key && names == nil:
			names = fields
		case len(fields) > 1 && fields[0] == key:
			for j := range fields {
				if j < len(names) && names[j] == "InCsumErrors" {
					var n uint64
					fmt.Sscan(fields[j], &n)
					return n
				}
			}
		}
	}
	return 0
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
