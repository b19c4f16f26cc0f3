package xdptest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Path is a routed path from a client namespace to the test's namespace through a relay
// that can act as an INT source, for testing an INT sink on Dev:
//
//	ns CLI: c0 (Client, Client6) ── c1 [ns MID] s1 ── Dev (this namespace: Server, Server6)
//
// The relay (goroutines of the test process, AF_PACKET sockets on c1 and s1) forwards
// every frame from c1 to s1, rewriting the MACs (src s1, dst Dev) and passing it through
// the hook, which may insert INT; frames from s1 go to c1 with their MACs rewritten and
// nothing inserted. Both hosts route the other's prefix via a gateway whose static
// neighbour entry is the relay's MAC on their side. c0 and Dev send with tx checksum
// offload, TSO and GSO off (SIOCETHTOOL), so frames carry real checksums and at most
// 1500 bytes; s1 and Dev take MTU 1500+INTHeadroom so that a full-size frame with INT
// inserted still fits, and this namespace's routes to the client say MTU 1500.
type Path struct {
	CLI, MID string // the namespaces
	// Dev is the interface in the test's namespace where the sink attaches; Ifindex is its
	// index. Servers listen on Server and Server6.
	Dev     string
	Ifindex int
	// The addresses: the client's in CLI, the server's on Dev.
	Client, Client6 string
	Server, Server6 string

	hook                         atomic.Pointer[func([]byte) []byte]
	forwarded, returned, changed atomic.Uint64
}

// INTHeadroom is how many bytes a hook may add to a 1500-byte frame.
const INTHeadroom = 512

// The path's MAC addresses (locally administered).
const (
	c0MAC = "02:00:00:49:59:01"
	c1MAC = "02:00:00:49:59:02"
	s1MAC = "02:00:00:49:59:03"
	s0MAC = "02:00:00:49:59:04"
)

