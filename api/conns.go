package api

import (
	"container/list"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/metrics"
)

// connLimit caps the server's connections: at most max open at once, and at most perSource
// from one source (an IPv4 address, or an IPv6 /64: one host or subscriber holds a whole
// /64). A connection over a cap displaces the cap's oldest idle connection, one that has not
// yet sent a whole request header (a TLS handshake in progress, a flood of connections that
// send nothing) or that waits between requests (keep-alive); when every connection under
// the cap is busy (a request in progress, an event stream), the new one is closed at once.
// Nothing waits in a queue.
//
// Displacing the idle is what keeps the server reachable: a reserve alone would be eaten by
// a flood from loopback (any local user), while an idle connection costs nothing to close
// and its client, when it has one, opens another. So /healthz, `intake status` and a scrape
// get in under any flood of connections that do not send requests; a flood that does send
// them is answered as fast as it sends. Beyond that, loopback sources have a small reserve
// (loopbackReserve) past max for when every connection is busy (event streams, slow
// requests from elsewhere): an operator on the host still gets in.
type connLimit struct {
	max, perSource int
	log            *slog.Logger

	mu       sync.Mutex
	open     int
	bySource map[netip.Addr]int
	idle     list.List // of *limitedConn: idle connections, the longest idle first

	refused [numConnRefusals]atomic.Uint64
	evicted atomic.Uint64

	logMu   sync.Mutex
	logged  time.Time // when a refusal was last logged
	pending uint64    // refusals since, not yet logged
}

// Connection refusal reasons, the reason label of intake_http_connections_refused_total.
const (
	connRefusedTotal = iota
	connRefusedSource
	numConnRefusals
)

var connRefusalNames = [numConnRefusals]string{"total", "source"}

// loopbackReserve is how many connections from loopback may be open past the total cap when
// no connection under it is idle.
const loopbackReserve = 8

// refusalLogEvery is the least time between two log lines about refused connections.
const refusalLogEvery = 10 * time.Second

func newConnLimit(max, perSource int, log *slog.Logger) *connLimit {
	return &connLimit{max: max, perSource: perSource, log: log, bySource: map[netip.Addr]int{}}
}

// limitedConn is an admitted connection; closing it (once) frees its place.
type limitedConn struct {
	net.Conn
	l      *connLimit
	src    netip.Addr
	elem   *list.Element // in l.idle while idle
	closed bool          // under l.mu
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.release(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// source is the key a connection from a counts under.
func source(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Addr{}
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// admit takes c under the caps, displacing an idle connection if it must, or closes it and
// returns nil.
func (l *connLimit) admit(c net.Conn) net.Conn {
	src := source(c.RemoteAddr())
	l.mu.Lock()
	reason := -1
	switch {
	case l.bySource[src] >= l.perSource:
		reason = connRefusedSource
	case l.open >= l.max && !(src.IsLoopback() && l.open < l.max+loopbackReserve && l.oldestIdle(false, src) == nil):
		reason = connRefusedTotal
	}
	var victim *limitedConn
	if reason >= 0 {
		victim = l.oldestIdle(reason == connRefusedSource, src)
		if victim == nil {
			l.mu.Unlock()
			l.refuse(reason, src) // counted before the client can see the close
			c.Close()
			return nil
		}
		l.release(victim)
	}
	lc := &limitedConn{Conn: c, l: l, src: src}
	l.open++
	l.bySource[src]++
	lc.elem = l.idle.PushBack(lc) // idle until its first request header is read
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		victim.Conn.Close()
	}
	return lc
}

// oldestIdle returns the longest idle connection (from src when bySource), or nil.
func (l *connLimit) oldestIdle(bySource bool, src netip.Addr) *limitedConn {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*limitedConn); !bySource || c.src == src {
			return c
		}
	}
	return nil
}

// release frees c's place, once (l.mu held).
func (l *connLimit) release(c *limitedConn) {
	if c.closed {
		return
	}
	c.closed = true
	l.open--
	if l.bySource[c.src]--; l.bySource[c.src] <= 0 {
		delete(l.bySource, c.src)
	}
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
}

// state follows the server's view of a connection (http.Server.ConnState): new and idle
// connections may be displaced, active and hijacked ones not.
func (l *connLimit) state(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		if lc.elem == nil {
			lc.elem = l.idle.PushBack(lc)
		}
	case http.StateActive, http.StateHijacked:
		if lc.elem != nil {
			l.idle.Remove(lc.elem)
			lc.elem = nil
		}
	}
}

// refuse counts a refused connection and logs, at most once per refusalLogEvery, how many
// were refused since the last line.
func (l *connLimit) refuse(reason int, src netip.Addr) {
	l.refused[reason].Add(1)
	l.logMu.Lock()
	defer l.logMu.Unlock()
	l.pending++
	if now := time.Now(); now.Sub(l.logged) >= refusalLogEvery {
		l.log.Warn("connections refused: every connection under the cap is busy",
			"refused", l.pending, "last_reason", connRefusalNames[reason], "last_source", src.String(),
			"max_connections", l.max, "max_connections_per_source", l.perSource)
		l.logged, l.pending = now, 0
	}
}

// ConnStats are the HTTP server's connection counters (GET /api/v1/status, `http`).
type ConnStats struct {
	// Listening names what the server listens on (Server.Listening).
	Listening    string `json:"listening"`
	Open         int    `json:"open"`
	Max          int    `json:"max"`
	MaxPerSource int    `json:"max_per_source"`
	// Refused are connections closed at once because every connection under a cap was
	// busy, by cap (total, source).
	Refused map[string]uint64 `json:"refused"`
	// Evicted are idle connections (no request yet, or between requests) closed to make
	// room for a new one at a cap.
	Evicted uint64 `json:"evicted"`
}

func (l *connLimit) stats() ConnStats {
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	st := ConnStats{Open: open, Max: l.max, MaxPerSource: l.perSource, Refused: map[string]uint64{}, Evicted: l.evicted.Load()}
	for i := range numConnRefusals {
		st.Refused[connRefusalNames[i]] = l.refused[i].Load()
	}
	return st
}

// register puts the connection counters on reg.
func (l *connLimit) register(reg *metrics.Registry) {
	if reg == nil {
		return
	}
	reg.Gauge("intake_http_connections", "HTTP connections open.").Func(func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(l.open)
	})
	reg.Gauge("intake_http_connections_max", "http.max_connections: the most HTTP connections open at once.").
		Func(func() float64 { return float64(l.max) })
	f := reg.Counter("intake_http_connections_refused_total", "HTTP connections closed at once because every connection under a cap was busy, by cap (total: http.max_connections; source: http.max_connections_per_source).", "reason")
	for i := range numConnRefusals {
		f.Func(func() float64 { return float64(l.refused[i].Load()) }, connRefusalNames[i])
	}
	reg.Counter("intake_http_connections_evicted_total", "Idle HTTP connections (no request yet, or between requests) closed to make room for a new one at a cap.").
		Func(func() float64 { return float64(l.evicted.Load()) })
}

// limitListener admits the connections it accepts through a connLimit.
type limitListener struct {
	net.Listener
	l *connLimit
}

func (ll limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ll.l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// Drops is the connections closed at once because every connection under a cap was busy,
// by cap, for the collector's status.
func (s *Server) Drops() map[string]uint64 {
	m := map[string]uint64{}
	for k, n := range s.ConnStats().Refused {
		m["http."+k] = n
	}
	return m
}
