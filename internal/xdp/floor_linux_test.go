package xdp

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/xdptest"
)

// TestFloorFrames runs the floor program on frames of every kind with BPF_PROG_TEST_RUN:
// each is dropped and counted, one count per run, and with BPF statistics on the runs are
// in RunStats.
func TestFloorFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	f, err := newFloor(xdpDropAction)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stats, err := EnableRunStats()
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	frames := []struct {
		name   string
		f      []byte
		repeat uint32
	}{
		{"ipv4 udp", frame(t, ethV4, ipv4, udp12, payload), 1},
		{"ipv6 udp", frame(t, ethV6, ipv6, udp12, payload), 3},
		{"arp", frame(t, "ffffffffffff 020000000002 0806", "0001080006040001", "020000000002 0a000002 000000000000 0a000001"), 1},
		{"malformed ipv4", frame(t, ethV4, "4f00 0024 0000 0000 4011"), 1},
		{"ethernet header only", frame(t, ethV4), 2},
	}
	var want uint64
	for _, c := range frames {
		ret, err := f.prog.Run(&ebpf.RunOptions{Data: c.f, Repeat: c.repeat})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ret != xdpDrop {
			t.Errorf("%s: action %d, want XDP_DROP", c.name, ret)
		}
		want += uint64(c.repeat)
		if got, err := f.Count(); err != nil || got != want {
			t.Fatalf("after %s: count %d (%v), want %d", c.name, got, err, want)
		}
	}
	if runs, d := f.RunStats(); runs != want || d <= 0 {
		t.Errorf("RunStats %d runs in %v, want %d runs and some time", runs, d, want)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Count(); err == nil {
		t.Error("Count after Close: no error")
	}
}

// TestFloorAttach attaches the floor to a veth: datagrams sent across it are counted and
// never reach a UDP socket on their port; after Close they do.
func TestFloorAttach(t *testing.T) {
	v := xdptest.New(t)
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(v.Host), Port: 40041})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	f, err := AttachFloor(v.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Mode() != ModeNative {
		t.Errorf("mode %q: veth has native XDP", f.Mode())
	}
	dst := net.JoinHostPort(v.Host, "40041")
	const n = 10
	for range n {
		v.Send(t, "udp4", dst, []byte("floor"))
	}
	// The frames are counted in the receiving CPU's softirq, after the send returned. The
	// peer's kernel may send a frame of its own (IPv6 router solicitation), hence at least.
	var got uint64
	testutil.Eventually(t, 2*time.Second, fmt.Sprintf("%d frames counted", n), func() bool {
		if got, err = f.Count(); err != nil {
			t.Fatal(err)
		}
		return got >= n
	})
	if got < n {
		t.Errorf("count %d, want at least %d", got, n)
	}
	uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if m, _, err := uc.ReadFrom(make([]byte, 100)); err == nil {
		t.Errorf("the UDP socket received a %d-byte datagram that the floor should have dropped", m)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	v.Send(t, "udp4", dst, []byte("after"))
	uc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if m, _, err := uc.ReadFrom(make([]byte, 100)); err != nil || m != len("after") {
		t.Errorf("after Close: read %d bytes, %v; want the datagram", m, err)
	}
}

// TestFloorPass: the pass floor (bench sink's) returns XDP_PASS for every frame and counts
// it; attached to a veth, datagrams sent across it are counted and reach a UDP socket on
// their port byte for byte.
func TestFloorPass(t *testing.T) {
	v := xdptest.New(t)
	f, err := newFloor(xdpPassAction)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range [][]byte{frame(t, ethV4, ipv4, udp12, payload), frame(t, ethV4)} {
		ret, err := f.prog.Run(&ebpf.RunOptions{Data: fr})
		if err != nil || ret != xdpPass {
			t.Errorf("frame %d: action %d (%v), want XDP_PASS", i, ret, err)
		}
	}
	if n, err := f.Count(); err != nil || n != 2 {
		t.Errorf("count %d (%v) after 2 runs", n, err)
	}
	f.Close()

	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(v.Host), Port: 40042})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	if f, err = AttachFloorPass(v.Dev); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Mode() != ModeNative {
		t.Errorf("mode %q: veth has native XDP", f.Mode())
	}
	const n = 10
	for i := range n {
		v.Send(t, "udp4", net.JoinHostPort(v.Host, "40042"), []byte(fmt.Sprint("pass ", i)))
	}
	buf := make([]byte, 100)
	for i := range n {
		uc.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, _, err := uc.ReadFrom(buf)
		if err != nil || string(buf[:m]) != fmt.Sprint("pass ", i) {
			t.Fatalf("datagram %d: %q, %v; want %q", i, buf[:m], err, fmt.Sprint("pass ", i))
		}
	}
	// The peer's kernel may send a frame of its own (IPv6 router solicitation), hence at least.
	if got, err := f.Count(); err != nil || got < n {
		t.Errorf("count %d (%v), want at least %d", got, err, n)
	}
}
