package dta

import (
	"os"
	"syscall"
	"unsafe"
)

// The Linux mapping of a region: shared file mappings (or private anonymous memory), with
// transparent huge pages requested by madvise and msync for Sync. region_unix.go is the
// other Unix systems' version, region_other.go the fallback elsewhere (Windows).

// mapFile maps size bytes of f shared, read-write when writable, else read-only.
func mapFile(f *os.File, size int, writable bool) ([]byte, error) {
	prot := syscall.PROT_READ
	if writable {
		prot |= syscall.PROT_WRITE
	}
	return syscall.Mmap(int(f.Fd()), 0, size, prot, syscall.MAP_SHARED)
}

// mapAnon maps size bytes of private anonymous memory, zeroed.
func mapAnon(size int) ([]byte, error) {
	return syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// adviseHuge asks for transparent huge pages on mem and reports whether the kernel accepted.
func adviseHuge(mem []byte) bool {
	return syscall.Madvise(mem, 14 /* MADV_HUGEPAGE */) == nil
}

// syncMem schedules the write-back of a file mapping (msync MS_ASYNC).
func syncMem(mem []byte) error {
	_, _, e := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), syscall.MS_ASYNC)
	if e != 0 {
		return e
	}
	return nil
}

// unmapMem releases a mapping of mapFile or mapAnon.
func unmapMem(mem []byte) error { return syscall.Munmap(mem) }
