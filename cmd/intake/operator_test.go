//go:build linux

package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// The operator's CLI (issue 31): exit codes and warnings a script relies on.

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
	tr, httpAddr := startServe(t, "--config", cfg, "--http", "127.0.0.1:0", "--listen", "report=127.0.0.1:0")
	if !strings.HasPrefix(tr, "127.0.0.1:") || !strings.HasPrefix(httpAddr, "127.0.0.1:") {
		t.Errorf("report on %q, http on %q", tr, httpAddr)
	}
	if code, _, errs := runVerb("status", "--api", httpAddr, "--json"); code != 0 {
		t.Errorf("status through --http: exit %d %s", code, errs)
	}
}

// startServe runs `intake serve args...` in-process until the test ends (then SIGTERM, and
// it must exit 0), and returns its report listener's and HTTP addresses.
func startServe(t *testing.T, args ...string) (trAddr, httpAddr string) {
	t.Helper()
	var sout, serr syncBuffer
	done := make(chan int)
	go func() { done <- run(append([]string{"serve"}, args...), &sout, &serr) }()
	t.Cleanup(func() {
		sigterm()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, serr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return serveReady(t, &serr, 10*time.Second)
}

// TestFabricDefaults: serve and fabric, each at its defaults (serve's HTTP API aside, on a
// free port), fill the console: /api/v1/topology has switches and links within seconds; and
// fabric opens no control listener unless --control asks. Before, --int-md defaulted to 0
// (no report: an empty fabric page) and the control endpoint listened on 127.0.0.1:8050.
func TestFabricDefaults(t *testing.T) {
	for _, p := range []int{config.PortReport, config.PortReportAlt, config.PortDTA, config.PortLabel} {
		c, err := net.ListenUDP("udp", &net.UDPAddr{Port: p})
		if err != nil {
			t.Fatalf("serve's default port %d is taken (another collector running?): %v", p, err)
		}
		c.Close()
	}
	_, httpAddr := startServe(t, "--http", "127.0.0.1:0")

	var fout, ferr syncBuffer
	fabricDone := make(chan int)
	go func() { fabricDone <- run([]string{"fabric", "--duration", "3s"}, &fout, &ferr) }()
	var topo struct {
		Flows    int               `json:"flows"`
		Switches []json.RawMessage `json:"switches"`
		Links    []json.RawMessage `json:"links"`
	}
	testutil.Eventually(t, 3*time.Second, "a non-empty /api/v1/topology", func() bool {
		_, _, body := call(t, httpAddr, "/api/v1/topology")
		return json.Unmarshal(body, &topo) == nil && topo.Flows > 0 && len(topo.Switches) > 0 && len(topo.Links) > 0
	})
	if code := <-fabricDone; code != 0 {
		t.Errorf("fabric exited %d: %s", code, ferr.String())
	}
	if s := ferr.String(); strings.Contains(s, "control on") || !strings.Contains(s, "exports to udp 127.0.0.1:40050, reports to udp 127.0.0.1:32766\n") {
		t.Errorf("fabric's start line: %q", s)
	}
}

// TestSimGrammar: sim label and sim dta take --figure, --out DIR, --json and --quiet alike
// and name each file they write; the older spellings (sim label --fig, sim dta --svg FILE)
// still work and warn. Before, sim label took --fig and sim dta --svg, and neither said
// what it wrote.
func TestSimGrammar(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.svg")
	code, _, errs := runVerb("sim", "dta", "--slots", "4096", "--keys", "3000", "--quiet", "--svg", old)
	if want := "intake: --svg is deprecated: use --out DIR, which writes the plot into DIR\nintake sim dta: wrote " + old + "\n"; code != 0 || errs != want {
		t.Errorf("sim dta --svg: exit %d, %q\nwant %q", code, errs, want)
	}
	if b, err := os.ReadFile(old); err != nil || !strings.HasPrefix(string(b), "<svg") {
		t.Errorf("--svg's file: %v", err)
	}
	code, _, errs = runVerb("sim", "label", "--fig", "fig19", "--quiet", "--json")
	if want := "intake: --fig is deprecated: use --figure, which means the same\n"; code != 0 || errs != want {
		t.Errorf("sim label --fig: exit %d, %q\nwant %q", code, errs, want)
	}
	for _, v := range []string{"label", "dta"} {
		_, help, _ := runVerb("sim", v, "--help")
		for _, f := range []string{"\n  -figure ", "\n  -out DIR\n", "\n  -json\n", "\n  -quiet\n"} {
			if !strings.Contains(help, f) {
				t.Errorf("sim %s --help lacks %q", v, f)
			}
		}
	}
}

// TestHelpPlaceholders: no verb's --help shows Go's default placeholders (value, int,
// string, duration, float, uint): each flag names what it takes. Before, fabric's flags
// (and a few of sim's and query's) did.
func TestHelpPlaceholders(t *testing.T) {
	generic := regexp.MustCompile(`(?m)^  -\S+ (value|int|string|duration|float|uint|uint64)$`)
	check := func(args ...string) {
		_, out, _ := runVerb(append(args, "--help")...)
		if m := generic.FindAllString(out, -1); len(m) > 0 {
			t.Errorf("intake %s --help: %q", strings.Join(args, " "), m)
		}
	}
	for name := range verbs {
		if groups[name] == nil {
			check(name)
		}
	}
	for gname, g := range groups {
		for name := range g.subs {
			check(gname, name)
		}
	}
}

// TestFabricOldFlags: fabric's one-letter flags still work and warn.
func TestFabricOldFlags(t *testing.T) {
	code, _, errs := runVerb("fabric", "-t", "10ms", "-t1", "5ms", "-f", "F2", "--algo", "b", "--int-md", "0", "--label", "127.0.0.1:9", "--duration", "50ms")
	for _, w := range []string{
		"intake: --t is deprecated: use --interval, which means the same\n",
		"intake: --t1 is deprecated: use --rest, which means the same\n",
		"intake: --f is deprecated: use --function, which means the same\n",
		"algo b, T 10ms; exports to udp 127.0.0.1:9\n",
	} {
		if code != 0 || !strings.Contains(errs, w) {
			t.Errorf("exit %d, stderr %q lacks %q", code, errs, w)
		}
	}
}

// TestTxUtilizationKey: the histogram width's key is tx_utilization, as every other part of
// intake says; tx_util still works, with a logged warning. Before, only tx_util was read.
func TestTxUtilizationKey(t *testing.T) {
	for _, c := range []struct{ yaml, warn string }{
		{"tx_utilization: 7", ""},
		{"tx_util: 7", `level=WARN msg="flowcache.histograms.width.tx_util is deprecated: use flowcache.histograms.width.tx_utilization, which means the same"`},
	} {
		p := writeFile(t, "intake.yaml", "flowcache:\n  histograms: {scale: linear, width: {"+c.yaml+"}}\n")
		code, out, errs := runVerb("serve", "--config", p, "--dump")
		if code != 0 || !strings.Contains(out, "            tx_utilization: 7\n") || strings.Contains(errs, "WARN") != (c.warn != "") || !strings.Contains(errs, c.warn) {
			t.Errorf("%s: exit %d, stderr %q", c.yaml, code, errs)
		}
	}
}
