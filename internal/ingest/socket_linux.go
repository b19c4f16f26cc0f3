package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/intake-int/intake/internal/cbpf"
)

// CheckReceivePath reports whether this system has the UDP receive path: nil on Linux, whose
// recvmmsg, SO_REUSEPORT and SO_RXQ_OVFL the sockets below use. socket_other.go is the
// other systems' version, which refuses.
func CheckReceivePath() error { return nil }

// oobSize is the control buffer per message: room for an SO_RXQ_OVFL message (a uint32), a
// UDP_GRO message (an int, the segment size) and the receive timestamp (a 16-byte
// timespec).
var oobSize = 2*unix.CmsgSpace(4) + unix.CmsgSpace(16)

// readTimeout bounds a blocking read (SO_RCVTIMEO). Stop wakes a worker at once (shutdown);
// the timeout is the safety net should that ever not reach it.
const readTimeout = 250 * time.Millisecond

// socket is one SO_REUSEPORT UDP socket and the recvmmsg buffers of the worker reading it,
// allocated once and reused for every batch. Its file descriptor is blocking: the worker
// sleeps in recvmmsg on its own locked thread instead of cycling through the netpoller
// (and a goroutine switch) per batch.
type socket struct {
	fd    uintptr
	local *net.UDPAddr // the bound address

	batch int
	size  int  // bytes per datagram buffer
	max   int  // the longest datagram taken (max_datagram); longer ones are oversize
	gro   bool // UDP_GRO is on: datagrams may be super-datagrams

	bufs  []byte
	iovs  []unix.Iovec
	oob   []byte
	msgs  []unix.Mmsghdr
	names []unix.RawSockaddrInet6 // the senders' addresses, when the listener checks them
	// name0 receives the source address of the first message of a batch when names does
	// not, only so that the empty read that ends a wait at Stop (no address) tells itself
	// apart from an empty datagram (see run).
	name0 unix.RawSockaddrInet6

	ino uint64 // the socket's inode, its name in /proc/net/udp

	rcvbufGranted int
}

// openSocket binds one socket of listener l. The first socket of a listener with port 0
// gets a port from the kernel; the caller binds the others to it. With gro, UDP_GRO is
// asked for; s.gro says whether the kernel has it. With names, every datagram's source
// address is read (for the listener's allow list).
func openSocket(network, address string, rcvbuf, batch, size int, gro, names bool) (*socket, error) {
	s := &socket{batch: batch, size: size, max: size}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = setupFD(int(fd), rcvbuf)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), network, address)
	if err != nil {
		return nil, err
	}
	// The worker reads a descriptor of its own, out of Go's netpoller: left registered
	// there, every datagram's arrival would wake the poller's thread (an edge-triggered
	// event nobody waits for), which cost a third of the receive CPU. Closing the
	// net.UDPConn takes its descriptor out of epoll; the duplicate keeps the socket.
	conn := pc.(*net.UDPConn)
	s.local = conn.LocalAddr().(*net.UDPAddr)
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	var serr error
	rc.Control(func(fd uintptr) {
		var nfd int
		if nfd, serr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); serr == nil {
			s.fd = uintptr(nfd)
		}
	})
	conn.Close()
	if serr != nil {
		return nil, fmt.Errorf("dup: %w", serr)
	}
	fd := int(s.fd)
	s.rcvbufGranted, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		s.ino = st.Ino
	}
	if gro {
		s.gro = unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	}
	// Every datagram carries the time the kernel received it (SO_TIMESTAMPNS): one time per
	// recvmmsg batch would give every report of a batch the same time, and a time-series
	// store keeps one point per series and time (docs/ingest.md, "Receive time"). The _NEW
	// option has a 64-bit time on every architecture (Linux 5.1); the old one is the
	// fallback. Without either, a datagram takes the time its batch was read (batch).
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, 1) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}
	tv := unix.NsecToTimeval(int64(readTimeout))
	if err := errors.Join(unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.SetNonblock(fd, false)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if s.gro {
		s.size = max(s.size, groBufSize)
	}
	if names {
		s.names = make([]unix.RawSockaddrInet6, batch)
	}
	s.alloc()
	return s, nil
}

