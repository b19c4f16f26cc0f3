package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestQueryFlowNotation: `intake query flow` reads the one flow notation (">", "->" or the
// console's "→"; protocol names in any case, or numbers) and asks the API for the same flow.
func TestQueryFlowNotation(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"no such flow"}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for flow, want := range map[string]string{
		"10.0.0.1:40001 > 10.0.1.2:443 udp":      "dport=443&dst=10.0.1.2&proto=17&sport=40001&src=10.0.0.1",
		"10.0.0.1:40001 -> 10.0.1.2:443 UDP":     "dport=443&dst=10.0.1.2&proto=17&sport=40001&src=10.0.0.1",
		"10.0.0.1:40001 → 10.0.1.2:443 17":       "dport=443&dst=10.0.1.2&proto=17&sport=40001&src=10.0.0.1",
		"[2001:db8::1]:1→[2001:db8::2]:2 ICMPv6": "dport=2&dst=2001%3Adb8%3A%3A2&proto=58&sport=1&src=2001%3Adb8%3A%3A1",
		"10.0.0.1:5 -> 10.0.0.2:6 sctp":          "dport=6&dst=10.0.0.2&proto=132&sport=5&src=10.0.0.1",
	} {
		got = nil
		code, _, errs := runVerb("query", "flow", "--api", addr, flow)
		if code != 1 || !strings.Contains(errs, "404") || len(got) != 1 || got[0] != want {
			t.Errorf("%q: exit %d %q, asked %q, want %q", flow, code, errs, got, want)
		}
	}
}
