package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Veth is a veth pair between this network namespace and a new one, for measuring a
// receive path that, unlike loopback, goes through a device's receive queue (NAPI, GRO)
// as a NIC's does: the collector listens on Host, the sender runs in Namespace and sends
// to Host. It needs root (CAP_NET_ADMIN) and iproute2's ip.
type Veth struct {
	Namespace string // the sender's namespace, for `ip netns exec`
	Host      string // the collector's address, in this namespace
	Peer      string // the sender's address
	dev       string
}

// NewVeth creates the namespace and the pair, addresses and brings them up. Close removes
// both.
func NewVeth() (*Veth, error) {
	id := os.Getpid() % 10000
	v := &Veth{Namespace: fmt.Sprintf("intake-bench-%d", id), Host: "10.201.0.1", Peer: "10.201.0.2",
		dev: fmt.Sprintf("ib%d", id)}
	peer := v.PeerDevice()
	q := strconv.Itoa(runtime.NumCPU())
	steps := [][]string{
		{"netns", "add", v.Namespace},
		// A receive queue per core, as a multi-queue NIC has: an xdp listener has a worker
		// per queue, as a socket listener has one per core.
		{"link", "add", v.dev, "address", hostMAC, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", peer, "address", peerMAC, "numtxqueues", q, "numrxqueues", q},
		{"link", "set", peer, "netns", v.Namespace},
		{"addr", "add", v.Host + "/30", "dev", v.dev},
		{"link", "set", v.dev, "up"},
		{"-n", v.Namespace, "addr", "add", v.Peer + "/30", "dev", peer},
		{"-n", v.Namespace, "link", "set", peer, "up"},
		{"-n", v.Namespace, "link", "set", "lo", "up"},
		// Static neighbours: no datagram waits for ARP (the sender's kernel would queue and
		// drop it), and the floor, which drops every frame, ARP too, gets the load.
		{"-n", v.Namespace, "neigh", "replace", v.Host, "lladdr", hostMAC, "dev", peer, "nud", "permanent"},
		{"neigh", "replace", v.Peer, "lladdr", peerMAC, "dev", v.dev, "nud", "permanent"},
	}
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			v.Close()
			return nil, fmt.Errorf("ip %s: %v: %s (--veth needs root and iproute2)", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return v, nil
}

// The pair's MAC addresses (locally administered).
const (
	hostMAC = "02:00:00:49:42:01"
	peerMAC = "02:00:00:49:42:02"
)

// Device is the collector's end of the pair, in this namespace.
func (v *Veth) Device() string { return v.dev }

// PeerDevice is the sender's end of the pair, in Namespace (bench sink's data packets leave
// by it).
func (v *Veth) PeerDevice() string { return v.dev + "p" }

// Command returns a command that runs name with args inside the sender's namespace.
func (v *Veth) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", v.Namespace, name}, args...)...)
}

// Close deletes the namespace (and with it the pair).
func (v *Veth) Close() error {
	exec.Command("ip", "link", "del", v.dev).Run()
	if out, err := exec.Command("ip", "netns", "del", v.Namespace).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", v.Namespace, err, strings.TrimSpace(string(out)))
	}
	return nil
}