// alloc allocates the recvmmsg vectors and buffers, once per socket.
func (s *socket) alloc() {
	s.bufs = make([]byte, s.batch*s.size)
	s.iovs = make([]unix.Iovec, s.batch)
	s.oob = make([]byte, s.batch*oobSize)
	s.msgs = make([]unix.Mmsghdr, s.batch)
	for i := range s.msgs {
		s.iovs[i].Base = &s.bufs[i*s.size]
		s.iovs[i].SetLen(s.size)
		h := &s.msgs[i].Hdr
		h.Iov = &s.iovs[i]
		h.Iovlen = 1
		h.Control = &s.oob[i*oobSize]
		h.SetControllen(oobSize)
		if s.names != nil {
			h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
			h.Namelen = unix.SizeofSockaddrInet6
		}
	}
	if s.names == nil {
		s.msgs[0].Hdr.Name = (*byte)(unsafe.Pointer(&s.name0))
	}
}

// allowed reports whether datagram i of the last batch comes from a source a allows, and
// restores the name buffer's length for the next read (the kernel wrote the length used).
func (s *socket) allowed(i int, a *allowList) bool {
	sa := &s.names[i]
	s.msgs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return a.allow4(binary.BigEndian.Uint32(sa4.Addr[:]))
	case unix.AF_INET6:
		return a.allow16(&sa.Addr)
	}
	return false
}

// setupFD runs before bind: SO_REUSEPORT so that the listener's sockets share the port (the
// kernel spreads datagrams over them by flow hash), SO_RXQ_OVFL so that every datagram
// carries the socket's drop count, and the receive buffer: SO_RCVBUFFORCE ignores
// net.core.rmem_max but needs CAP_NET_ADMIN; without it SO_RCVBUF is capped at rmem_max.
func setupFD(fd, rcvbuf int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return fmt.Errorf("SO_REUSEPORT: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); err != nil {
		return fmt.Errorf("SO_RXQ_OVFL: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
			return fmt.Errorf("SO_RCVBUF %d: %w", rcvbuf, err)
		}
	}
	return nil
}

// recvmmsg reads up to a batch: with wait it blocks until the first datagram (or the read
// timeout, or shutdown) and then takes what is queued (MSG_WAITFORONE); without, it only
// takes what is queued. A waiting call goes through the runtime's syscall entry, so that a
// long wait hands the worker's P to other goroutines; one that does not wait is a raw
// system call, bounded by a batch's copying, which keeps the P: under load nearly every
// read finds datagrams, and handing the P off and back per batch (another thread woken to
// find nothing, then parked) cost more than the read itself.
func (s *socket) recvmmsg(wait bool) (int, syscall.Errno) {
	s.msgs[0].Hdr.Namelen = unix.SizeofSockaddrInet6
	if !wait {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, s.fd, uintptr(unsafe.Pointer(&s.msgs[0])),
			uintptr(s.batch), unix.MSG_DONTWAIT, 0, 0)
		return int(n), e
	}
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, s.fd, uintptr(unsafe.Pointer(&s.msgs[0])),
		uintptr(s.batch), unix.MSG_WAITFORONE, 0, 0)
	return int(n), e
}

// read returns the next batch's number of datagrams: what is queued if anything is, else
// it blocks until a datagram arrives; 0 after the read timeout, or when Stop has shut the
// socket down and nothing is left.
func (s *socket) read() (int, error) {
	if n, e := s.recvmmsg(false); e == 0 && n > 0 {
		return n, nil
	}
	for {
		n, e := s.recvmmsg(true)
		switch e {
		case 0:
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil
		}
		return 0, e
	}
}

