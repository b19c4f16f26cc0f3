package dta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/telemetry"
)

// kiReps are n Key-Increment reports of keys 1..n.
func kiReps(n int) []telemetry.Report {
	rs := make([]telemetry.Report, n)
	for i := range rs {
		rs[i] = dtaRep(telemetry.DTAKeyIncrement, uint32(i+1), 4, 0)
		rs[i].DTA.Redundancy, rs[i].DTA.Counter = 2, 1
	}
	return rs
}

// kiOff is the file offset of key's first Key-Increment counter, the first a write or a
// query touches.
func kiOff(s *KeyIncrement, key uint32) uint64 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], key)
	return headerSize + 8*s.slot(s.slotHash(b[:]), 0)
}

// A store file truncated under a running translator (anyone who can write it can) made
// the next write die with SIGBUS, and the collector with it. Now the fault is recovered:
// the stores go offline, the batch's reports are counted as dropped (store_offline), the
// fault is counted and logged once, queries answer 503 naming the file, and stats still
// answer, saying why.
func TestTruncatedStoreUnderWriter(t *testing.T) {
	dir := t.TempDir()
	var logb bytes.Buffer
	tr := NewTranslator(smallConfig(dir), Deps{Workers: 1, Logger: slog.New(slog.NewTextHandler(&logb, nil))})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.ProcessBatch(0, kiReps(3))
	tr.Flush(0)
	if got := tr.Written(WKeyIncrement); got != 3 {
		t.Fatalf("written before the truncation: %d, want 3", got)
	}
	ki := filepath.Join(dir, FileKI)
	if err := os.Truncate(ki, headerSize); err != nil {
		t.Fatal(err)
	}
	tr.ProcessBatch(0, kiReps(10)) // faults on the first report
	tr.ProcessBatch(0, kiReps(5))  // offline: not tried
	tr.Flush(0)
	if got, want := tr.Bad(BadOffline), uint64(15); got != want {
		t.Errorf("store_offline: %d, want %d", got, want)
	}
	if got := tr.Written(WKeyIncrement); got != 3 {
		t.Errorf("written: %d, want 3", got)
	}
	if got := tr.St.Faults(); got != 1 {
		t.Errorf("faults: %d, want 1", got)
	}
	want := fmt.Sprintf("DTA stores of %s offline: memory fault at offset %d of %s (write): the file was truncated or its filesystem could not supply the page; check the file and restart, or reset the stores (intake dta reset)", dir, kiOff(tr.St.KI, 1), ki)
	if err := tr.St.Offline(); err == nil || err.Error() != want {
		t.Errorf("offline: %v\nwant %s", err, want)
	}
	if n := strings.Count(logb.String(), "memory fault on a mapped store"); n != 1 || !strings.Contains(logb.String(), "file="+ki) {
		t.Errorf("log: %d faults logged, want 1 naming %s:\n%s", n, ki, logb.String())
	}
	// Every query answers the fault; stats answer, without reading the mappings.
	for _, p := range []string{"/api/v1/dta/ki/1", "/api/v1/dta/kw/1", "/api/v1/dta/postcard/1", "/api/v1/dta/list/0"} {
		_, err := api.Serve(tr, p, nil)
		if se := (*api.StatusError)(nil); !errors.As(err, &se) || se.Code != 503 || se.Msg != want {
			t.Errorf("%s: %v, want 503 %s", p, err, want)
		}
	}
	body, err := api.Serve(tr, "/api/v1/dta/stats", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Offline != want || st.Faults != 1 || st.Bad["store_offline"] != 15 || len(st.Regions) != 5 || st.Regions[0].Fill != nil {
		t.Errorf("stats: offline %q faults %d store_offline %d regions %d", st.Offline, st.Faults, st.Bad["store_offline"], len(st.Regions))
	}
	if err := tr.Stop(context.Background()); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// `intake query --store` maps the files read-only: a file truncated after the open made a
// query die with SIGBUS; now it answers 503 with the fault.
func TestTruncatedStoreUnderReader(t *testing.T) {
	dir := t.TempDir()
	tr := NewTranslator(smallConfig(dir), Deps{Workers: 1})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr.ProcessBatch(0, kiReps(3))
	tr.Flush(0)
	if err := tr.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := NewAPI(st, 4)
	if body, err := api.Serve(a, "/api/v1/dta/ki/1", nil); err != nil || !strings.Contains(string(body), `"count": 1`) {
		t.Fatalf("before: %s %v", body, err)
	}
	ki := filepath.Join(dir, FileKI)
	if err := os.Truncate(ki, 0); err != nil {
		t.Fatal(err)
	}
	_, err = api.Serve(a, "/api/v1/dta/ki/1", nil)
	want := fmt.Sprintf("DTA stores of %s offline: memory fault at offset %d of %s (query)", dir, kiOff(st.KI, 1), ki)
	if se := (*api.StatusError)(nil); !errors.As(err, &se) || se.Code != 503 || !strings.HasPrefix(se.Msg, want) {
		t.Errorf("after: %v, want 503 %s...", err, want)
	}
	if st.Faults() != 1 {
		t.Errorf("faults: %d, want 1", st.Faults())
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at the test's end.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mount tmpfs: %v (needs CAP_SYS_ADMIN)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// The stores were created sparse: a filesystem that filled up after the start (tmpfs
// under /dev/shm is anyone's) could not supply the next page written, and the writer died
// with SIGBUS. Now every page is allocated when the store is created: a filesystem too
// small refuses the stores with the space wanted and free, and one filled afterwards by
// another process takes nothing from them.
func TestStoresAllocatedAtCreation(t *testing.T) {
	cfg := smallConfig("")
	small := mountTmpfs(t, 256<<10)
	big := cfg
	big.DataDir = filepath.Join(small, "dta")
	big.KeyWrite.Slots = 1 << 16 // 1 MiB and a page
	err := openErr(&big)
	want := fmt.Sprintf("%s: the store needs %d bytes and its filesystem has ", filepath.Join(big.DataDir, FileKW), headerSize+(1<<16)*KWHeader(big.KeyWrite, 0).SlotBytes)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), " bytes free: refused (free space there, or make the dta stores smaller): no space left on device") {
		t.Fatalf("stores larger than the filesystem: %v\nwant %s...", err, want)
	}
	ents, _ := os.ReadDir(big.DataDir)
	for _, e := range ents {
		if e.Name() != LockFile {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	cfg.DataDir = filepath.Join(mountTmpfs(t, 4<<20), "dta")
	cfg.KeyIncrement.Slots = 1 << 16 // 512 KiB: pages enough to meet the filler
	tr := NewTranslator(cfg, Deps{Workers: 1})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tr.Stop(context.Background())
	// Another process takes every block left.
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(filepath.Dir(cfg.DataDir), "fill"), "bs=64k").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left on device") {
		t.Fatalf("dd filled nothing: %v %s", err, out)
	}
	// Every slot of the Key-Increment store written: pages no write had touched.
	rs := make([]telemetry.Report, 0, 4096)
	for k := range uint32(4096) {
		r := dtaRep(telemetry.DTAKeyIncrement, k, 4, 0)
		r.DTA.Redundancy, r.DTA.Counter = 2, 1
		rs = append(rs, r)
	}
	tr.ProcessBatch(0, rs)
	tr.Flush(0)
	if tr.Written(WKeyIncrement) != 4096 || tr.Bad(BadOffline) != 0 || tr.St.Faults() != 0 {
		t.Errorf("written %d, offline %d, faults %d; want 4096, 0, 0", tr.Written(WKeyIncrement), tr.Bad(BadOffline), tr.St.Faults())
	}
	// A count-min sketch never counts less: each key's count is there.
	for k := range uint32(4096) {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], k)
		if c, err := tr.St.KI.Count(b[:], 2); c < 1 || err != nil {
			t.Fatalf("count of key %d: %d %v, want at least 1", k, c, err)
		}
	}
}

