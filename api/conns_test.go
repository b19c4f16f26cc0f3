//go:build unix

package api_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/metrics"
)

// limitedServer starts a server of cfg with GET /api/v1/thing and GET /api/v1/block, which
// answers once release is closed (or the request ends).
func limitedServer(t *testing.T, cfg api.Config) (*api.Server, chan struct{}) {
	t.Helper()
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	s, err := api.NewFromConfig(cfg, api.Deps{Metrics: metrics.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	s.HandleFunc("GET /api/v1/thing", func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, 200, map[string]string{"thing": "ok"})
	})
	s.HandleFunc("GET /api/v1/block", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		api.JSON(w, 200, map[string]string{"block": "done"})
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		s.Stop(context.Background())
	})
	return s, release
}

// dialFrom connects to addr from the loopback address src (all of 127/8 is loopback).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	return c
}

// rawGet sends GET path on c and returns the status line, or the error that ended it.
func rawGet(c net.Conn, path string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return "", err
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(l), err
}

// busy opens a connection from src with a request in progress (GET /api/v1/block), and
// waits until the server holds it as busy.
func busy(t *testing.T, s *api.Server, src string) net.Conn {
	t.Helper()
	c := dialFrom(t, src, s.Addr())
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /api/v1/block HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	time.Sleep(50 * time.Millisecond) // the server reads the header: the connection is active
	return c
}

// closedAtOnce reports whether the server closed c without a response, quickly.
func closedAtOnce(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(make([]byte, 1))
	return n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
}

