//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// serveChild is `intake serve` run as a separate process on a configuration of one DTA
// listener and the DTA stores in dir (extra: more of the dta section, YAML flow style),
// killed at the test's end: a crash of it is seen, not the test's.
type serveChild struct {
	cmd       *exec.Cmd
	udp, http string
	mu        sync.Mutex
	stderr    strings.Builder // what serve logged after it listened
	exited    chan struct{}
}

func startServeChild(t *testing.T, dir, extra string) *serveChild {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "intake.yaml")
	cfg := fmt.Sprintf("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '127.0.0.1:0'}\n"+
		"detect: {enabled: false}\nflowcache: {enabled: false}\nlabel: {enabled: false}\ndta: {data_dir: %s%s}\n", dir, extra)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &serveChild{cmd: exec.Command(exe, "serve", "--config", cfgPath), exited: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), childEnv+"=1")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); <-s.exited })
	lines := bufio.NewScanner(stderr)
	reUDP := regexp.MustCompile(`listening for dta on udp (\S+) `)
	reHTTP := regexp.MustCompile(`http on (\S+) `)
	var early strings.Builder
	for (s.udp == "" || s.http == "") && lines.Scan() {
		early.WriteString(lines.Text() + "\n")
		if m := reUDP.FindStringSubmatch(lines.Text()); m != nil {
			s.udp = m[1]
		}
		if m := reHTTP.FindStringSubmatch(lines.Text()); m != nil {
			s.http = m[1]
		}
	}
	go func() { // keep draining stderr so that serve never blocks on it
		for lines.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(lines.Text() + "\n")
			s.mu.Unlock()
		}
		s.cmd.Wait()
		close(s.exited)
	}()
	if s.udp == "" || s.http == "" {
		t.Fatalf("serve did not say where it listens (udp %q, http %q):\n%s", s.udp, s.http, early.String())
	}
	return s
}

// log is what serve has logged since it listened.
func (s *serveChild) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// alive fails the test when serve has exited.
func (s *serveChild) alive(t *testing.T) {
	t.Helper()
	select {
	case <-s.exited:
		t.Fatalf("serve died: %v\n%s", s.cmd.ProcessState, s.log())
	default:
	}
}

// waitDecoded waits until serve has decoded n reports.
func (s *serveChild) waitDecoded(t *testing.T, n uint64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("serve to decode %d reports", n), func() bool {
		s.alive(t)
		var st struct {
			Reports uint64 `json:"reports_decoded"`
		}
		collectortest.GetJSON(t, "http://"+s.http+"/api/v1/status", &st)
		return st.Reports == n
	})
}

// dtaDrops is the status's drops.dta[reason].
func (s *serveChild) dtaDrops(t *testing.T, reason string) uint64 {
	t.Helper()
	var st struct {
		Drops struct {
			DTA map[string]uint64 `json:"dta"`
		} `json:"drops"`
	}
	collectortest.GetJSON(t, "http://"+s.http+"/api/v1/status", &st)
	return st.Drops.DTA[reason]
}