// A writer that faults holding a postcard cache entry's spin lock never releases it: a
// worker waiting on that entry spun for good. Now it gives up once the stores are offline,
// and its reports count as dropped.
func TestOfflineCacheLockHeld(t *testing.T) {
	tr := NewTranslator(smallConfig(t.TempDir()), Deps{Workers: 1, Logger: slog.New(slog.DiscardHandler)})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := dtaRep(telemetry.DTAPostcard, 9, 4, 4)
	r.DTA.Hop = 1
	e := tr.Cache.lock(Hash64(tr.St.PC.Seed(), r.DTA.KeyBytes())) // the faulted holder's
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.ProcessBatch(0, []telemetry.Report{r, r, r})
	}()
	select {
	case <-done:
		t.Fatal("the batch did not wait for the held entry")
	case <-time.After(20 * time.Millisecond):
	}
	tr.St.takeOffline(&FaultError{Dir: tr.St.Dir, File: "postcard.dta", Op: "write"})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker still spins on the entry after the stores went offline")
	}
	tr.Flush(0)
	if got := tr.Bad(BadOffline); got != 3 {
		t.Errorf("store_offline: %d, want 3", got)
	}
	e.lock.Store(0)
	if err := tr.Stop(context.Background()); err != nil {
		t.Errorf("stop: %v", err)
	}
}
