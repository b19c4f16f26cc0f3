package flowcache

import (
	"context"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStartPrefaults: after Start every page of a mapped table is resident, so that no
// update takes a first-touch fault (which, with huge pages requested, may compact memory
// on the worker's time); the table's contents are what they were.
func TestStartPrefaults(t *testing.T) {
	c := DefaultConfig() // 68.5 MiB: mapped, huge pages requested
	f := New(c, Deps{})
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&f.t.mem[0])), len(f.t.mem)*8)
	f.t.mem[1] = 42
	resident := func() int {
		vec := make([]byte, (len(mem)+4095)/4096)
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
		if errno != 0 {
			t.Fatal(errno)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	if n := resident(); n > len(mem)/4096/2 {
		t.Fatalf("%d of %d pages resident before Start: the test cannot tell", n, len(mem)/4096)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop(context.Background())
	if n, all := resident(), (len(mem)+4095)/4096; n != all {
		t.Fatalf("%d of %d pages resident after Start", n, all)
	}
	if f.t.mem[1] != 42 {
		t.Fatalf("prefault changed the table: %d", f.t.mem[1])
	}
}