// NewPath builds the path and its relay, with INT off (no hook), and removes both when
// the test ends. It skips the test, saying why, where it cannot be built, as New does.
func NewPath(t testing.TB) *Path {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the INT sink path needs root (CAP_NET_ADMIN) to create veth pairs in network namespaces and AF_PACKET sockets")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipped: iproute2's ip is not installed (apt-get install iproute2)")
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, seq.Add(1))
	p := &Path{CLI: "intake-cli-" + id, MID: "intake-mid-" + id, Dev: "is" + id,
		Client: "10.203.1.2", Client6: "fd00:203:1::2", Server: "10.203.2.1", Server6: "fd00:203:2::1"}
	const gw, gw6, sgw, sgw6 = "10.203.1.1", "fd00:203:1::1", "10.203.2.2", "fd00:203:2::2"
	mtu := fmt.Sprint(1500 + INTHeadroom)
	steps := [][]string{
		{"netns", "add", p.CLI},
		{"netns", "add", p.MID},
		{"link", "add", "c0", "netns", p.CLI, "address", c0MAC, "type", "veth", "peer", "name", "c1", "netns", p.MID, "address", c1MAC},
		{"link", "add", p.Dev, "address", s0MAC, "mtu", mtu, "type", "veth", "peer", "name", "s1", "netns", p.MID, "address", s1MAC, "mtu", mtu},
		{"-n", p.CLI, "addr", "add", p.Client + "/24", "dev", "c0"},
		{"-n", p.CLI, "addr", "add", p.Client6 + "/64", "dev", "c0", "nodad"},
		{"-n", p.CLI, "link", "set", "c0", "up"},
		{"-n", p.CLI, "link", "set", "lo", "up"},
		{"-n", p.CLI, "neigh", "replace", gw, "lladdr", c1MAC, "dev", "c0", "nud", "permanent"},
		{"-n", p.CLI, "neigh", "replace", gw6, "lladdr", c1MAC, "dev", "c0", "nud", "permanent"},
		{"-n", p.CLI, "route", "add", "10.203.2.0/24", "via", gw, "dev", "c0"},
		{"-n", p.CLI, "route", "add", "fd00:203:2::/64", "via", gw6, "dev", "c0"},
		// MID has no addresses, and no IPv6 link-local chatter of its own either.
		{"netns", "exec", p.MID, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"-n", p.MID, "link", "set", "c1", "up"},
		{"-n", p.MID, "link", "set", "s1", "up"},
		{"addr", "add", p.Server + "/24", "dev", p.Dev},
		{"addr", "add", p.Server6 + "/64", "dev", p.Dev, "nodad"},
		{"link", "set", p.Dev, "up"},
		{"neigh", "replace", sgw, "lladdr", s1MAC, "dev", p.Dev, "nud", "permanent"},
		{"neigh", "replace", sgw6, "lladdr", s1MAC, "dev", p.Dev, "nud", "permanent"},
		{"route", "add", "10.203.1.0/24", "via", sgw, "dev", p.Dev, "mtu", "1500"},
		{"route", "add", "fd00:203:1::/64", "via", sgw6, "dev", p.Dev, "mtu", "1500"},
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", p.Dev).Run()
		exec.Command("ip", "netns", "del", p.CLI).Run()
		exec.Command("ip", "netns", "del", p.MID).Run()
	})
	for _, a := range steps {
		if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
			t.Skipf("skipped: the kernel refused the INT sink path: ip %s: %v: %s", strings.Join(a, " "), err, out)
		}
	}
	if err := inNS(p.CLI, func() error { return offloadsOff("c0") }); err != nil {
		t.Fatalf("c0 offloads off: %v", err)
	}
	if err := offloadsOff(p.Dev); err != nil {
		t.Fatalf("%s offloads off: %v", p.Dev, err)
	}
	ifi, err := net.InterfaceByName(p.Dev)
	if err != nil {
		t.Fatal(err)
	}
	p.Ifindex = ifi.Index
	p.startRelay(t)
	for i := 0; i < 100; i++ {
		c, _ := os.ReadFile("/sys/class/net/" + p.Dev + "/carrier")
		out, _ := exec.Command("ip", "-n", p.CLI, "link", "show", "c0").Output()
		if strings.TrimSpace(string(c)) == "1" && strings.Contains(string(out), "LOWER_UP") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// SetHook sets the function the relay passes each frame from the client through (nil: INT
// off). It runs on the relay's one forwarding goroutine, so it may reuse a buffer across
// calls; what it returns is sent before the next call. It must return frames it cannot
// insert INT into (IPv6 neighbour discovery, for one) unchanged.
func (p *Path) SetHook(hook func(frame []byte) []byte) {
	if hook == nil {
		p.hook.Store(nil)
		return
	}
	p.hook.Store(&hook)
}

// Forwarded is the number of frames the relay sent from the client towards Dev; Changed
// how many of them the hook changed in length (inserted INT into); Returned the number sent
// from Dev's side to the client.
func (p *Path) Forwarded() uint64 { return p.forwarded.Load() }
func (p *Path) Changed() uint64   { return p.changed.Load() }
func (p *Path) Returned() uint64  { return p.returned.Load() }

// InCLI runs f on a thread switched into the client namespace: sockets it creates stay
// there.
func (p *Path) InCLI(f func() error) error { return inNS(p.CLI, f) }

// Dial returns a socket created in the client namespace and connected to dst ("udp",
// "tcp", "udp6", ...), closed when the test ends.
func (p *Path) Dial(t testing.TB, network, dst string) net.Conn {
	t.Helper()
	var c net.Conn
	err := p.InCLI(func() error {
		var err error
		c, err = net.DialTimeout(network, dst, 5*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("dial %s %s in %s: %v", network, dst, p.CLI, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startRelay opens the AF_PACKET sockets in MID and forwards between them until the test
// ends.
func (p *Path) startRelay(t testing.TB) {
	var c1, s1 *os.File
	err := inNS(p.MID, func() error {
		var err error
		if c1, err = packetSocket("c1"); err != nil {
			return err
		}
		s1, err = packetSocket("s1")
		return err
	})
	if err != nil {
		if c1 != nil {
			c1.Close()
		}
		t.Fatalf("relay sockets in %s: %v", p.MID, err)
	}
	s0, _ := net.ParseMAC(s0MAC)
	s1m, _ := net.ParseMAC(s1MAC)
	c0, _ := net.ParseMAC(c0MAC)
	c1m, _ := net.ParseMAC(c1MAC)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		relay(c1, s1, s0, s1m, func(f []byte) []byte {
			if h := p.hook.Load(); h != nil {
				n := len(f)
				if f = (*h)(f); len(f) != n {
					p.changed.Add(1)
				}
			}
			p.forwarded.Add(1)
			return f
		})
	}()
	go func() {
		defer wg.Done()
		relay(s1, c1, c0, c1m, func(f []byte) []byte { p.returned.Add(1); return f })
	}()
	t.Cleanup(func() {
		c1.Close()
		s1.Close()
		wg.Wait()
	})
}

// relay reads frames from in until it is closed, rewrites their MACs, passes them through
// f and writes them to out.
func relay(in, out *os.File, dst, src net.HardwareAddr, f func([]byte) []byte) {
	buf := make([]byte, 1<<16)
	for {
		n, err := in.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			continue
		}
		if n < 14 {
			continue
		}
		copy(buf[0:6], dst)
		copy(buf[6:12], src)
		out.Write(f(buf[:n])) // a frame the link refuses is lost, as on a wire
	}
}

// packetSocket opens a non-blocking AF_PACKET socket bound to dev that sees every frame
// dev receives and none it sends; the os.File reads and writes through Go's poller, so
// closing it ends a blocked Read.
func packetSocket(dev string) (*os.File, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind to %s: %w", dev, err)
	}
	return os.NewFile(uintptr(fd), "packet:"+dev), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// offloadsOff turns off tx checksum offload, TSO and GSO on dev (in the calling thread's
// namespace) with the legacy SIOCETHTOOL commands, which every driver answers through the
// kernel's generic feature code: frames then leave with their checksums computed and at
// most MTU-sized. (The ioctl instead of ethtool(8): no package to install.)
func offloadsOff(dev string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{unix.ETHTOOL_STXCSUM, unix.ETHTOOL_STSO, unix.ETHTOOL_SGSO} {
		v := &struct{ cmd, data uint32 }{cmd: cmd}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], dev)
		ifr.data = unsafe.Pointer(v)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return fmt.Errorf("SIOCETHTOOL 0x%x on %s: %w", cmd, dev, e)
		}
	}
	return nil
}