// TestConnectionCapBusy: with every connection under a cap busy, a new connection is closed
// at once and counted by cap (total, source); another source still gets in under the total
// cap, and loopback sources get loopbackReserve (8) more past it. Before, connections had no
// cap at all.
func TestConnectionCapBusy(t *testing.T) {
	s, release := limitedServer(t, api.Config{MaxConnections: 4, MaxConnectionsPerSource: 2})
	var held []net.Conn
	busy := func(src string) { held = append(held, busy(t, s, src)) }
	busy("127.0.0.1")
	busy("127.0.0.1")
	// A third from 127.0.0.1: over the source's cap, nothing of it idle.
	if c := dialFrom(t, "127.0.0.1", s.Addr()); !closedAtOnce(c) {
		t.Error("third busy connection from one source: not closed at once")
	}
	// Another source gets in.
	busy("127.0.0.2")
	busy("127.0.0.2")
	// Four busy: past the total cap only loopback gets in, 8 more.
	for i := range 8 {
		busy("127.0.1." + strconv.Itoa(1+i/2))
	}
	if st := s.ConnStats(); st.Open != 12 || st.Refused["total"] != 0 {
		t.Errorf("the loopback reserve: %+v", st)
	}
	if c := dialFrom(t, "127.0.2.1", s.Addr()); !closedAtOnce(c) {
		t.Error("past the loopback reserve: not closed at once")
	}
	st := s.ConnStats()
	if st.Open != 12 || st.Max != 4 || st.MaxPerSource != 2 || st.Refused["source"] != 1 || st.Refused["total"] != 1 || st.Evicted != 0 {
		t.Errorf("stats %+v", st)
	}
	// The busy ones are answered once their handler returns, and the idle then make room.
	close(release)
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if l, err := bufio.NewReader(c).ReadString('\n'); l != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("a busy connection, released: %q %v", l, err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the server goes back to reading them: idle
	c := dialFrom(t, "127.0.2.1", s.Addr())
	defer c.Close()
	if l, err := rawGet(c, "/healthz"); l != "HTTP/1.1 200 OK" {
		t.Errorf("after release: %q %v", l, err)
	}
	if st := s.ConnStats(); st.Evicted != 1 || st.Open != 12 {
		t.Errorf("after release: %+v", st)
	}
}

// TestConnectionCapIdle: at a cap, a new connection displaces the oldest idle one of the
// cap (from the same source for the per-source cap): a source that holds its connections
// idle does not lock itself or others out, and /healthz answers.
func TestConnectionCapIdle(t *testing.T) {
	s, _ := limitedServer(t, api.Config{MaxConnections: 100, MaxConnectionsPerSource: 3})
	var idle []net.Conn
	for range 3 {
		c := dialFrom(t, "127.0.0.1", s.Addr())
		defer c.Close()
		idle = append(idle, c)
	}
	other := dialFrom(t, "127.0.0.2", s.Addr()) // idle too, but another source's
	defer other.Close()
	time.Sleep(50 * time.Millisecond)
	c := dialFrom(t, "127.0.0.1", s.Addr())
	defer c.Close()
	if l, err := rawGet(c, "/healthz"); l != "HTTP/1.1 200 OK" {
		t.Fatalf("fourth connection from a source of three idle: %q %v", l, err)
	}
	if !closedAtOnce(idle[0]) {
		t.Error("the oldest idle connection of the source was not closed")
	}
	if l, err := rawGet(other, "/api/v1/thing"); l != "HTTP/1.1 200 OK" {
		t.Errorf("the other source's idle connection: %q %v", l, err)
	}
	if st := s.ConnStats(); st.Evicted != 1 || st.Refused["source"] != 0 || st.Refused["total"] != 0 {
		t.Errorf("stats %+v", st)
	}
}

// raiseNoFile raises RLIMIT_NOFILE to at least n for the test, or skips it.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	old := lim
	if lim.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d: the test needs %d descriptors", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("raising RLIMIT_NOFILE to %d: %v", n, err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// rssKiB reads the process's resident set size.
func rssKiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// floodConns is how many idle connections TestConnectionFlood opens.
const floodConns = 5000

// TestConnectionFlood: 5000 connections from loopback that send nothing (a flood that any
// local user can make, token or not), from 100 addresses at 50 each (under the per-source
// cap: the total cap is what holds). The server keeps at most max_connections of them (its
// goroutines and memory bounded), and /healthz and an API GET answer within a second. Before,
// every connection was kept, with a goroutine and buffers each; at 20,000 the API stopped
// answering.
func TestConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	raiseNoFile(t, 2*floodConns+1000) // both ends are in this process
	s, _ := limitedServer(t, api.Config{})
	runtime.GC()
	g0, rss0 := runtime.NumGoroutine(), rssKiB(t)
	conns := make([]net.Conn, 0, floodConns)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range floodConns {
		conns = append(conns, dialFrom(t, "127.0.1."+strconv.Itoa(1+i%100), s.Addr()))
	}
	// The server has taken every connection (held or evicted) and its goroutines for the
	// last ones have started: a fixed wait was short under -race on a loaded machine (4998
	// of 5000 taken after 200 ms).
	st := s.ConnStats()
	for deadline := time.Now().Add(10 * time.Second); uint64(st.Open)+st.Evicted < floodConns && time.Now().Before(deadline); st = s.ConnStats() {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	g1, rss1 := runtime.NumGoroutine(), rssKiB(t)
	st = s.ConnStats()
	t.Logf("%d idle connections: server holds %d, evicted %d; goroutines %d -> %d, RSS %d -> %d KiB",
		floodConns, st.Open, st.Evicted, g0, g1, rss0, rss1)
	if st.Open > api.DefaultMaxConnections || st.Evicted < floodConns-api.DefaultMaxConnections {
		t.Errorf("stats %+v", st)
	}
	if g1-g0 > api.DefaultMaxConnections+50 {
		t.Errorf("goroutines %d -> %d with %d connections open (cap %d)", g0, g1, floodConns, api.DefaultMaxConnections)
	}
	if rss1-rss0 > 64<<10 && !raceEnabled {
		t.Errorf("RSS grew %d KiB", rss1-rss0)
	}
	for _, path := range []string{"/healthz", "/api/v1/thing"} {
		t0 := time.Now()
		c := dialFrom(t, "127.0.0.1", s.Addr())
		l, err := rawGet(c, path)
		c.Close()
		took := time.Since(t0)
		t.Logf("GET %s under the flood: %q in %v", path, l, took)
		if l != "HTTP/1.1 200 OK" || took > time.Second {
			t.Errorf("GET %s under the flood: %q %v in %v", path, l, err, took)
		}
	}
}

// TestConnectionTimeouts: a connection that stalls in its request header is closed at
// http.header_timeout, and a keep-alive connection at http.idle_timeout; both are
// configurable (before, fixed at 10 s and 2 min).
func TestConnectionTimeouts(t *testing.T) {
	s, _ := limitedServer(t, api.Config{HeaderTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	stall := dialFrom(t, "127.0.0.1", s.Addr())
	defer stall.Close()
	io.WriteString(stall, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	t0 := time.Now()
	stall.SetReadDeadline(time.Now().Add(3 * time.Second))
	io.ReadAll(stall) // the server answers 408 or closes
	if took := time.Since(t0); took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("stalled header closed after %v, want about 200ms", took)
	}
	idle := dialFrom(t, "127.0.0.1", s.Addr())
	defer idle.Close()
	if l, err := rawGet(idle, "/healthz"); l != "HTTP/1.1 200 OK" {
		t.Fatalf("%q %v", l, err)
	}
	t0 = time.Now()
	idle.SetReadDeadline(time.Now().Add(3 * time.Second))
	io.ReadAll(idle)
	if took := time.Since(t0); took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("idle keep-alive connection closed after %v, want about 300ms", took)
	}
}

// TestListenWildcard: http.address 0.0.0.0 listens on every IPv4 address and no IPv6 one,
// :: on every IPv6 address and no IPv4 one, an empty host on both (as the UDP listeners),
// and Listening says which. Before, 0.0.0.0 also took
// IPv6 (Go listens on [::] for it) and the startup line said nothing of it.
func TestListenWildcard(t *testing.T) {
	v6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	v6.Close()
	s, _ := limitedServer(t, api.Config{Address: "0.0.0.0:0"})
	_, port, _ := net.SplitHostPort(s.Addr())
	if got, want := s.Listening(), "0.0.0.0:"+port+" (all IPv4 addresses)"; got != want {
		t.Errorf("0.0.0.0: listening %q, want %q", got, want)
	}
	if got := s.ConnStats().Listening; got != s.Listening() {
		t.Errorf("status: listening %q", got)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err != nil {
		t.Errorf("0.0.0.0: IPv4: %v", err)
	} else {
		c.Close()
	}
	if c, err := net.DialTimeout("tcp", "[::1]:"+port, time.Second); err == nil {
		c.Close()
		t.Errorf("0.0.0.0: listens on IPv6 too")
	}
	for _, c := range []struct {
		addr, what string
		v4         bool
	}{{":0", "all IPv4 and IPv6 addresses", true}, {"[::]:0", "all IPv6 addresses", false}} {
		s, _ := limitedServer(t, api.Config{Address: c.addr})
		_, port, _ := net.SplitHostPort(s.Addr())
		if got, want := s.Listening(), "[::]:"+port+" ("+c.what+")"; got != want {
			t.Errorf("%s: listening %q, want %q", c.addr, got, want)
		}
		if conn, err := net.DialTimeout("tcp", "[::1]:"+port, time.Second); err != nil {
			t.Errorf("%s: IPv6: %v", c.addr, err)
		} else {
			conn.Close()
		}
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.v4 {
			t.Errorf("%s: IPv4: %v", c.addr, err)
		}
	}
	s, _ = limitedServer(t, api.Config{Address: "127.0.0.1:0"})
	if got := s.Listening(); got != s.Addr() {
		t.Errorf("127.0.0.1: listening %q, want %q", got, s.Addr())
	}
}

// TestConnectionConfig: the caps and timeouts are read from the http section, with their
// defaults, and bad values are refused with the key.
func TestConnectionConfig(t *testing.T) {
	c, err := config.Parse([]byte("http: {max_connections: 200, max_connections_per_source: 10, header_timeout: 1s, read_timeout: 2s, write_timeout: 0, idle_timeout: 4s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := c.HTTP
	if h.MaxConnections != 200 || h.MaxConnectionsPerSource != 10 || h.HeaderTimeout != time.Second ||
		h.ReadTimeout != 2*time.Second || h.WriteTimeout != 0 || h.IdleTimeout != 4*time.Second {
		t.Errorf("parsed %+v", h)
	}
	d := config.Default().HTTP
	if d.MaxConnections != 1024 || d.MaxConnectionsPerSource != 64 || d.HeaderTimeout != 10*time.Second ||
		d.ReadTimeout != 30*time.Second || d.WriteTimeout != time.Minute || d.IdleTimeout != 2*time.Minute {
		t.Errorf("defaults %+v", d)
	}
	for doc, want := range map[string]string{
		"http: {max_connections: -1}":                                 "http.max_connections: -1: must be 1-65536 (0: the default, 1024)",
		"http: {max_connections: 70000}":                              "http.max_connections: 70000: must be 1-65536 (0: the default, 1024)",
		"http: {max_connections: 10, max_connections_per_source: 11}": "http.max_connections_per_source: 11: must be 1-65536, at most max_connections (0: the default, 64)",
		"http: {write_timeout: -1s}":                                  "http.write_timeout: -1s: must not be negative",
	} {
		if _, err := config.Parse([]byte(doc + "\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
