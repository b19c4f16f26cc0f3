//go:build unix && !linux

package flowcache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocWords returns n zeroed words, and the mapping behind them when there is one (for
// unmapWords). As on Linux (table_linux.go), a large table is mapped outside the Go heap,
// so that the garbage collector neither scans nor copies it; the huge-page advice is
// Linux's and is not asked for here.
func allocWords(n int) ([]uint64, []byte) {
	const hugeMin = 4 << 20
	if n*8 < hugeMin {
		return make([]uint64, n), nil
	}
	b, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]uint64, n), nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), b
}

// unmapWords releases a mapping of allocWords.
func unmapWords(b []byte) { unix.Munmap(b) }
