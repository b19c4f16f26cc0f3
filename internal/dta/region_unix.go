//go:build unix && !linux

package dta

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The mapping of a region on the Unix systems other than Linux (macOS, the BSDs): the same
// shared file mappings as on Linux, through golang.org/x/sys/unix, so that a query process
// sees a collector's writes as they land. Huge-page advice is Linux's (MADV_HUGEPAGE): here
// there is none, and Region.Huge stays false.

// mapFile maps size bytes of f shared, read-write when writable, else read-only.
func mapFile(f *os.File, size int, writable bool) ([]byte, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	return unix.Mmap(int(f.Fd()), 0, size, prot, unix.MAP_SHARED)
}

// mapAnon maps size bytes of private anonymous memory, zeroed.
func mapAnon(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
}

// adviseHuge: no transparent huge pages to ask for off Linux.
func adviseHuge([]byte) bool { return false }

// syncMem schedules the write-back of a file mapping (msync MS_ASYNC).
func syncMem(mem []byte) error { return unix.Msync(mem, unix.MS_ASYNC) }

// unmapMem releases a mapping of mapFile or mapAnon.
func unmapMem(mem []byte) error { return unix.Munmap(mem) }

// mapKernelArray: BPF arrays are Linux's.
func mapKernelArray(uint32, int) ([]byte, error) { return nil, errNoKernelArrays }

var errNoKernelArrays = errors.New("dta: kernel-held stores need Linux")
