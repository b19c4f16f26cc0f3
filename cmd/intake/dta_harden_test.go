//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// Store files and the data directory as an attacker or an unlucky operator leaves them
// (docs/dta.md, "Data directory and store files"), through the verbs: query --store, serve,
// dta reset.

// craftHeader writes a region file in dir: the header fields at the offsets of
// docs/dta-layout.md (the rest zero) and data bytes of zeros after the 4 KiB header.
func craftHeader(t *testing.T, dir, name string, prim, slotBytes, maxN, checkBits, valueBytes, hops uint32, slots, capacity, dataLen uint64, data int) {
	t.Helper()
	b := make([]byte, 4096+data)
	le := binary.LittleEndian
	copy(b, "INTKDTA\x00")
	le.PutUint32(b[8:], 1)
	le.PutUint32(b[12:], prim)
	le.PutUint64(b[32:], slots)
	le.PutUint32(b[40:], slotBytes)
	le.PutUint32(b[44:], maxN)
	le.PutUint32(b[48:], checkBits)
	le.PutUint32(b[52:], valueBytes)
	le.PutUint32(b[56:], hops)
	le.PutUint64(b[64:], capacity)
	le.PutUint64(b[72:], 4096)
	le.PutUint64(b[80:], dataLen)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Slots = 2^61 with DataLen = 0 on a 4 KiB file made `intake query kw|ki|postcard --store`
// die (SIGSEGV, index out of range); now each is refused with the field named.
func TestQueryStoreCraftedHeaders(t *testing.T) {
	for _, tc := range []struct {
		verb, file string
		craft      func(dir string)
		want       string
	}{
		{"kw", dta.FileKW, func(dir string) { craftHeader(t, dir, dta.FileKW, 1, 8, 2, 32, 4, 0, 1<<61, 0, 0, 0) },
			"slots 2305843009213693952: allowed is a power of two up to 2^34"},
		{"ki", dta.FileKI, func(dir string) { craftHeader(t, dir, dta.FileKI, 3, 8, 2, 0, 8, 0, 1<<61, 0, 0, 0) },
			"slots 2305843009213693952: allowed is a power of two up to 2^34"},
		{"postcard", dta.FilePostcard, func(dir string) { craftHeader(t, dir, dta.FilePostcard, 4, 8, 2, 32, 4, 2, 1<<61, 1<<61, 0, 0) },
			"chunks 2305843009213693952: allowed is a power of two up to 2^32"},
		{"list", dta.FileAppend, func(dir string) { craftHeader(t, dir, dta.FileAppend, 2, 4, 0, 0, 4, 0, 1, 1<<62, 64, 64) },
			"entries 4611686018427387904: allowed is a power of two from 64 to 2^30"},
	} {
		dir := t.TempDir()
		tc.craft(dir)
		code, out, errs := runVerb("query", tc.verb, "--store", dir, "0")
		want := fmt.Sprintf("intake query %s: %s: %s\n", tc.verb, filepath.Join(dir, tc.file), tc.want)
		if code != 1 || out != "" || errs != want {
			t.Errorf("%s: %d %q %q, want 1 %q", tc.verb, code, out, errs, want)
		}
	}
}

// startStop starts a collector on dir and stops it: the stores exist afterwards.
func startStop(t *testing.T, dir string) config.Config {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, "listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '127.0.0.1:0'}\n"+
		"detect: {enabled: false}\nflowcache: {enabled: false}\nlabel: {enabled: false}\ndta: {data_dir: %s}\n", dir))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collector.New(cfg, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A postcard store whose known-values counter (header offset 104) is 2^31 made one GET of
// /api/v1/dta/postcard/{key} allocate 32 GiB and kill serve; now the answer comes at the
// cost of the entries actually present.
func TestServePostcardKnownValuesCounter(t *testing.T) {
	dir := t.TempDir()
	cfg := startStop(t, dir)
	f, err := os.OpenFile(filepath.Join(dir, dta.FilePostcard), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(binary.LittleEndian.AppendUint64(nil, 1<<31), 104)
	f.Close()

	c := collectortest.Run(t, cfg)
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	resp, err := http.Get("http://" + c.API.Addr() + "/api/v1/dta/postcard/42")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 64<<20 {
		t.Errorf("one GET allocated %d bytes", n)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status": "not_found"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if m := queryJSON(t, "postcard", "--store", dir, "42"); m["status"] != "not_found" {
		t.Errorf("--store: %v", m)
	}
}

// A second writer on a data directory fails naming the first's pid; a symbolic link planted
// as a store, an empty store and another user's directory stop serve at start; `intake dta
// reset` removes the stores on purpose, and refuses while a collector runs.
func TestServeDataDirRefusals(t *testing.T) {
	dir := t.TempDir()
	cfg := startStop(t, dir)
	cfgPath := filepath.Join(t.TempDir(), "intake.yaml")
	os.WriteFile(cfgPath, fmt.Appendf(nil, "listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: ''}\n"+
		"detect: {enabled: false}\nflowcache: {enabled: false}\nlabel: {enabled: false}\ndta: {data_dir: %s}\n", dir), 0o600)
	// serveErr runs serve, which must refuse to start: one that runs is stopped after 5 s.
	serveErr := func() string {
		t.Helper()
		var out, errb syncBuffer
		done := make(chan int)
		go func() { done <- run([]string{"serve", "--config", cfgPath}, &out, &errb) }()
		var code int
		select {
		case code = <-done:
		case <-time.After(5 * time.Second):
			sigterm()
			code = <-done
			t.Errorf("serve started and ran")
		}
		if code != 1 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		return lines[len(lines)-1]
	}

	c := collectortest.Run(t, cfg)
	lock := filepath.Join(dir, dta.LockFile)
	if got, want := serveErr(), fmt.Sprintf("intake serve: dta: dta.data_dir: %s: in use by another writer (pid %d holds %s): one writing collector per data directory", dir, os.Getpid(), lock); got != want {
		t.Errorf("second writer:\n%s\nwant\n%s", got, want)
	}
	code, out, errs := runVerb("dta", "reset", "--data-dir", dir)
	if want := fmt.Sprintf("intake dta reset: %s: in use by another writer (pid %d holds %s): one writing collector per data directory\n", dir, os.Getpid(), lock); code != 1 || out != "" || errs != want {
		t.Errorf("reset under a writer: %d %q %q", code, out, errs)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	kw := filepath.Join(dir, dta.FileKW)
	os.Remove(kw)
	victim := filepath.Join(t.TempDir(), "victim")
	os.Symlink(victim, kw)
	if got, want := serveErr(), "intake serve: dta: "+kw+": a symbolic link: refused (the data directory and its files must not be links)"; got != want {
		t.Errorf("symlink:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("serve created the link's target")
	}
	os.Remove(kw)
	os.WriteFile(kw, nil, 0o600)
	if got := serveErr(); !strings.HasPrefix(got, "intake serve: dta: "+kw+": 0 bytes, the configuration needs ") ||
		!strings.HasSuffix(got, ": not a DTA region: reset the stores (intake dta reset)") {
		t.Errorf("empty store: %s", got)
	}

	code, out, errs = runVerb("dta", "reset", "--config", cfgPath)
	var want strings.Builder
	for _, f := range []string{dta.FileKW, dta.FilePaths, dta.FileKI, dta.FilePostcard, dta.FileAppend} {
		fmt.Fprintf(&want, "removed %s\n", filepath.Join(dir, f))
	}
	if code != 0 || out != want.String() || errs != "" {
		t.Errorf("reset: %d %q %q", code, out, errs)
	}
	if code, out, _ := runVerb("dta", "reset", "--data-dir", dir); code != 0 || out != "no stores in "+dir+"\n" {
		t.Errorf("second reset: %d %q", code, out)
	}
	startStop(t, dir) // starts again on fresh stores

	if os.Geteuid() == 0 {
		os.Chown(dir, 65534, 65534)
		if got, want := serveErr(), fmt.Sprintf("intake serve: dta: dta.data_dir: %s: owned by uid 65534, not by this user (uid 0): refused", dir); got != want {
			t.Errorf("another user's directory:\n%s\nwant\n%s", got, want)
		}
	}
}

func TestDTAResetUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dta", "reset"}, "intake dta reset: --data-dir DIR or --config FILE is required (the default data directory is " + dta.DefaultDataDir + ")\n"},
		{[]string{"dta", "reset", "--data-dir", "x", "--config", "y"}, "intake dta reset: --data-dir and --config exclude each other\n"},
		{[]string{"dta", "reset", "x"}, "intake dta reset: unexpected argument \"x\"\n"},
	} {
		if code, _, errs := runVerb(tc.args...); code != 2 || errs != tc.want {
			t.Errorf("%v: %d %q, want 2 %q", tc.args, code, errs, tc.want)
		}
	}
}