// readNow reads what is queued without waiting: 0 when nothing is.
func (s *socket) readNow() int {
	n, e := s.recvmmsg(false)
	if e != 0 {
		return 0
	}
	return n
}

// wake makes a worker blocked in read return: shutdown(SHUT_RD) sets the socket's
// receive-shutdown flag, which ends a blocking wait even on an unconnected UDP socket (the
// call itself reports ENOTCONN there), while what is queued can still be read.
func (s *socket) wake() { unix.Shutdown(int(s.fd), unix.SHUT_RD) }

// datagram returns datagram i of the last batch, whether the kernel truncated it, the
// socket's drop counter if the message carried one, the GRO segment size if the kernel
// coalesced datagrams into it (0 otherwise) and the time the kernel received it in Unix ns
// (0 when the message carried none).
func (s *socket) datagram(i int) (b []byte, trunc bool, drops uint32, hasDrops bool, seg int, ts int64) {
	m := &s.msgs[i]
	b = s.bufs[i*s.size : i*s.size+int(m.Len)]
	trunc = m.Hdr.Flags&unix.MSG_TRUNC != 0
	// The kernel attaches SO_RXQ_OVFL only once the socket has dropped something, UDP_GRO
	// only to a super-datagram, the timestamp to every datagram.
	oob := s.oob[i*oobSize : i*oobSize+int(m.Hdr.Controllen)]
	for len(oob) >= unix.CmsgLen(4) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		hl := int(h.Len)
		if hl < unix.CmsgLen(4) || hl > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):hl]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL:
			drops, hasDrops = binary.NativeEndian.Uint32(data), true
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO:
			seg = int(binary.NativeEndian.Uint32(data))
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS_NEW && len(data) >= 16:
			// struct __kernel_timespec: two 64-bit fields on every architecture.
			ts = int64(binary.NativeEndian.Uint64(data))*1e9 + int64(binary.NativeEndian.Uint64(data[8:]))
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts = (*unix.Timespec)(unsafe.Pointer(&data[0])).Nano()
		}
		oob = oob[min(unix.CmsgSpace(hl-unix.CmsgLen(0)), len(oob)):]
	}
	m.Hdr.SetControllen(oobSize) // the kernel wrote the length used; restore the capacity
	return
}

// memDrops reads the socket's drop counter with SO_MEMINFO, which unlike SO_RXQ_OVFL does not
// wait for the next datagram: the final count at Stop.
func (s *socket) memDrops() (uint32, bool) {
	var mi [unix.SK_MEMINFO_VARS]uint32
	l := uint32(unsafe.Sizeof(mi))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, s.fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
	return mi[unix.SK_MEMINFO_DROPS], e == 0 && l > unix.SK_MEMINFO_DROPS*4
}

func (s *socket) close() error { return unix.Close(int(s.fd)) }

