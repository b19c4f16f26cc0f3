package main

import (
	"strings"
	"testing"
	"time"
)

// TestServeListenWildcard: with http.address 0.0.0.0 the startup line says that every IPv4
// address is listened on (and no IPv6 one is: docs/config.md). Before, serve listened on
// [::] for it, IPv6 too, and the line said "http on [::]:PORT".
func TestServeListenWildcard(t *testing.T) {
	cfg := writeFile(t, "serve.yaml", `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 1}
http: {address: '0.0.0.0:0'}
`)
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run([]string{"serve", "--config", cfg}, &out, &errb) }()
	_, httpAddr := serveReady(t, &errb, 5*time.Second)
	if !strings.HasPrefix(httpAddr, "0.0.0.0:") ||
		!strings.Contains(errb.String(), "intake serve: http on "+httpAddr+" (all IPv4 addresses) (/metrics, /healthz, /api/v1/status; no token: ") {
		t.Errorf("start lines:\n%s", errb.String())
	}
	sigterm()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop")
	}
}
