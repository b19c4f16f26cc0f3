package api

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// FuzzGuard: any Host and Authorization header get an answer from the guard (served,
// 401 or 421), never a panic; a Host that is not a loopback, local or allowed name is
// never served.
func FuzzGuard(f *testing.F) {
	for _, s := range [][2]string{{"localhost:8040", "Bearer 0123456789abcdef"}, {"[::1]", "bearer x"}, {"evil.example", ""},
		{"127.0.0.1:", "Basic abc"}, {"[fe80::1%25eth0]:80", "Bearer  0123456789abcdef "}, {"intake.example.net.", "Bearer"}} {
		f.Add(s[0], s[1])
	}
	var g guard
	g.init("0123456789abcdef", true, []string{"intake.example.net"})
	h := g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }))
	local := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8040}
	f.Fuzz(func(t *testing.T, host, auth string) {
		r := httptest.NewRequest("GET", "/api/v1/status", nil)
		r.Host = host
		r.Header.Set("Authorization", auth)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case 299:
			if !mayServe(host) {
				t.Fatalf("Host %q served", host)
			}
		case 401, 421:
		default:
			t.Fatalf("Host %q, Authorization %q: %d", host, auth, w.Code)
		}
	})
}

// mayServe is the rule, written apart from the guard's code: a host that names this
// server (local address 192.0.2.1).
func mayServe(host string) bool {
	if host == "" {
		return true
	}
	if x, _, err := net.SplitHostPort(host); err == nil {
		host = x
	}
	hn := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if hn == "localhost" || hn == "intake.example.net" {
		return true
	}
	ip, err := netip.ParseAddr(hn)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	return ip.IsLoopback() || ip == netip.MustParseAddr("192.0.2.1")
}
