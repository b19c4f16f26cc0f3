package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket geometry: FrameSize bytes per UMEM frame (a frame holds one received Ethernet
// frame: the largest datagram an xdp listener takes is FrameSize less the headroom and the
// headers, MaxDatagram); the UMEM holds as many frames as each ring has entries, a power of
// two from MinFrames to MaxFrames.
const (
	FrameSize   = 4096
	MinFrames   = 64
	MaxFrames   = 1 << 16
	headroom    = 256 // XDP_PACKET_HEADROOM: where the kernel puts the frame inside a UMEM frame
	MaxDatagram = FrameSize - headroom - 14 - 4 - 40 - 8
)

// Frames is the number of UMEM frames (and ring entries) a socket of about umemBytes of
// UMEM gets: the power of two at or below umemBytes/FrameSize, within MinFrames-MaxFrames.
func Frames(umemBytes int) int {
	n := MinFrames
	for n*2 <= umemBytes/FrameSize && n*2 <= MaxFrames {
		n *= 2
	}
	return n
}

// Socket is one AF_XDP socket bound to one receive queue of an interface, with a UMEM of its
// own: Frames frames of FrameSize bytes, all handed to the kernel through the fill ring at
// the start and each handed back as soon as the worker has decoded it. The kernel writes
// the frames the XDP program redirects into them and posts their descriptors on the rx
// ring; Peek and Release read that ring through shared memory, without a system call while
// frames keep coming.
type Socket struct {
	fd     int
	frames uint32
	evfd   int // eventfd that Wake writes, to end a Wait
	queue  int
	zc     bool
	umem   []byte
	rxMem  []byte
	fqMem  []byte
	cqMem  []byte
	rx, fq ring
	pfds   [2]unix.PollFd
	// cons is the rx ring's consumer index as this side has it; peeked frames are
	// [cons, cons+n).
	cons, peeked uint32
}

// ring is one of the shared rings: a producer and a consumer index and the entries.
type ring struct {
	prod, cons *uint32
	entries    unsafe.Pointer
	mask       uint32
}

// Open creates an AF_XDP socket for receive queue queue of interface ifindex, with about
// umemBytes of UMEM (Frames): zero-copy where the driver has it, copy mode otherwise
// (ZeroCopy says which).
func Open(ifindex, queue, umemBytes int) (*Socket, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP socket: %w", err)
	}
	s := &Socket{fd: fd, evfd: -1, queue: queue, frames: uint32(Frames(umemBytes))}
	if err := s.setup(ifindex, queue); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Socket) setup(ifindex, queue int) error {
	var err error
	s.umem, err = unix.Mmap(-1, 0, int(s.frames)*FrameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: FrameSize}
	if err := setsockopt(s.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	// The completion ring is unused on a receive-only socket, but bind requires it.
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, o, int(s.frames)); err != nil {
			return fmt.Errorf("AF_XDP ring size (option %d): %w", o, err)
		}
	}
	var off unix.XDPMmapOffsets
	l := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	if s.rxMem, err = unix.Mmap(s.fd, 0, int(off.Rx.Desc)+int(s.frames)*int(unsafe.Sizeof(unix.XDPDesc{})),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("rx ring: %w", err)
	}
	if s.fqMem, err = unix.Mmap(s.fd, unix.XDP_UMEM_PGOFF_FILL_RING, int(off.Fr.Desc)+int(s.frames)*8,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("fill ring: %w", err)
	}
	if s.cqMem, err = unix.Mmap(s.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, int(off.Cr.Desc)+int(s.frames)*8,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("completion ring: %w", err)
	}
	s.rx = newRing(s.rxMem, off.Rx, s.frames)
	s.fq = newRing(s.fqMem, off.Fr, s.frames)
	// Every frame goes to the kernel at once: a frame comes back on the rx ring only to be
	// returned after it is decoded, so the fill ring never runs dry while the worker keeps up.
	for i := uint32(0); i < s.frames; i++ {
		*(*uint64)(unsafe.Add(s.fq.entries, 8*uintptr(i))) = uint64(i) * FrameSize
	}
	atomic.StoreUint32(s.fq.prod, s.frames)
	// A socket closed just before (a restart) may hold the queue until the kernel has
	// released it: busy is retried for a moment.
	for wait := time.Duration(0); ; wait += 20 * time.Millisecond {
		s.zc = true
		err := unix.Bind(s.fd, &unix.SockaddrXDP{Flags: unix.XDP_ZEROCOPY, Ifindex: uint32(ifindex), QueueID: uint32(queue)})
		if err != nil {
			s.zc = false
			err = unix.Bind(s.fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: uint32(queue)})
		}
		if err == nil {
			break
		}
		if err != unix.EBUSY || wait >= time.Second {
			return fmt.Errorf("binding AF_XDP to queue %d: %w", queue, err)
		}
		time.Sleep(wait)
	}
	s.cons = atomic.LoadUint32(s.rx.cons)
	if s.evfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	s.pfds = [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.evfd), Events: unix.POLLIN}}
	return nil
}

