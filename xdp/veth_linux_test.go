package xdp

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

var vethSeq atomic.Int32

// testVeth is a veth pair between this namespace and a new one: the collector side here
// (Host on Dev), the sender in the namespace (Peer). It skips the test, saying why, where it
// cannot be built (not root, no iproute2, a kernel without veth or namespaces).
type testVeth struct {
	NS, Dev, Host, Peer string
	Host6, Peer6        string
}

func newTestVeth(t *testing.T) *testVeth {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: XDP and AF_XDP tests need root (CAP_NET_ADMIN, CAP_BPF) to create a veth pair in a network namespace and attach programs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipped: iproute2's ip is not installed (apt-get install iproute2)")
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, vethSeq.Add(1))
	v := &testVeth{NS: "intake-xdp-" + id, Dev: "ix" + id, Host: "10.202.0.1", Peer: "10.202.0.2", Host6: "fd00:202::1", Peer6: "fd00:202::2"}
	peer := v.Dev + "p"
	steps := [][]string{
		{"netns", "add", v.NS},
		{"link", "add", v.Dev, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", v.NS},
		{"addr", "add", v.Host + "/30", "dev", v.Dev},
		{"addr", "add", v.Host6 + "/64", "dev", v.Dev, "nodad"},
		{"link", "set", v.Dev, "up"},
		{"-n", v.NS, "addr", "add", v.Peer + "/30", "dev", peer},
		{"-n", v.NS, "addr", "add", v.Peer6 + "/64", "dev", peer, "nodad"},
		{"-n", v.NS, "link", "set", peer, "up"},
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
	return v
}

// send sends datagrams from the namespace to the host with a helper process (the test
// binary itself, re-run with INTAKE_XDP_SEND set), since a thread's namespace cannot be
// changed safely from Go.
func (v *testVeth) send(t *testing.T, network, dst string, payloads [][]byte) {
	t.Helper()
	var args []string
	for _, p := range payloads {
		args = append(args, fmt.Sprintf("%x", p))
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", v.NS, os.Args[0], "-test.run=^TestSendHelper$"}, args...)...)
	cmd.Env = append(os.Environ(), "INTAKE_XDP_SEND="+network+" "+dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sender: %v: %s", err, out)
	}
}

// TestSendHelper is the sender process of testVeth.send; it does nothing in a normal run.
func TestSendHelper(t *testing.T) {
	spec := os.Getenv("INTAKE_XDP_SEND")
	if spec == "" {
		return
	}
	network, dst, _ := strings.Cut(spec, " ")
	c, err := net.Dial(network, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	args := os.Args
	for i, a := range args {
		if a == "--" || strings.HasPrefix(a, "-test.") {
			continue
		}
		if i == 0 {
			continue
		}
		var b []byte
		if _, err := fmt.Sscanf(a, "%x", &b); err != nil && a != "" {
			t.Fatalf("payload %q: %v", a, err)
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}
