package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// The operator's CLI (issue 31): exit codes and warnings a script relies on.

// deadAddr is a loopback TCP address nothing listens on (a port taken and released).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// TestStatusClusterDown: `status --cluster` prints the table (or the JSON) and exits 1 when
// a member is down, naming it on stderr. Before, it exited 0.
func TestStatusClusterDown(t *testing.T) {
	dead := deadAddr(t)
	coll := collectortest.Start(t, func(c *config.Config) {
		c.Cluster = cluster.Config{Self: "c0", Timeout: time.Second,
			Members: []cluster.Member{{Name: "c0", API: "127.0.0.1:1"}, {Name: "c1", API: dead}}}
	})
	code, out, errs := runVerb("status", "--cluster", "--api", coll.API.Addr())
	if code != 1 || errs != "intake status: 1 of 2 members down: c1\n" || !strings.Contains(out, "c1 is down: ") {
		t.Errorf("table: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	code, out, errs = runVerb("status", "--cluster", "--api", coll.API.Addr(), "--json")
	var st cluster.StatusJSON
	if code != 1 || errs != "intake status: 1 of 2 members down: c1\n" || json.Unmarshal([]byte(out), &st) != nil || len(st.Members) != 2 || st.Members[1].Up {
		t.Errorf("--json: exit %d, stderr %q, stdout %.200q", code, errs, out)
	}
}

// TestConfigErrorExit2: a configuration that does not parse or validate is misuse: exit 2
// with the key and the value, for every verb that reads one. Before, it exited 1.
func TestConfigErrorExit2(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "flowcache: {rows: -1}\n")
	for _, args := range [][]string{
		{"serve", "--config", bad, "--check"},
		{"consume", "--config", bad},
		{"dta", "reset", "--config", bad},
	} {
		code, _, errs := runVerb(args...)
		if code != 2 || !strings.Contains(errs, bad+": flowcache.rows: -1: must be ") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	if code, _, errs := runVerb("serve", "--config", "/nonexistent/intake.yaml", "--check"); code != 2 || errs != "intake serve: open /nonexistent/intake.yaml: no such file or directory\n" {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

// TestAddrDeprecated: --addr still works and warns once on stderr that --api replaces it.
// Before, it said nothing.
func TestAddrDeprecated(t *testing.T) {
	coll := collectortest.Start(t, nil)
	code, out, errs := runVerb("status", "--addr", coll.API.Addr(), "--json")
	if code != 0 || errs != "intake: --addr is deprecated: use --api, which means the same\n" || !strings.HasPrefix(out, "{") {
		t.Errorf("exit %d, stderr %q, stdout %.40q", code, errs, out)
	}
}

// TestServeHTTPListen: --http replaces http.address; each --listen FORMAT=ADDR:PORT
// replaces the configuration's listeners of FORMAT (the file's, or the four defaults) and
// keeps the others; a bad one is misuse. Before, serve had neither flag.
func TestServeHTTPListen(t *testing.T) {
	code, out, errs := runVerb("serve", "--http", "127.0.0.1:0", "--listen", "report=127.0.0.1:9000", "--listen", "report=:9001", "--check")
	if want := "defaults: ok: 4 listeners (dta on udp *:40040, int-label on udp *:40050, report on udp 127.0.0.1:9000, report on udp *:9001), http 127.0.0.1:0\n"; code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("over the defaults: exit %d, %q %q\nwant %q", code, out, errs, want)
	}
	cfg := writeFile(t, "serve.yaml", "listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\n  - {format: report, port: 7000}\nhttp: {address: ''}\n")
	code, out, errs = runVerb("serve", "--config", cfg, "--listen", "int-label=127.0.0.1:0", "--listen", "report=127.0.0.1:0", "--check")
	if want := cfg + ": ok: 3 listeners (dta on udp 127.0.0.1:0, int-label on udp 127.0.0.1:0, report on udp 127.0.0.1:0), http off\n"; code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("over a file: exit %d, %q %q\nwant %q", code, out, errs, want)
	}
	for _, c := range []struct{ arg, want string }{
		{"report", `intake serve: invalid value "report" for flag -listen: "report": want FORMAT=ADDR:PORT, e.g. report=:32766 (formats: report, int-md, dta, int-label)` + "\n"},
		{"sflow=:6343", `intake serve: invalid value "sflow=:6343" for flag -listen: "sflow=:6343": format "sflow": want one of report, int-md, dta, int-label` + "\n"},
		{"report=:70000", `intake serve: invalid value "report=:70000" for flag -listen: "report=:70000": port "70000": want 0-65535 (0: a free port the kernel picks)` + "\n"},
	} {
		if code, _, errs := runVerb("serve", "--listen", c.arg, "--check"); code != 2 || errs != c.want {
			t.Errorf("--listen %s: exit %d, %q\nwant %q", c.arg, code, errs, c.want)
		}
	}

	// Running: the listeners and the API are where the flags say.
	var sout, serr syncBuffer
	done := make(chan int)
	go func() {
		done <- run([]string{"serve", "--config", cfg, "--http", "127.0.0.1:0", "--listen", "report=127.0.0.1:0"}, &sout, &serr)
	}()
	tr, httpAddr := serveReady(t, &serr, 5*time.Second)
	if !strings.HasPrefix(tr, "127.0.0.1:") || !strings.HasPrefix(httpAddr, "127.0.0.1:") {
		t.Errorf("report on %q, http on %q", tr, httpAddr)
	}
	if code, _, errs := runVerb("status", "--api", httpAddr, "--json"); code != 0 {
		t.Errorf("status through --http: exit %d %s", code, errs)
	}
	sigterm()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, serr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}
