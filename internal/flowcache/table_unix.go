//go:build unix

package flowcache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocWords returns n zeroed words, and the mapping behind them when there is one (for
// unmapWords). A large table is mapped outside the Go heap, so that the garbage collector
// neither scans nor copies it, with transparent huge pages requested where the system has
// them (adviseHuge): its accesses are random by design, and with 4 KiB pages nearly every
// update would also miss the TLB (on a VM, a nested page walk costs more than the update).
// table_other.go is the fallback (Go memory).
func allocWords(n int) ([]uint64, []byte) {
	if n*8 < hugeMin {
		return make([]uint64, n), nil
	}
	b, err := unix.Mmap(-1, 0, n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]uint64, n), nil
	}
	adviseHuge(b)
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), b
}

// unmapWords releases a mapping of allocWords.
func unmapWords(b []byte) { unix.Munmap(b) }
