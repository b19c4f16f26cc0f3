package prefetch

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestAddrs: prefetching live, stale and nonsense addresses neither faults nor changes
// memory.
func TestAddrs(t *testing.T) {
	buf := make([]uint64, 1024)
	for i := range buf {
		buf[i] = uint64(i)
	}
	var as []uintptr
	for i := 0; i < len(buf); i += 8 {
		as = append(as, uintptr(unsafe.Pointer(&buf[i])))
	}
	as = append(as, 0, 8, ^uintptr(0), ^uintptr(0)>>1)
	Addrs(as)
	Addrs(nil)
	for i := range buf {
		if buf[i] != uint64(i) {
			t.Fatalf("word %d changed to %d", i, buf[i])
		}
	}
	if a := testing.AllocsPerRun(100, func() { Addrs(as) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

var sink uint64

// BenchmarkGather updates one word in each of 64 random lines of a 256 MiB table with a
// locked add (as a processor takes a row or entry lock per update: a locked instruction lets
// no later load start before it completes, so the misses cannot overlap on their own), with
// and without prefetching the lines first: what overlapping the misses is worth here.
func BenchmarkGather(b *testing.B) {
	const words = 1 << 25
	mem := make([]uint64, words)
	for i := range mem {
		mem[i] = uint64(i)
	}
	idx := make([]int, 64)
	as := make([]uintptr, 64)
	x := uint64(1)
	fill := func() {
		for j := range idx {
			x = x*6364136223846793005 + 1442695040888963407
			idx[j] = int(x>>20) & (words - 1)
		}
	}
	for _, pf := range []bool{false, true} {
		name := "plain"
		if pf {
			name = "prefetched"
		}
		b.Run(name, func(b *testing.B) {
			var acc uint64
			for b.Loop() {
				fill()
				if pf {
					for j, i := range idx {
						as[j] = uintptr(unsafe.Pointer(&mem[i]))
					}
					Addrs(as)
				}
				for _, i := range idx {
					acc += atomic.AddUint64(&mem[i], 1)
				}
			}
			sink = acc
		})
	}
}
