//go:build linux

package ingest

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// labelExport is an INT-label export of one item.
func labelExport() []byte {
	b := make([]byte, 2+32)
	b[1] = 1
	b[2], b[3], b[4] = 3, 1, 2 // switch 3, ports 1 → 2
	return b
}

// sendFrom sends bs from a socket bound to local to addr.
func sendFrom(t *testing.T, local, addr string, bs ...[]byte) {
	t.Helper()
	la, err := net.ResolveUDPAddr("udp", local)
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := net.ResolveUDPAddr("udp", addr)
	conn, err := net.DialUDP("udp", la, ra)
	if err != nil {
		t.Skipf("cannot send from %s: %v", local, err)
	}
	defer conn.Close()
	for _, b := range bs {
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAllow: datagrams from sources outside a listener's allow list are counted as
// not_allowed and never reach the processors, on an IPv4 socket and on a dual-stack one
// (IPv4 senders IPv4-mapped); INT-label exports included, so the label controller acts on
// allowed switches only. Before, every source was decoded.
func TestAllow(t *testing.T) {
	cfg := testConfig(
		Listener{Name: "label", Format: "int-label", Address: "127.0.0.1", Allow: []string{"127.0.0.2"}},
		Listener{Name: "dual", Format: "int-label", Allow: []string{"127.0.0.0/30", "::1/128"}},
		Listener{Name: "open", Format: "int-label", Address: "127.0.0.1"},
	)
	p := &counting{}
	var logs bytes.Buffer
	c, err := New(cfg, Deps{Processors: []Processor{p}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	x := labelExport()
	port := func(i int) string { return portOf(c.ListenerAddr(i)) }
	sendFrom(t, "127.0.0.1:0", "127.0.0.1:"+port(0), x, x, x) // forged: not allowed
	sendFrom(t, "127.0.0.2:0", "127.0.0.1:"+port(0), x)       // the switch
	sendFrom(t, "127.0.0.3:0", "127.0.0.1:"+port(1), x)       // in 127.0.0.0/30, IPv4-mapped
	sendFrom(t, "127.0.0.4:0", "127.0.0.1:"+port(1), x, x)    // outside
	sendFrom(t, "127.0.0.4:0", "127.0.0.1:"+port(2), x)       // no list: every source
	if ln, err := net.ListenPacket("udp6", "[::1]:0"); err == nil {
		ln.Close()
		sendFrom(t, "[::1]:0", "[::1]:"+port(1), x)
	} else {
		t.Log("no IPv6 loopback")
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	v6 := uint64(0)
	if st.Listeners[1].PacketsReceived == 4 {
		v6 = 1
	}
	for i, want := range []struct{ packets, reports, notAllowed uint64 }{{4, 1, 3}, {3 + v6, 1 + v6, 2}, {1, 1, 0}} {
		l := st.Listeners[i]
		if l.PacketsReceived != want.packets || l.ReportsDecoded != want.reports || l.IngestDrops.ByReason["not_allowed"] != want.notAllowed ||
			l.IngestDrops.Total != want.notAllowed {
			t.Errorf("listener %s: %d packets, %d reports, drops %v; want %+v", l.Name, l.PacketsReceived, l.ReportsDecoded, l.IngestDrops.ByReason, want)
		}
	}
	if p.total() != 3+v6 {
		t.Errorf("the processors saw %d reports, want %d", p.total(), 3+v6)
	}
	if st.Listeners[0].Allow[0] != "127.0.0.2" || st.Listeners[2].Allow != nil {
		t.Errorf("allow in the status: %v %v", st.Listeners[0].Allow, st.Listeners[2].Allow)
	}
	log := logs.String()
	if !strings.Contains(log, `msg="accepting datagrams from every source (listeners[].allow is empty)" component=ingest listener=open`) ||
		!strings.Contains(log, `msg="accepting datagrams only from the allowed sources" component=ingest listener=label allow=127.0.0.2`) {
		t.Errorf("start log:\n%s", log)
	}
}

func TestAllowList(t *testing.T) {
	ps, err := ParseAllow([]string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::ffff:172.16.0.0/108", "::1", "198.51.100.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	a := newAllowList(ps)
	for s, want := range map[string]bool{
		"10.1.2.3": true, "11.0.0.1": false, "192.0.2.7": true, "192.0.2.8": false,
		"::ffff:10.9.9.9": true, "::ffff:192.0.2.7": true, "::ffff:11.0.0.1": false,
		"172.16.5.5": true, "172.32.0.1": false, // the 4-in-6 prefix is 172.16.0.0/12
		"2001:db8:1::5": true, "2001:db9::1": false, "::1": true, "::2": false, "198.51.100.200": true,
	} {
		if got := a.allowAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	all := newAllowList([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")})
	if !all.allowAddr(netip.MustParseAddr("203.0.113.1")) || !all.allowAddr(netip.MustParseAddr("2001:db8::1")) {
		t.Error("/0 does not allow everything")
	}
	if newAllowList(nil) != nil {
		t.Error("no prefixes is not nil (every source)")
	}
	for _, bad := range []string{"10.0.0.0/33", "host.example", "fe80::1%eth0", ""} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	l := Listener{Format: "report", Port: 1, Sockets: 1, Batch: 1, RcvBuf: MinRcvBuf, MaxDatagram: MinMaxDatagram, Allow: []string{"10.0.0.0/8", "10.0.0.0/40"}}
	if err := l.Validate("listeners[0]"); err == nil || err.Error() != `listeners[0].allow[1]: "10.0.0.0/40": must be an IPv4 or IPv6 prefix (10.0.0.0/8, 2001:db8::/32) or address` {
		t.Errorf("validate: %v", err)
	}
}

// reusePortSocket binds a UDP socket with SO_REUSEPORT, as a second `intake serve` or any
// program of the same user can.
func reusePortSocket(t *testing.T, network, addr string) net.PacketConn {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

func inode(t *testing.T, pc net.PacketConn) uint64 {
	rc, _ := pc.(*net.UDPConn).SyscallConn()
	var st unix.Stat_t
	rc.Control(func(fd uintptr) { unix.Fstat(int(fd), &st) })
	return st.Ino
}

// TestPortSharedAtStart: a socket of someone else on the port (SO_REUSEPORT, same user)
// stops Start with a message naming it. Before, it silently took a share of the datagrams.
func TestPortSharedAtStart(t *testing.T) {
	foreign := reusePortSocket(t, "udp4", "127.0.0.1:0")
	port := foreign.LocalAddr().(*net.UDPAddr).Port
	for _, addr := range []string{"127.0.0.1", ""} { // the same address, and every address
		c, err := New(testConfig(Listener{Name: "tr", Format: "report", Address: addr, Port: port, Sockets: 2}), Deps{})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Start(context.Background())
		want := "listener tr: port " + strconv.Itoa(port) + " is also bound by udp 127.0.0.1:" + strconv.Itoa(port) +
			" (inode " + strconv.FormatUint(inode(t, foreign), 10) + ", uid " + strconv.Itoa(os.Getuid()) + ", pid " + strconv.Itoa(os.Getpid()) +
			"): with SO_REUSEPORT the kernel would give it a share of the datagrams (another intake serve, or a program of the same user); stop it or pick another port"
		if err == nil || err.Error() != want {
			t.Errorf("address %q: %v\nwant %s", addr, err, want)
		}
		if c.Running() {
			t.Error("running after the error")
			c.Stop(context.Background())
		}
	}
	// Another address on the same port takes nothing of this listener's.
	c, err := New(testConfig(Listener{Name: "tr", Format: "report", Address: "127.0.0.2", Port: port}), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Errorf("127.0.0.2 beside a socket on 127.0.0.1: %v", err)
	}
	c.Stop(context.Background())
}

// TestPortTaken: a listener bound to port 0 checks the port the kernel gave it, which Linux
// may pick among ports that another SO_REUSEPORT socket of the same user holds (open picks
// again then; Start would refuse the port). Seen in CI: two test packages' collectors, each
// on port 0, given the same port.
func TestPortTaken(t *testing.T) {
	s, err := openSocket("udp4", "127.0.0.1:0", MinRcvBuf, 1, MinMaxDatagram, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if portTaken(s) {
		t.Fatal("a port of its own is taken")
	}
	other := reusePortSocket(t, "udp4", "127.0.0.2:"+strconv.Itoa(s.local.Port))
	if portTaken(s) {
		t.Error("a socket on 127.0.0.2 takes the port of one on 127.0.0.1")
	}
	other.Close()
	for _, addr := range []string{"127.0.0.1", "0.0.0.0"} {
		other := reusePortSocket(t, "udp4", addr+":"+strconv.Itoa(s.local.Port))
		if !portTaken(s) {
			t.Errorf("a socket on %s does not take the port", addr)
		}
		other.Close()
	}
}

// TestPortSharedWhileRunning: a socket that joins the port later is found by the periodic
// check: counted once per socket, logged at most once a minute per listener.
func TestPortSharedWhileRunning(t *testing.T) {
	var logs bytes.Buffer
	c, err := New(testConfig(Listener{Name: "tr", Format: "report", Address: "127.0.0.1", Sockets: 2}),
		Deps{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	if fs, err := c.ForeignSockets(); err != nil || len(fs) != 0 {
		t.Fatalf("alone on the port: %v %v", fs, err)
	}
	now := time.Now()
	c.checkPorts(now)
	if logs.Len() != 0 || c.Status().Listeners[0].ForeignSockets != 0 {
		t.Fatalf("alone on the port: %s", logs.String())
	}
	f1 := reusePortSocket(t, "udp4", c.ListenerAddr(0))
	c.checkPorts(now.Add(10 * time.Second))
	c.checkPorts(now.Add(20 * time.Second)) // the same socket: counted once, not logged again
	f2 := reusePortSocket(t, "udp4", c.ListenerAddr(0))
	c.checkPorts(now.Add(30 * time.Second))
	if n := c.Status().Listeners[0].ForeignSockets; n != 2 {
		t.Errorf("foreign sockets counted: %d, want 2", n)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "level=ERROR msg=\"port shared with a socket that is not intake's: it takes a share of the datagrams\" component=ingest listener=tr port="+portOf(c.ListenerAddr(0))+
		" sockets=\"udp "+c.ListenerAddr(0)+" (inode "+strconv.FormatUint(inode(t, f1), 10)) {
		t.Errorf("%d log lines:\n%s", n, logs.String())
	}
	c.checkPorts(now.Add(91 * time.Second))
	if n := strings.Count(logs.String(), "\n"); n != 2 || !strings.Contains(logs.String(), strconv.FormatUint(inode(t, f2), 10)) {
		t.Errorf("a minute later: %d log lines:\n%s", n, logs.String())
	}
	var m bytes.Buffer
	c.Registry().WriteText(&m)
	if !strings.Contains(m.String(), `intake_listener_foreign_sockets_total{listener="tr"} 2`) {
		t.Errorf("metrics:\n%s", m.String())
	}
}

func TestParseUDPTable(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:9C40 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4242 2 0000000000000000 0
  124: 00000000:7FFE 0200000A:0035 01 00000000:00000000 00:00000000 00000000     0        0 17 2 0000000000000000 0
`
	ss, err := parseUDPTable(strings.NewReader(table))
	if err != nil || len(ss) != 2 {
		t.Fatalf("%v %v", ss, err)
	}
	if ss[0].local.String() != "127.0.0.1:40000" || ss[0].inode != 4242 || ss[0].uid != 1000 || ss[0].remote.Port() != 0 ||
		ss[1].local.String() != "0.0.0.0:32766" || ss[1].remote.String() != "10.0.0.2:53" || ss[1].inode != 17 {
		t.Errorf("%+v", ss)
	}
	v6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		"    5: 00000000000000000000000001000000:D431 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 99 2 0000000000000000 0\n"
	ss, err = parseUDPTable(strings.NewReader(v6))
	if err != nil || len(ss) != 1 || ss[0].local.String() != "[::1]:54321" {
		t.Errorf("%+v %v", ss, err)
	}
	if _, err := parseUDPTable(strings.NewReader("header\n 1: zz:1 00000000:0000 07 0:0 0:0 0 0 0 1 2\n")); err == nil {
		t.Error("a bad line parsed")
	}
}
