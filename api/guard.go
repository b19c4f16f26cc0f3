package api

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/intake-int/intake/internal/metrics"
)

// MaxBody is the largest request body the server reads; a longer one is refused with 413.
const MaxBody = 64 << 10

// guard is what every request passes before its handler (docs/security.md):
//
//   - the Host header must name this server: an IP address it is reached at (the
//     connection's local address or the bound one), a loopback address, localhost, or one
//     of http.allowed_hosts. A browser sends the name of the page's origin, so a page on a
//     name that an attacker's DNS points at the collector (DNS rebinding) is refused;
//   - with a token configured, the request must carry it (Authorization: Bearer): writes
//     always, reads unless token_reads is off; /healthz never needs it, nor do the console's
//     pages (HandlePages), which are static files;
//   - a body is capped at MaxBody.
type guard struct {
	token   string
	reads   bool
	allowed map[string]bool
	pages   bool                       // HandlePages was called: GETs outside the API and /metrics are static pages
	bound   atomic.Pointer[netip.Addr] // the address listened on, once started

	counts [numRefusals]atomic.Uint64 // intake_http_refused_total{reason}
}

// Refusal reasons, the reason label of intake_http_refused_total.
const (
	refusedHost = iota
	refusedToken
	refusedBody
	numRefusals
)

var refusalNames = [numRefusals]string{"host", "token", "body"}

func (g *guard) init(token string, reads bool, allowed []string) {
	g.token, g.reads, g.allowed = token, reads, map[string]bool{}
	for _, h := range allowed {
		g.allowed[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
}

// register puts the guard's counter on reg.
func (g *guard) register(reg *metrics.Registry) {
	if reg == nil {
		return
	}
	f := reg.Counter("intake_http_refused_total", "HTTP requests refused before their handler, by reason (host: a Host header that does not name this server; token: a missing or wrong bearer token; body: a body over the size limit).", "reason")
	for i := range numRefusals {
		f.Func(func() float64 { return float64(g.counts[i].Load()) }, refusalNames[i])
	}
}

// Refused returns the requests refused so far, by reason.
func (g *guard) Refused() map[string]uint64 {
	m := map[string]uint64{}
	for i := range numRefusals {
		m[refusalNames[i]] = g.counts[i].Load()
	}
	return m
}

func (g *guard) setBound(a net.Addr) {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			ip = ip.Unmap()
			g.bound.Store(&ip)
		}
	}
}

// write reports whether the method changes state.
func write(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

func (g *guard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			h.ServeHTTP(w, r)
			return
		}
		if !g.hostOK(r) {
			g.counts[refusedHost].Add(1)
			Error(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q does not name this server (a loopback or local address, localhost, or a name in http.allowed_hosts)", r.Host))
			return
		}
		if g.token != "" && (g.reads || write(r.Method)) && !g.page(r) && !g.tokenOK(r) {
			g.counts[refusedToken].Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer realm="intake"`)
			Error(w, http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer TOKEN (http.token)")
			return
		}
		if r.ContentLength > MaxBody {
			g.counts[refusedBody].Add(1)
			Error(w, http.StatusRequestEntityTooLarge, "body larger than "+strconv.Itoa(MaxBody)+" bytes")
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &countedBody{ReadCloser: http.MaxBytesReader(w, r.Body, MaxBody), g: g}
		}
		h.ServeHTTP(w, r)
	})
}

// page reports whether r asks for one of the console's static pages, which need no token.
func (g *guard) page(r *http.Request) bool {
	p := r.URL.Path
	return g.pages && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		p != "/metrics" && p != "/api" && !strings.HasPrefix(p, "/api/")
}

func (g *guard) tokenOK(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(g.token)) == 1
}

// hostOK checks the Host header (see guard).
func (g *guard) hostOK(r *http.Request) bool {
	host := r.Host
	if host == "" { // HTTP/1.0 without Host: not a browser
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || g.allowed[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false // a name: only localhost and the allowed ones
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() {
		return true
	}
	if b := g.bound.Load(); b != nil && !b.IsUnspecified() && *b == ip {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok {
			if l, ok := netip.AddrFromSlice(ta.IP); ok && l.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// countedBody counts a body cut at MaxBody (chunked bodies have no Content-Length).
type countedBody struct {
	io.ReadCloser
	g    *guard
	seen bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if _, ok := err.(*http.MaxBytesError); ok && !b.seen {
		b.seen = true
		b.g.counts[refusedBody].Add(1)
	}
	return n, err
}
