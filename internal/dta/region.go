package dta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"
)

// A Region is one primitive's store: a file mapped shared into memory, a 4 KiB header
// followed by the data area (docs/dta-layout.md). The collector maps it read-write; a query
// process maps the same file read-only and sees every write as it lands, which is intake's
// stand-in for RDMA's direct memory access. The data area holds no pointers, so the garbage
// collector never scans it, and a store survives a restart: kill -9 loses only the writes
// in flight, since the kernel owns the pages. The mapping calls are per OS: region_linux.go,
// region_unix.go (macOS, the BSDs), region_other.go (Windows: read-only opens read the file).

// Primitive numbers, as in the region header (and the DTA opcodes).
const (
	PrimKeyWrite     = 1
	PrimAppend       = 2
	PrimKeyIncrement = 3
	PrimPostcard     = 4
)

// Layouts.
const (
	LayoutDefault = 0
	LayoutCompat  = 1
)

// Hash functions named in the header.
const (
	HashIntake = 0 // Hash64 below, seeded
	HashCRC32  = 1 // CRC-32 IEEE, the public prototype's
)

const (
	headerSize = 4096
	magic      = "INTKDTA\x00"
	version    = 1
)

// Header is a region's header, little-endian at fixed offsets (docs/dta-layout.md).
type Header struct {
	Primitive  uint32 // PrimKeyWrite, ...
	Layout     uint32 // LayoutDefault or LayoutCompat
	Hash       uint32 // HashIntake or HashCRC32
	Seed       uint64
	Slots      uint64 // Key-Write/Key-Increment: slots M; Postcarding: chunks C; Append: lists
	SlotBytes  uint32 // stride of a slot, chunk or list entry
	MaxN       uint32 // maximum redundancy (Postcarding: the redundancy)
	CheckBits  uint32 // b
	ValueBytes uint32
	Hops       uint32 // Postcarding: B
	Capacity   uint64 // Append: entries per list; Postcarding: known-value table entries
	DataLen    uint64 // bytes after the header
	Created    int64  // Unix ns
}

// geometryEqual compares what must agree for a file to be reused.
func (h *Header) geometryEqual(o *Header) bool {
	a, b := *h, *o
	a.Created, b.Created = 0, 0
	return a == b
}

func (h *Header) String() string {
	return fmt.Sprintf("primitive %d layout %d slots %d slot_bytes %d n %d b %d value_bytes %d hops %d capacity %d seed %#x",
		h.Primitive, h.Layout, h.Slots, h.SlotBytes, h.MaxN, h.CheckBits, h.ValueBytes, h.Hops, h.Capacity, h.Seed)
}

// Header field offsets.
const (
	offMagic     = 0
	offVersion   = 8
	offPrim      = 12
	offLayout    = 16
	offHash      = 20
	offSeed      = 24
	offSlots     = 32
	offSlotBytes = 40
	offMaxN      = 44
	offCheckBits = 48
	offValBytes  = 52
	offHops      = 56
	offCapacity  = 64
	offDataOff   = 72
	offDataLen   = 80
	offCreated   = 88
	offEpoch     = 96  // counter: Key-Increment resets
	offValCount  = 104 // counter: Postcarding known values
	offKernelMap = 112 // the id of the BPF array holding the data while a collector runs with dta.kernel; 0: the data is in the file
)

func (h *Header) put(b []byte) {
	le := binary.LittleEndian
	copy(b[offMagic:], magic)
	le.PutUint32(b[offVersion:], version)
	le.PutUint32(b[offPrim:], h.Primitive)
	le.PutUint32(b[offLayout:], h.Layout)
	le.PutUint32(b[offHash:], h.Hash)
	le.PutUint64(b[offSeed:], h.Seed)
	le.PutUint64(b[offSlots:], h.Slots)
	le.PutUint32(b[offSlotBytes:], h.SlotBytes)
	le.PutUint32(b[offMaxN:], h.MaxN)
	le.PutUint32(b[offCheckBits:], h.CheckBits)
	le.PutUint32(b[offValBytes:], h.ValueBytes)
	le.PutUint32(b[offHops:], h.Hops)
	le.PutUint64(b[offCapacity:], h.Capacity)
	le.PutUint64(b[offDataOff:], headerSize)
	le.PutUint64(b[offDataLen:], h.DataLen)
	le.PutUint64(b[offCreated:], uint64(h.Created))
}

