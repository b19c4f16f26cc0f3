package dta

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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

// mapKernelArray maps read-only the BPF array with id id (a kernel-held store's data,
// docs/xdp.md), checking that it is an array of size bytes in 8-byte slots. It needs
// CAP_SYS_ADMIN (root), as opening any BPF object by id does.
func mapKernelArray(id uint32, size int) ([]byte, error) {
	const (
		bpfMapGetFDByID = 14
		bpfObjGetInfo   = 15
		bpfMapArray     = 2
	)
	// A read-only descriptor (BPF_F_RDONLY) cannot be mapped at all: the mapping is what is
	// read-only here.
	attr := [3]uint32{id, 0, 0}
	fd, _, e := syscall.Syscall(unix.SYS_BPF, bpfMapGetFDByID, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	if e != 0 {
		return nil, e
	}
	defer syscall.Close(int(fd))
	var info struct {
		Type, ID, KeySize, ValueSize, MaxEntries, Flags uint32
		Name                                            [16]byte
		_                                               [64]byte
	}
	ia := struct {
		FD, Len uint32
		Info    uint64
	}{uint32(fd), uint32(unsafe.Sizeof(info)), uint64(uintptr(unsafe.Pointer(&info)))}
	if _, _, e := syscall.Syscall(unix.SYS_BPF, bpfObjGetInfo, uintptr(unsafe.Pointer(&ia)), unsafe.Sizeof(ia)); e != 0 {
		return nil, e
	}
	// The id comes from a file: only an array of intake's stores, of the header's size.
	name := string(bytes.TrimRight(info.Name[:], "\x00"))
	if info.Type != bpfMapArray || info.ValueSize != 8 || int(info.MaxEntries)*8 != size || (name != "kw_store" && name != "ki_store" && name != "ap_store") {
		return nil, fmt.Errorf("BPF map %d (%q): type %d, %d slots of %d bytes: not a store of %d bytes", id, name, info.Type, info.MaxEntries, info.ValueSize, size)
	}
	return syscall.Mmap(int(fd), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}
