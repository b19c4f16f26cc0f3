// Package xdptest builds what the XDP tests of packages xdp, ingest and collector run on: a
// veth pair between the test's network namespace and a new one, with a sender inside it
// (Veth); and, for the INT sink, a routed path from a client namespace through a relay that
// can insert INT into the test's namespace (Path).
package xdptest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var seq atomic.Int32

// Veth is a veth pair: Dev here (addresses Host, Host6), its peer in namespace NS (Peer,
// Peer6).
type Veth struct {
	NS, Dev      string
	Host, Peer   string
	Host6, Peer6 string
}

// New creates the pair and removes it when the test ends. It skips the test, saying why,
// where the pair cannot be built: not root, no iproute2, or a kernel that refuses.
func New(t testing.TB) *Veth {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: XDP and AF_XDP tests need root (CAP_NET_ADMIN, CAP_BPF) to create a veth pair in a network namespace and attach programs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipped: iproute2's ip is not installed (apt-get install iproute2)")
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, seq.Add(1))
	v := &Veth{NS: "intake-xdp-" + id, Dev: "ix" + id, Host: "10.202.0.1", Peer: "10.202.0.2", Host6: "fd00:202::1", Peer6: "fd00:202::2"}
	peer := v.Dev + "p"
	steps := [][]string{
		{"netns", "add", v.NS},
		{"link", "add", v.Dev, "address", hostMAC, "type", "veth", "peer", "name", peer, "address", peerMAC},
		{"link", "set", peer, "netns", v.NS},
		{"addr", "add", v.Host + "/30", "dev", v.Dev},
		{"addr", "add", v.Host6 + "/64", "dev", v.Dev, "nodad"},
		{"link", "set", v.Dev, "up"},
		{"-n", v.NS, "addr", "add", v.Peer + "/30", "dev", peer},
		{"-n", v.NS, "addr", "add", v.Peer6 + "/64", "dev", peer, "nodad"},
		{"-n", v.NS, "link", "set", peer, "up"},
		// Static neighbours: a first datagram that waited for ARP or neighbour discovery
		// would be queued (and beyond a few, dropped) by the sender's kernel, not by intake.
		{"-n", v.NS, "neigh", "replace", v.Host, "lladdr", hostMAC, "dev", peer, "nud", "permanent"},
		{"-n", v.NS, "neigh", "replace", v.Host6, "lladdr", hostMAC, "dev", peer, "nud", "permanent"},
		{"neigh", "replace", v.Peer, "lladdr", peerMAC, "dev", v.Dev, "nud", "permanent"},
		{"neigh", "replace", v.Peer6, "lladdr", peerMAC, "dev", v.Dev, "nud", "permanent"},
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", v.Dev).Run()
		exec.Command("ip", "netns", "del", v.NS).Run()
	})
	for _, a := range steps {
		if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
			t.Skipf("skipped: the kernel refused a veth pair in a namespace: ip %s: %v: %s", strings.Join(a, " "), err, out)
		}
	}
	// Both ends up (carrier) before anything is sent.
	for i := 0; i < 100; i++ {
		out, _ := exec.Command("ip", "-n", v.NS, "link", "show", peer).Output()
		c, _ := os.ReadFile("/sys/class/net/" + v.Dev + "/carrier")
		if strings.Contains(string(out), "LOWER_UP") && strings.TrimSpace(string(c)) == "1" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return v
}

// The pair's MAC addresses (locally administered).
const (
	hostMAC = "02:00:00:49:58:01"
	peerMAC = "02:00:00:49:58:02"
)

// Dial returns a UDP socket created inside the namespace, connected to dst. A socket keeps
// the namespace it was created in; the thread that created it goes back to this one.
func (v *Veth) Dial(t testing.TB, network, dst string) net.Conn {
	t.Helper()
	var c net.Conn
	err := v.in(func() error {
		var err error
		c, err = net.Dial(network, dst)
		return err
	})
	if err != nil {
		t.Fatalf("dial %s %s in %s: %v", network, dst, v.NS, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Send sends each payload as one datagram from the namespace to dst.
func (v *Veth) Send(t testing.TB, network, dst string, payloads ...[]byte) {
	t.Helper()
	c := v.Dial(t, network, dst)
	for _, p := range payloads {
		if _, err := c.Write(p); err != nil {
			t.Fatalf("send to %s: %v", dst, err)
		}
	}
	c.Close()
}

// In runs f on a thread switched into the namespace: sockets f creates stay there, and
// /proc/thread-self/net is the namespace's.
func (v *Veth) In(f func() error) error { return v.in(f) }

// in runs f on a thread switched into the namespace.
func (v *Veth) in(f func() error) error { return inNS(v.NS, f) }

// inNS runs f on a thread switched into the named network namespace.
func inNS(name string, f func() error) error {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	ns, err := os.Open("/run/netns/" + name)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, and so ends with its goroutine instead of serving others
		// in the wrong namespace.
		return fmt.Errorf("back to the test's namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}