func parseHeader(b []byte) (Header, error) {
	le := binary.LittleEndian
	if len(b) < headerSize || !bytes.Equal(b[:8], []byte(magic)) {
		return Header{}, errors.New("not a DTA region (bad magic)")
	}
	if v := le.Uint32(b[offVersion:]); v != version {
		return Header{}, fmt.Errorf("region version %d (this intake reads %d)", v, version)
	}
	if o := le.Uint64(b[offDataOff:]); o != headerSize {
		return Header{}, fmt.Errorf("data offset %d (expected %d)", o, headerSize)
	}
	return Header{
		Primitive: le.Uint32(b[offPrim:]), Layout: le.Uint32(b[offLayout:]), Hash: le.Uint32(b[offHash:]),
		Seed: le.Uint64(b[offSeed:]), Slots: le.Uint64(b[offSlots:]), SlotBytes: le.Uint32(b[offSlotBytes:]),
		MaxN: le.Uint32(b[offMaxN:]), CheckBits: le.Uint32(b[offCheckBits:]), ValueBytes: le.Uint32(b[offValBytes:]),
		Hops: le.Uint32(b[offHops:]), Capacity: le.Uint64(b[offCapacity:]), DataLen: le.Uint64(b[offDataLen:]),
		Created: int64(le.Uint64(b[offCreated:])),
	}, nil
}

// Region is a mapped store file (or anonymous memory for simulations).
type Region struct {
	Path     string
	Hdr      Header
	ReadOnly bool
	Huge     bool // the kernel accepted MADV_HUGEPAGE
	mem      []byte
	Data     []byte // mem[headerSize:]; or memory held elsewhere (RegionOver, useKernel)
	external bool   // Data is not this region's to unmap
	fileData []byte // useKernel: the file's data area, written back at Close
	kernel   []byte // OpenRegion of a kernel-held region: the array's read-only mapping
}

// useKernel moves a writer's region into kernel memory mem (a BPF array of package xdp,
// whose id is id): the file's data is copied into it, the header names the array for
// readers, and Close copies the data back to the file.
func (r *Region) useKernel(mem []byte, id uint32) error {
	if uint64(len(mem)) != r.Hdr.DataLen {
		return fmt.Errorf("dta: %d bytes of kernel memory for a region of %d", len(mem), r.Hdr.DataLen)
	}
	copy(mem, r.Data)
	r.fileData, r.Data = r.Data, mem
	r.counter(offKernelMap).Store(uint64(id))
	return nil
}

// KernelMap is the id of the BPF array that holds the region's data (0: the file holds it).
func (r *Region) KernelMap() uint64 { return r.counter(offKernelMap).Load() }

// RegionOver is a region of header h whose data is mem (h.DataLen bytes), memory that
// something else holds and maps: the kernel-written stores of package xdp (DTA in the
// kernel: BPF_F_MMAPABLE arrays with the data layout of docs/dta-layout.md). Its header is
// process memory; Close leaves mem alone.
func RegionOver(h Header, mem []byte) (*Region, error) {
	if uint64(len(mem)) != h.DataLen {
		return nil, fmt.Errorf("dta: %d bytes of memory for a region of %d", len(mem), h.DataLen)
	}
	hdr := make([]byte, headerSize)
	h.put(hdr)
	return &Region{Hdr: h, mem: hdr, Data: mem, external: true}, nil
}

// counter returns the header's atomic counter at off.
func (r *Region) counter(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.mem[off]))
}

