package testutil

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePort returns a loopback port that no TCP or UDP socket holds now, for a server a test
// must name before it listens (a child process, a cluster's members). It is picked at random
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where the kernel never
// puts a socket of its own choosing. A port taken by listening on port 0 and closed is free
// again for the kernel to hand to any connect or bind to port 0 until the server binds it,
// and on this project's busy test runs one was: influxd failed to start on "address already
// in use" in a CI run.
func FreePort(t testing.TB) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	const from = 10000 // above the ports services usually take
	for range 1000 {
		p := from + rand.IntN(low-from)
		a := "127.0.0.1:" + strconv.Itoa(p)
		ln, err := net.Listen("tcp", a)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", a)
		ln.Close()
		if err != nil {
			continue
		}
		pc.Close()
		return p
	}
	t.Fatalf("no free loopback port in 1000 tries between %d and %d", from, low)
	return 0
}

// FreeAddr is FreePort's port on 127.0.0.1, as host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}
