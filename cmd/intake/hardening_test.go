package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
)

// TestServeBudget: --check (and start) refuse a configuration that needs more memory than
// the machine has, with the breakdown; --force passes. Before, --check said ok and start
// died out of memory.
func TestServeBudget(t *testing.T) {
	huge := writeFile(t, "huge.yaml", "listeners: [{format: report, port: 9999}]\nflowcache: {rows: 16777216, buckets: 64, rings: 64, ring_entries: 1048576, max_hops: 32}\n")
	code, out, errs := runVerb("serve", "--config", huge, "--check")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "intake serve: configuration needs ") ||
		!strings.Contains(errs, " of memory, ") || !strings.Contains(errs, "(MemAvailable) (--force starts anyway)\nCOMPONENT") ||
		!strings.Contains(errs, "\nflowcache  rings ") {
		t.Errorf("--check: %d %q %q", code, out, errs)
	}
	code, out, errs = runVerb("serve", "--config", huge, "--check", "--force")
	if code != 0 || !strings.HasPrefix(out, huge+": ok: 1 listeners") || !strings.Contains(out, "\nflowcache  table ") {
		t.Errorf("--check --force: %d %q %q", code, out, errs)
	}
	code, out, _ = runVerb("serve", "--config", huge, "--dump")
	if code != 0 || !strings.Contains(out, "\n# Budget: the memory and files each component takes at these sizes\n# COMPONENT") {
		t.Errorf("--dump: %d %q", code, out)
	}
	start := time.Now()
	code, _, errs = runVerb("serve", "--config", "/dev/zero", "--check")
	if code != 2 || errs != "intake serve: open /dev/zero: a character device, not a regular file\n" || time.Since(start) > 2*time.Second {
		t.Errorf("/dev/zero: %d %q after %s", code, errs, time.Since(start))
	}
}

// TestServeSecured runs serve with a token and streams open: the commands need the token
// (INTAKE_TOKEN), status lists the drops, and SIGTERM stops it within a second with exit
// status 0. Before, one open stream held SIGTERM up for 6.9 s and the exit status was 1.
func TestServeSecured(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("0123456789abcdef-token\n"), 0o600)
	cfg := writeFile(t, "serve.yaml", `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 1, rcvbuf: 1048576, allow: [127.0.0.2]}
http: {address: '127.0.0.1:0', token_file: `+tok+`}
`)
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run([]string{"serve", "--config", cfg}, &out, &errb) }()
	trAddr, httpAddr := serveReady(t, &errb, 5*time.Second)
	if !strings.Contains(errb.String(), "intake serve: http on "+httpAddr+" (/metrics, /healthz, /api/v1/status; bearer token required)\n") {
		t.Errorf("start lines:\n%s", errb.String())
	}
	send := func(b []byte) {
		sendFromAddr(t, "127.0.0.1:0", trAddr, b)
	}
	send([]byte{0xff})

	code, _, serr := runVerb("status", "--api", httpAddr)
	if code != 1 || serr != "intake status: 401 Unauthorized: a bearer token is required: Authorization: Bearer TOKEN (http.token) (set INTAKE_TOKEN or INTAKE_TOKEN_FILE)\n" {
		t.Errorf("status without a token: %d %q", code, serr)
	}
	t.Setenv("INTAKE_TOKEN_FILE", tok)
	var sout string
	testutil.Eventually(t, 5*time.Second, "one drop in status", func() bool {
		code, sout, serr = runVerb("status", "--api", httpAddr)
		return code == 0 && strings.Contains(sout, "\ndrops: 1\n")
	})
	if !strings.Contains(sout, "\ndrops: 1\n  ingest: (not_allowed 1)\n") {
		t.Errorf("status: %d\n%s%s", code, sout, serr)
	}
	if code, qout, qerr := runVerb("query", "events", "--api", httpAddr, "--json"); code != 0 || !strings.Contains(qout, `"events"`) {
		t.Errorf("query events with the token: %d %q %q", code, qout, qerr)
	}

	// Two streams open, one read and one not.
	for range 2 {
		req, _ := http.NewRequest("GET", "http://"+httpAddr+"/api/v1/events/stream", nil)
		req.Header.Set("Authorization", "Bearer 0123456789abcdef-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if l, _ := bufio.NewReader(resp.Body).ReadString('\n'); l != ": intake event stream\n" {
			t.Fatalf("stream: %s %q", resp.Status, l)
		}
	}
	start := time.Now()
	sigterm()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("SIGTERM to exit: %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(out.String(), "  ingest drops      1 (not_allowed 1)\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// sendFromAddr sends b from a socket bound to local.
func sendFromAddr(t *testing.T, local, to string, b []byte) {
	t.Helper()
	la, _ := net.ResolveUDPAddr("udp", local)
	ra, _ := net.ResolveUDPAddr("udp", to)
	conn, err := net.DialUDP("udp", la, ra)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(b)
}
