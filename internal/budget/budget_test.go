package budget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArithmetic(t *testing.T) {
	if Mul(1<<40, 1<<30) != maxInt64 || Mul(3, 4, 5) != 60 || Mul(7, 0) != 0 || Add(maxInt64, 1) != maxInt64 || Add(2, 3) != 5 {
		t.Error("Mul or Add")
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 68.5 * (1 << 20): "68.5 MiB", 126 << 30: "126.0 GiB", maxInt64: "more than 8 EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMemAvailable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(p, []byte("MemTotal:       32768000 kB\nMemFree:         1000 kB\nMemAvailable:   23911096 kB\n"), 0o644)
	if got := memAvailable(p); got != 23911096*1024 {
		t.Errorf("MemAvailable %d", got)
	}
	os.WriteFile(p, []byte("MemTotal: 1 kB\n"), 0o644)
	if got := memAvailable(p); got != -1 {
		t.Errorf("without MemAvailable: %d", got)
	}
	if got := memAvailable("/nonexistent"); got != -1 {
		t.Errorf("no file: %d", got)
	}
	if Local().MemAvailable <= 0 {
		t.Error("this machine's MemAvailable is unknown")
	}
}

// TestCheck: memory beyond MemAvailable and new files beyond a filesystem's free space are
// refused with the breakdown; files already present need no space.
func TestCheck(t *testing.T) {
	b := Budget{
		{Component: "flowcache", Part: "table", Memory: 3 << 30, Note: "big"},
		{Component: "dta", Part: "kw", Memory: 1 << 20, Disk: 1 << 20, Path: "/shm/x", Note: "kw.dta"},
		{Component: "dta", Part: "ki", Disk: 2 << 20, Present: 2 << 20, Path: "/shm/x"},
	}
	free := func(string) int64 { return 1 << 20 }
	if err := b.Check(Machine{MemAvailable: 4 << 30, Free: free}); err != nil {
		t.Errorf("fits: %v", err)
	}
	err := b.Check(Machine{MemAvailable: 2 << 30, Free: free})
	if err == nil || !strings.HasPrefix(err.Error(), "configuration needs 3.0 GiB of memory, 2.0 GiB is available (MemAvailable) (--force starts anyway)\nCOMPONENT  PART   MEMORY   DISK") ||
		!strings.Contains(err.Error(), "\nflowcache  table  3.0 GiB  -") || !strings.Contains(err.Error(), "\ntotal             3.0 GiB  3.0 MiB in /shm/x") {
		t.Errorf("memory: %v", err)
	}
	err = b.Check(Machine{MemAvailable: -1, Free: func(string) int64 { return 1<<20 - 1 }})
	if err == nil || !strings.HasPrefix(err.Error(), "configuration needs 1.0 MiB of new files in /shm/x, its filesystem has 1024.0 KiB free") {
		t.Errorf("disk: %v", err)
	}
	if FreeBytes(t.TempDir()) <= 0 || FreeBytes("/nonexistent/deeper/dir") <= 0 {
		t.Error("FreeBytes of a directory, and of a path to be created, is unknown")
	}
}

// TestGoLimit: the soft memory limit is the items the Go runtime manages; the process items
// add the runtime and a quarter of them (at least 64 MiB) of headroom.
func TestGoLimit(t *testing.T) {
	b := Budget{
		{Component: "detect", Part: "flow table", Memory: 1 << 30},
		{Component: "ingest", Part: "rcvbuf", Memory: 16 << 20, Outside: true},
		{Component: "dta", Part: "kw", Memory: 8 << 20, Outside: true},
	}
	if got := b.GoLimit(); got != 1<<30 {
		t.Errorf("GoLimit %d", got)
	}
	p := Process(b)
	if len(p) != 2 || p[0].Memory != 32<<20 || p[1].Memory != 256<<20 || p[1].Part != "garbage headroom" {
		t.Errorf("Process %+v", p)
	}
	if p := Process(b[1:]); p[1].Memory != 64<<20 {
		t.Errorf("Process of mapped items only: %+v", p)
	}
	if got := append(b, p...).GoLimit(); got != 1<<30+32<<20+256<<20 {
		t.Errorf("GoLimit with the process %d", got)
	}
}