// attachSpread attaches prog, a classic BPF program that returns a socket's index, to the
// reuseport group of s: from then on the kernel hands each datagram to the group's socket
// the program names, or hashes the source when it names none (spread.go).
func (s *socket) attachSpread(prog []cbpf.Raw) error {
	f := make([]unix.SockFilter, len(prog))
	for i, r := range prog {
		f[i] = unix.SockFilter{Code: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fp := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.SetsockoptSockFprog(int(s.fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &fp); err != nil {
		return fmt.Errorf("SO_ATTACH_REUSEPORT_CBPF: %w", err)
	}
	return nil
}

// maxDrainBatches bounds the drain at Stop, so that a sender that never stops cannot hold
// Stop up: 64 batches of 64 is more than a default receive buffer holds of small reports.
const maxDrainBatches = 64

// run is a socket worker's loop, on its own locked thread: block in recvmmsg for a batch,
// decode every datagram, flush, publish; until Stop wakes it. It then drains what the socket
// already holds and returns.
func (w *worker) run(stopping *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := w.sock
	for {
		n, err := s.read()
		if stopping.Load() {
			// The wait that shutdown ended reads as an empty message without a source
			// address, always the first of its batch (the rest are read without waiting).
			if n > 0 && s.msgs[0].Len == 0 && s.msgs[0].Hdr.Namelen == 0 {
				s.msgs[0].Hdr.SetControllen(oobSize)
				w.batch(1, n)
			} else if n > 0 {
				w.batch(0, n)
			}
			for i := 0; i < maxDrainBatches; i++ {
				n := s.readNow()
				if n == 0 {
					break
				}
				w.batch(0, n)
			}
			return
		}
		if err != nil {
			// Not expected from a bound UDP socket (ENOMEM under memory pressure); count it
			// and back off rather than spin.
			w.drop(DropRecvError)
			w.publish()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if n == 0 {
			continue // the read timeout
		}
		w.batch(0, n)
		// A read that found the socket nearly drained means datagrams come slower than the
		// worker reads them: waiting a moment lets the next read take many at once, instead
		// of paying a wakeup (expensive, in a VM above all) for every datagram or two. The
		// thread sleeps in the kernel with the goroutine on it (no park and wake-up through
		// the scheduler); its P is free for other goroutines meanwhile.
		if n < s.batch/2 && w.coalesce > 0 {
			ts := unix.NsecToTimespec(int64(w.coalesce))
			unix.Nanosleep(&ts, nil)
		}
	}
}

// batch handles datagrams from to n of the last recvmmsg.
func (w *worker) batch(from, n int) {
	s := w.sock
	if from < n {
		w.local[cReads]++
	}
	var batchTime int64 // the fallback for a datagram without a timestamp, read once a batch
	for i := from; i < n; i++ {
		b, trunc, drops, has, seg, now := s.datagram(i)
		if now == 0 {
			if batchTime == 0 {
				batchTime = time.Now().UnixNano()
			}
			now = batchTime
		}
		if has {
			w.local[cKernelDrops] = w.kdBase + uint64(drops)
		}
		if w.allow != nil && !s.allowed(i, w.allow) {
			// A super-datagram is one source's: all its datagrams go together.
			k := uint64(1)
			if seg > 0 && seg < len(b) {
				k = uint64((len(b) + seg - 1) / seg)
			}
			w.local[cPackets] += k
			w.local[cBytes] += uint64(len(b))
			w.local[cDrop0+int(DropNotAllowed)] += k
			continue
		}
		if trunc || (seg <= 0 && len(b) > s.max) {
			// Counted as read, at most max_datagram bytes, as without GRO's larger buffers.
			w.local[cPackets]++
			w.local[cBytes] += uint64(min(len(b), s.max))
			w.drop(DropOversize)
			continue
		}
		if seg <= 0 || seg >= len(b) {
			w.one(b, now)
			continue
		}
		// A GRO super-datagram: the datagrams of one flow, each seg bytes but the last. The
		// kernel keeps one receive time for them all (the first's).
		for len(b) > 0 {
			k := min(seg, len(b))
			w.local[cGRO]++
			if k > s.max {
				w.local[cPackets]++
				w.local[cBytes] += uint64(s.max)
				w.drop(DropOversize)
			} else {
				w.one(b[:k], now)
			}
			b = b[k:]
		}
	}
	w.endBatch()
}

// finish records the socket's final drop count once the worker has returned, and closes it.
func (w *worker) finish() {
	if d, ok := w.sock.memDrops(); ok {
		if v := w.kdBase + uint64(d); v > w.local[cKernelDrops] {
			w.local[cKernelDrops] = v
		}
	}
	w.sock.close()
	w.kdBase = w.local[cKernelDrops]
	w.publish()
	w.sock = nil
}

// sleepThread sleeps in the kernel with the goroutine on its thread (see run's coalesce).
func sleepThread(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}
