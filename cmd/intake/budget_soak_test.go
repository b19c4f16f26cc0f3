package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/budget"
)

var budgetSoak = flag.Bool("budget-soak", false, "run TestBudgetSoak: drive serve's components to their limits and compare its peak RSS with the printed budget")

// soakMargin is what TestBudgetSoak lets the peak RSS exceed the printed budget by: the
// budget's own process items count the runtime, code and garbage, so the margin is only for
// the kernel's rounding of what it charges (page tables, partly touched huge pages).
const soakMargin = 0.05

// TestBudgetSoak (behind -budget-soak; minutes) runs serve as a child process with small
// limits, fills the flow cache past its flows, the detector past its flow and key limits and
// the DTA stores (postcards with many known values, Key-Write, Append), while clients run
// the heaviest queries (flow cache top and topology, postcards, events, label ports, stats),
// and checks the child's peak RSS (VmHWM) against the budget `serve --check` prints.
//
//	go test ./cmd/intake -run TestBudgetSoak -budget-soak -v
func TestBudgetSoak(t *testing.T) {
	if !*budgetSoak {
		t.Skip("behind -budget-soak")
	}
	shm, err := os.MkdirTemp("/dev/shm", "intake-soak-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shm)
	cfgPath := writeFile(t, "soak.yaml", fmt.Sprintf(`
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 2, rcvbuf: 4194304}
  - {name: dta, format: dta, address: 127.0.0.1, port: 0, sockets: 1, rcvbuf: 4194304}
http: {address: '127.0.0.1:0'}
flowcache: {rows: 8192, buckets: 8, max_hops: 5}
detect: {max_flows: 65536, max_keys: 16384}
dta:
  data_dir: %s
  key_write: {slots: 1048576}
  postcard: {chunks: 262144, values: 4194304}
`, filepath.Join(shm, "dta")))
	code, out, errs := runVerb("serve", "--config", cfgPath, "--check")
	m := regexp.MustCompile(`(?m)^total +([0-9.]+) (KiB|MiB|GiB)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("serve --check: %d %s%s", code, out, errs)
	}
	printed, _ := strconv.ParseFloat(m[1], 64)
	printed *= map[string]float64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]
	t.Logf("budget:\n%s", out)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addrs := map[string]string{}
	lines := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`listening for (report|dta) on udp (\S+) |http on (\S+) `)
	for len(addrs) < 3 && lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil && m[3] != "" {
			addrs["http"] = m[3]
		} else if m != nil {
			addrs[m[1]] = m[2]
		}
	}
	go io.Copy(io.Discard, stderr)
	if len(addrs) < 3 {
		t.Fatalf("serve did not say where it listens: %v", addrs)
	}
	status := func(field string) int64 { // kB
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(b)
		if m == nil {
			return -1
		}
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	t.Logf("started: VmRSS %d MiB", status("VmRSS")>>10)

	// Load: the flow cache and the detector past their flows, switches past the key limit,
	// postcards with many values, key-writes, in the background for the whole run.
	var wg sync.WaitGroup
	gen := func(args ...string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, out, errs := runVerb(append([]string{"gen"}, args...)...); code != 0 {
				t.Errorf("gen %v: %d %s%s", args, code, out, errs)
			}
		}()
	}
	gen("--to", addrs["report"], "--flows", "200000", "--switches", "40000", "--hops", "5", "--fresh", "--count", "600000", "--pps", "60000")
	gen("--to", addrs["dta"], "--format", "dta", "--dta-op", "postcard", "--flows", "300000", "--switches", "65536", "--fresh", "--count", "600000", "--pps", "60000")
	gen("--to", addrs["dta"], "--format", "dta", "--dta-op", "key-write", "--flows", "1000000", "--count", "300000", "--pps", "30000")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Queries, four clients in a loop until the load is done.
	paths := []string{"/api/v1/flowcache/top?n=1000", "/api/v1/flowcache/top?by=latency&n=1000", "/api/v1/topology",
		"/api/v1/dta/postcard/1", "/api/v1/dta/postcard/0x0a000001", "/api/v1/events?limit=100000", "/api/v1/label/ports",
		"/api/v1/dta/stats", "/api/v1/flowcache/stats", "/api/v1/dta/kw/7", "/metrics", "/api/v1/dta/list/0?limit=100000"}
	var queries, slowest sync.Map
	var qwg sync.WaitGroup
	for c := range 4 {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			for i := c; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				p := paths[i%len(paths)]
				start := time.Now()
				resp, err := http.Get("http://" + addrs["http"] + p)
				if err != nil {
					t.Errorf("GET %s: %v", p, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				d := time.Since(start)
				if v, ok := slowest.Load(p); !ok || d > v.(time.Duration) {
					slowest.Store(p, d)
				}
				n, _ := queries.LoadOrStore(p, new(int))
				*n.(*int)++
			}
		}()
	}
	var peak int64
	for tick := time.NewTicker(time.Second); ; {
		select {
		case <-done:
		case <-tick.C:
			t.Logf("VmRSS %d MiB, VmHWM %d MiB (anon %d MiB, shmem %d MiB, file %d MiB)", status("VmRSS")>>10, status("VmHWM")>>10,
				status("RssAnon")>>10, status("RssShmem")>>10, status("RssFile")>>10)
			continue
		}
		break
	}
	qwg.Wait()
	peak = status("VmHWM") << 10
	slowest.Range(func(k, v any) bool { t.Logf("slowest GET %s: %s", k, v); return true })
	for _, p := range []string{"/api/v1/flowcache/stats", "/api/v1/dta/stats"} {
		resp, err := http.Get("http://" + addrs["http"] + p)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("%s: %.600s", p, b)
		}
	}
	t.Logf("budget printed %s, peak RSS (VmHWM) %s (%.0f%% of the budget)", budget.Bytes(int64(printed)), budget.Bytes(peak), 100*float64(peak)/printed)
	if float64(peak) > printed*(1+soakMargin) {
		t.Errorf("peak RSS %s exceeds the printed budget %s by more than %.0f%%", budget.Bytes(peak), budget.Bytes(int64(printed)), 100*soakMargin)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
}