func newRing(mem []byte, o unix.XDPRingOffset, n uint32) ring {
	b := unsafe.Pointer(&mem[0])
	return ring{prod: (*uint32)(unsafe.Add(b, o.Producer)), cons: (*uint32)(unsafe.Add(b, o.Consumer)),
		entries: unsafe.Add(b, o.Desc), mask: n - 1}
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0); e != 0 {
		return e
	}
	return nil
}

// FD is the socket's descriptor, for the XSKMAP.
func (s *Socket) FD() int { return s.fd }

// Queue is the receive queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// ZeroCopy reports whether the socket is bound in zero-copy mode (the driver DMAs frames
// into the UMEM) rather than copy mode (the kernel copies each frame into it).
func (s *Socket) ZeroCopy() bool { return s.zc }

// Peek returns how many frames the rx ring holds, at most max, without a system call; Frame
// reads them and Release hands them back.
func (s *Socket) Peek(max int) int {
	n := atomic.LoadUint32(s.rx.prod) - s.cons
	if n > uint32(max) {
		n = uint32(max)
	}
	s.peeked = n
	return int(n)
}

// Frame returns peeked frame i (0 ≤ i < Peek's result). It is valid until Release.
func (s *Socket) Frame(i int) []byte {
	d := (*unix.XDPDesc)(unsafe.Add(s.rx.entries, 16*uintptr((s.cons+uint32(i))&s.rx.mask)))
	a := d.Addr
	if a+uint64(d.Len) > uint64(len(s.umem)) {
		return nil // not a descriptor the kernel writes; never seen
	}
	return s.umem[a : a+uint64(d.Len)]
}

// FrameTime returns the time the XDP program redirected peeked frame i, in CLOCK_MONOTONIC
// ns (the 8 bytes of XDP metadata the program writes right before the frame), or 0 when
// the frame has none. It clears them: a later frame written into the same UMEM frame
// without metadata then reads 0, not this frame's time.
func (s *Socket) FrameTime(i int) uint64 {
	d := (*unix.XDPDesc)(unsafe.Add(s.rx.entries, 16*uintptr((s.cons+uint32(i))&s.rx.mask)))
	a := d.Addr
	if a&(FrameSize-1) < 8 || a > uint64(len(s.umem)) {
		return 0
	}
	m := s.umem[a-8 : a]
	t := binary.NativeEndian.Uint64(m)
	binary.NativeEndian.PutUint64(m, 0)
	return t
}

// Release hands the peeked frames back to the kernel (fill ring) and consumes them from the
// rx ring.
func (s *Socket) Release() {
	n := s.peeked
	if n == 0 {
		return
	}
	// The fill ring has room: it holds as many entries as there are frames, and every frame not in it is one
	// of these.
	fp := *s.fq.prod
	for i := uint32(0); i < n; i++ {
		d := (*unix.XDPDesc)(unsafe.Add(s.rx.entries, 16*uintptr((s.cons+i)&s.rx.mask)))
		*(*uint64)(unsafe.Add(s.fq.entries, 8*uintptr((fp+i)&s.fq.mask))) = d.Addr &^ (FrameSize - 1)
	}
	atomic.StoreUint32(s.fq.prod, fp+n)
	s.cons += n
	atomic.StoreUint32(s.rx.cons, s.cons)
	s.peeked = 0
}

// Wait blocks until the rx ring holds frames, Wake is called, or timeoutMs passes. It
// reports whether Wake ended it.
func (s *Socket) Wait(timeoutMs int) bool {
	s.pfds[0].Revents, s.pfds[1].Revents = 0, 0
	for {
		_, err := unix.Poll(s.pfds[:], timeoutMs)
		if err == unix.EINTR {
			continue
		}
		break
	}
	return s.pfds[1].Revents&unix.POLLIN != 0
}

// Wake ends a Wait, now or the next one.
func (s *Socket) Wake() {
	b := [8]byte{1}
	unix.Write(s.evfd, b[:])
}

// Drops returns the frames the kernel dropped for this socket (XDP_STATISTICS rx_dropped):
// rx ring full, no frame in the fill ring, a frame too long for a UMEM frame. (rx_ring_full
// counts a subset of the same drops again.)
func (s *Socket) Drops() uint64 {
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0
	}
	return st.Rx_dropped
}

// Close closes the socket and unmaps its memory.
func (s *Socket) Close() error {
	var errs []error
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	if s.evfd >= 0 {
		unix.Close(s.evfd)
		s.evfd = -1
	}
	for _, m := range []*[]byte{&s.rxMem, &s.fqMem, &s.cqMem, &s.umem} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	return errors.Join(errs...)
}