// CreateRegion opens path read-write, creating it with header h when it does not exist. An
// existing file must have the same geometry: a store is never silently reinterpreted, and an
// empty or short file is an error, not a new store (ResetStores removes the files on
// purpose). The file must be a regular file of this user's that no one else can write, and
// not a symbolic link (openStoreFile checks the file it opened). Every block of the file is
// allocated (allocate: fallocate on Linux), and a filesystem without the space refuses it.
func CreateRegion(path string, h Header, huge bool) (_ *Region, err error) {
	h.Created = time.Now().UnixNano()
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	size := int64(headerSize) + int64(h.DataLen)
	f, fsize, fresh, err := openStoreFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fresh {
		// A store this call created and could not finish is removed: left empty, the next
		// start would refuse it.
		defer func() {
			if err != nil {
				os.Remove(path)
			}
		}()
	} else if fsize != size {
		what := "the geometry changed: restore the configuration, or reset the stores (intake dta reset)"
		if fsize < headerSize {
			what = "not a DTA region: reset the stores (intake dta reset)"
		}
		return nil, fmt.Errorf("%s: %d bytes, the configuration needs %d: %s", path, fsize, size, what)
	}
	// Every page backed now, a new file's or an existing one's (a sparse store of an older
	// intake, a hole punched since): a write never meets a page the filesystem lacks.
	if err := allocate(f, path, size); err != nil {
		return nil, err
	}
	mem, err := mapFile(f, int(size), true)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	r := &Region{Path: path, mem: mem, Data: mem[headerSize:]}
	if fresh {
		h.put(mem)
		r.Hdr = h
	} else {
		old, err := parseHeader(mem)
		if err == nil && !old.geometryEqual(&h) {
			err = fmt.Errorf("geometry in the file (%s) differs from the configuration (%s): restore the configuration, or reset the stores (intake dta reset)", &old, &h)
		}
		if err != nil {
			unmapMem(mem)
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.Hdr = old
	}
	if huge {
		r.Huge = adviseHuge(mem)
	}
	return r, nil
}

// OpenRegion maps an existing region file read-only, for queries by another process. The
// file is untrusted: it must be a regular file, and its header is read and checked (every
// field within what a configuration allows, the data length the one the geometry gives, the
// file that long) before anything is mapped.
func OpenRegion(path string) (*Region, error) {
	f, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	fsize := st.Size()
	if fsize < headerSize {
		return nil, fmt.Errorf("%s: %d bytes: not a DTA region", path, fsize)
	}
	var hb [headerSize]byte
	if _, err := f.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h, err := parseHeader(hb[:])
	if err == nil {
		err = h.check()
	}
	if err == nil && h.DataLen != uint64(fsize-headerSize) {
		err = fmt.Errorf("header says %d data bytes, the file has %d", h.DataLen, fsize-headerSize)
	}
	if err == nil && uint64(fsize) > uint64(maxInt) {
		err = fmt.Errorf("%d bytes: more than this system can map", fsize)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	mem, err := mapFile(f, int(fsize), false)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	// The geometry is the header as checked, not the mapping's: a file rewritten between the
	// read and the map cannot change it. The counters are read from the mapping, and every
	// use of them is bounded (Postcard.table, Append.Poll).
	r := &Region{Path: path, Hdr: h, ReadOnly: true, mem: mem, Data: mem[headerSize:]}
	// A collector with dta.kernel holds the data in a BPF array while it runs: read that,
	// where this process may (root); else the file, as of the collector's last stop.
	if id := r.KernelMap(); id != 0 {
		if km, err := mapKernelArray(uint32(id), int(h.DataLen)); err == nil {
			r.kernel, r.Data = km, km[:h.DataLen]
		}
	}
	return r, nil
}

const maxInt = int(^uint(0) >> 1)

// AnonRegion is a region in private anonymous memory: simulations and benchmarks.
func AnonRegion(h Header) (*Region, error) {
	size := headerSize + int(h.DataLen)
	mem, err := mapAnon(size)
	if err != nil {
		return nil, fmt.Errorf("anonymous region of %d bytes: %w", size, err)
	}
	h.put(mem)
	r := &Region{Hdr: h, mem: mem, Data: mem[headerSize:]}
	r.Huge = adviseHuge(mem)
	return r, nil
}

// Sync asks the kernel to write the region back to its file (msync); tmpfs needs none.
func (r *Region) Sync() error {
	if r.ReadOnly || r.Path == "" {
		return nil
	}
	return syncMem(r.mem)
}

// snapshotTo copies the whole region (header and data) to file name of dir: an epoch
// snapshot. Writes racing the copy land in it or not, as for any reader. The copy is written
// to a new file (O_EXCL: never through a link) and renamed over name.
func (r *Region) snapshotTo(dir *os.Root, name string) error {
	tmp := name + ".tmp"
	// The header as it is, but naming no kernel array: the snapshot's data is its own.
	var hdr [headerSize]byte
	copy(hdr[:], r.mem[:headerSize])
	clear(hdr[offKernelMap : offKernelMap+8])
	dir.Remove(tmp) // a copy a crash left
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(hdr[:])
	if err == nil {
		_, err = f.Write(r.Data)
	}
	if err = errors.Join(err, f.Close()); err != nil {
		dir.Remove(tmp)
		return err
	}
	return dir.Rename(tmp, name)
}

// Close unmaps the region.
func (r *Region) Close() error {
	if r.mem == nil {
		return nil
	}
	if r.external {
		r.mem, r.Data = nil, nil
		return nil
	}
	if r.fileData != nil {
		// The collector has stopped: the kernel's program no longer writes (ingest stops
		// first), and the file takes the data back for readers and the next start.
		copy(r.fileData, r.Data)
		r.counter(offKernelMap).Store(0)
		r.Data, r.fileData = r.fileData, nil
	}
	if r.kernel != nil {
		unmapMem(r.kernel)
		r.kernel = nil
	}
	err := unmapMem(r.mem)
	r.mem, r.Data = nil, nil
	return err
}

// Size is the mapped size in bytes.
func (r *Region) Size() int { return len(r.mem) }

// Word access. Slots are 8-byte aligned (the header is 4 KiB and every stride a multiple of
// 8), so that an 8-byte slot is written by one store and can never be seen half-written.

func (r *Region) u64(off uint64) *uint64 { return (*uint64)(unsafe.Pointer(&r.Data[off])) }

func (r *Region) load64(off uint64) uint64 { return atomic.LoadUint64(r.u64(off)) }

func (r *Region) atom(off uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.Data[off]))
}