// get is GET path of serve's API: the status code and the body.
func (s *serveChild) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.http + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sendKI sends Key-Increments of keys from to to-1, one a datagram, paced below the
// socket's buffer.
func sendKI(send func(...telemetry.Report), from, to int) {
	for k := from; k < to; k++ {
		ki := collectortest.DTAReport(telemetry.DTAKeyIncrement)
		ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 2, 4, 1
		binary.BigEndian.PutUint32(ki.DTA.Key[:], uint32(k))
		send(ki)
		if k%50 == 49 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A store file truncated under a running serve killed it (SIGBUS) at the next write or
// query. Now serve carries on: the stores go offline, the fault is logged and counted
// (intake_dta_faults_total), the reports after it are counted as dropped (drops.dta
// store_offline, as the status shows), queries answer 503 naming the file, and the rest of
// the collector answers as before. A query --store of the truncated file is refused.
func TestServeStoreTruncated(t *testing.T) {
	dir := t.TempDir()
	s := startServeChild(t, dir, "")
	send := collectortest.ReportSender(t, s.udp, wire.DefaultConfig())
	sendKI(send, 0, 100)
	s.waitDecoded(t, 100)
	if code, body := s.get(t, "/api/v1/dta/ki/7"); code != 200 || !strings.Contains(body, `"count": 1`) {
		t.Fatalf("before: %d %s", code, body)
	}
	ki := filepath.Join(dir, dta.FileKI)
	if err := os.Truncate(ki, 4096); err != nil { // the header kept, the data gone
		t.Fatal(err)
	}
	sendKI(send, 100, 150)
	s.waitDecoded(t, 150)
	wantErr := fmt.Sprintf("DTA stores of %s offline: memory fault at offset ", dir)
	code, body := s.get(t, "/api/v1/dta/ki/7")
	if code != 503 || !strings.Contains(body, wantErr) || !strings.Contains(body, " of "+ki+" (write): the file was truncated or its filesystem could not supply the page") {
		t.Errorf("query after the truncation: %d %s", code, body)
	}
	if n := s.dtaDrops(t, "store_offline"); n != 50 {
		t.Errorf("drops.dta.store_offline: %d, want 50", n)
	}
	if _, m := s.get(t, "/metrics"); !strings.Contains(m, "intake_dta_faults_total 1\n") || !strings.Contains(m, `intake_dta_bad_total{reason="store_offline"} 50`) {
		t.Errorf("metrics: no intake_dta_faults_total 1 and store_offline 50:\n%s", grepLines(m, "intake_dta_"))
	}
	var stats dta.Stats
	if code, body := s.get(t, "/api/v1/dta/stats"); code != 200 || json.Unmarshal([]byte(body), &stats) != nil || !strings.HasPrefix(stats.Offline, wantErr) || stats.Faults != 1 {
		t.Errorf("stats: %d %s", code, body)
	}
	if n := strings.Count(s.log(), "memory fault on a mapped store"); n != 1 {
		t.Errorf("%d faults logged, want 1:\n%s", n, s.log())
	}
	if code, _ := s.get(t, "/healthz"); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	s.alive(t)

	// query --store maps the file anew: its size no longer the header's, refused.
	code, out, errs := runVerb("query", "ki", "--store", dir, "7")
	if want := fmt.Sprintf("intake query ki: %s: header says ", ki); code != 1 || out != "" || !strings.HasPrefix(errs, want) {
		t.Errorf("query --store: %d %q %q, want 1 %q...", code, out, errs, want)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// The data directory on a small tmpfs that another process fills while serve writes: the
// stores were sparse, so serve died (SIGBUS) at the first write into a page the full
// filesystem could not supply. Now their pages are all allocated at creation: serve keeps
// writing every key, nothing is dropped or faulted; and stores too large for the filesystem
// are refused at the start with the space wanted and free.
func TestServeDataDirTmpfsFilled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v (needs CAP_SYS_ADMIN)", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "dta")
	small := ", key_write: {slots: 4096}, paths: {slots: 4096}, key_increment: {slots: 65536}, postcard: {chunks: 4096, values: 4096, cache: 1024}, append: {entries: 1024}"
	s := startServeChild(t, dir, small)
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(mnt, "fill"), "bs=4k").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left on device") {
		t.Fatalf("dd filled nothing: %v %s", err, out)
	}
	send := collectortest.ReportSender(t, s.udp, wire.DefaultConfig())
	const n = 2000 // keys over every page of the 512 KiB Key-Increment store
	sendKI(send, 0, n)
	s.waitDecoded(t, n)
	if n := s.dtaDrops(t, "store_offline"); n != 0 {
		t.Errorf("drops.dta.store_offline: %d, want 0", n)
	}
	for _, k := range []int{0, 999, n - 1} {
		if code, body := s.get(t, fmt.Sprintf("/api/v1/dta/ki/%d", k)); code != 200 || !strings.Contains(body, `"count": `) || strings.Contains(body, `"count": 0`) {
			t.Errorf("key %d: %d %s", k, code, body)
		}
	}
	s.alive(t)
	s.cmd.Process.Kill()
	<-s.exited

	// 256 KiB free: stores in a second data directory there are refused at the start,
	// naming the space (the Key-Increment store's 516 KiB).
	fill := filepath.Join(mnt, "fill")
	if fi, err := os.Stat(fill); err != nil || os.Truncate(fill, fi.Size()-256<<10) != nil {
		t.Fatal(err)
	}
	cfgPath := writeFile(t, "full.yaml", fmt.Sprintf("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0}\nhttp: {address: ''}\n"+
		"detect: {enabled: false}\nflowcache: {enabled: false}\nlabel: {enabled: false}\ndta: {data_dir: %s%s}\n", filepath.Join(mnt, "dta2"), small))
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "serve", "--force", "--config", cfgPath) // past the budget's check of the space
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err = cmd.CombinedOutput()
	want := regexp.MustCompile(regexp.QuoteMeta(filepath.Join(mnt, "dta2", dta.FileKI)) + `: the store needs 528384 bytes and its filesystem has \d+ bytes free: refused \(free space there, or make the dta stores smaller\): no space left on device`)
	if err == nil || ctx.Err() != nil || !want.Match(out) {
		t.Errorf("serve on the full filesystem: %v\n%s", err, out)
	}
}
