//go:build !unix

package dta

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"
)

// The fallback for systems without mmap in golang.org/x/sys/unix (Windows): the simplest
// honest one, not a shared mapping.
//
//   - A read-only open (OpenRegion: `intake query --store`, a snapshot directory) reads the
//     whole file into memory: the answers are those of the store as it was when opened, and
//     later writes by a collector are not seen, as they would be through a mapping.
//   - A writable store (CreateRegion, the collector's dta.data_dir) is refused with an error:
//     it needs the shared file mapping that makes it a store (the collector, `intake serve`,
//     needs Linux anyway).
//   - Anonymous regions (simulations, `intake sim`) are ordinary Go memory: a []uint64, so
//     that every word is 8-byte aligned for the atomic accesses, and no pointers to scan.
//
// There are no huge pages (Region.Huge stays false) and nothing to msync.

// mapFile reads size bytes of f into memory (read-only opens only).
func mapFile(f *os.File, size int, writable bool) ([]byte, error) {
	if writable {
		return nil, fmt.Errorf("writable DTA stores need a shared file mapping (mmap), which intake supports on Linux and other Unix systems, not on %s; read-only opens (intake query --store) work: %w", runtime.GOOS, errors.ErrUnsupported)
	}
	mem := alignedBytes(size)
	if _, err := io.ReadFull(f, mem); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("file shrank while it was read")
		}
		return nil, err
	}
	return mem, nil
}

// mapAnon returns size bytes of zeroed memory.
func mapAnon(size int) ([]byte, error) { return alignedBytes(size), nil }

// alignedBytes returns size zeroed bytes starting on an 8-byte boundary.
func alignedBytes(size int) []byte {
	if size == 0 {
		return []byte{}
	}
	w := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), size)
}

// adviseHuge: no transparent huge pages to ask for.
func adviseHuge([]byte) bool { return false }

// syncMem: there is no file mapping to write back (writable stores are refused).
func syncMem([]byte) error { return nil }

// unmapMem drops nothing: the garbage collector frees the memory once the Region lets go.
func unmapMem([]byte) error { return nil }

// mapKernelArray: BPF arrays are Linux's.
func mapKernelArray(uint32, int) ([]byte, error) {
	return nil, fmt.Errorf("dta: kernel-held stores need Linux: %w", errors.ErrUnsupported)
}