// fillSample is the most slots Fill reads: a large store's fill is estimated from evenly
// spaced slots, so that a stats request (the console polls it) costs a few milliseconds
// whatever the store's size.
const fillSample = 1 << 18

// Fill is the fraction of the region's slots (Postcarding: chunks) that hold anything, a
// nonzero word, read from at most fillSample evenly spaced ones; ok is false for Append
// regions (their fill is the lists' heads) and strides that are not whole words. Writers
// never clear a slot, so this is the share of the store ever written: how loaded it is in
// the sense of DART's analysis (§3), which sets the chance of a query's success.
func (r *Region) Fill() (fill float64, ok bool) {
	h := &r.Hdr
	if h.Primitive == PrimAppend || h.SlotBytes == 0 || h.SlotBytes%8 != 0 || h.Slots == 0 {
		return 0, false
	}
	step := max(h.Slots/fillSample, 1)
	var seen, used uint64
	for s := uint64(0); s < h.Slots; s += step {
		seen++
		off := s * uint64(h.SlotBytes)
		if off+uint64(h.SlotBytes) > uint64(len(r.Data)) {
			break
		}
		for w := uint64(0); w < uint64(h.SlotBytes); w += 8 {
			if r.load64(off+w) != 0 {
				used++
				break
			}
		}
	}
	return float64(used) / float64(seen), true
}
