package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CheckReceivePath reports whether this system has the UDP receive path: nil on Linux, whose
// recvmmsg, SO_REUSEPORT and SO_RXQ_OVFL the sockets below use. socket_other.go is the
// other systems' version, which refuses.
func CheckReceivePath() error { return nil }

// oobSize is the control buffer per message: room for one SO_RXQ_OVFL message (a uint32).
var oobSize = unix.CmsgSpace(4)

// socket is one SO_REUSEPORT UDP socket and the recvmmsg buffers of the worker reading it,
// allocated once and reused for every batch.
type socket struct {
	conn *net.UDPConn
	rc   syscall.RawConn

	batch int
	size  int // bytes per datagram buffer

	bufs  []byte
	iovs  []unix.Iovec
	oob   []byte
	msgs  []unix.Mmsghdr
	names []unix.RawSockaddrInet6 // the senders' addresses, when the listener checks them

	ino uint64 // the socket's inode, its name in /proc/net/udp

	// Results of the last recvmmsg, set by recv (a method value bound once, so that
	// RawConn.Read does not allocate a closure per call).
	n      int
	errno  syscall.Errno
	recvFn func(fd uintptr) bool

	rcvbufGranted int
}

// openSocket binds one socket of listener l. The first socket of a listener with port 0
// gets a port from the kernel; the caller binds the others to it.
func openSocket(network, address string, rcvbuf, batch, size int, names bool) (*socket, error) {
	s := &socket{batch: batch, size: size}
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
	s.conn = pc.(*net.UDPConn)
	if s.rc, err = s.conn.SyscallConn(); err != nil {
		s.conn.Close()
		return nil, err
	}
	s.rc.Control(func(fd uintptr) {
		s.rcvbufGranted, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) == nil {
			s.ino = st.Ino
		}
	})

	if names {
		s.names = make([]unix.RawSockaddrInet6, batch)
	}
	s.alloc()
	s.recvFn = s.recv
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

// recv is called by RawConn.Read when the socket may be readable. Returning false parks the
// goroutine in the netpoller until it is.
func (s *socket) recv(fd uintptr) bool {
	n, e := s.recvmmsg(fd)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	s.n, s.errno = n, e
	return true
}

func (s *socket) recvmmsg(fd uintptr) (int, syscall.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.msgs[0])),
		uintptr(s.batch), unix.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

// read blocks until a batch arrives; it returns the number of datagrams, or an error once
// the read deadline is set (Stop) or the socket closed.
func (s *socket) read() (int, error) {
	if err := s.rc.Read(s.recvFn); err != nil {
		return 0, err
	}
	if s.errno != 0 {
		return 0, s.errno
	}
	return s.n, nil
}

// readNow reads what is queued without waiting: 0 when nothing is. It is for draining after
// Stop has set the deadline, which makes RawConn.Read return before trying.
func (s *socket) readNow() int {
	var n int
	var e syscall.Errno
	s.rc.Control(func(fd uintptr) { n, e = s.recvmmsg(fd) })
	if e != 0 {
		return 0
	}
	return n
}

// datagram returns datagram i of the last batch, whether the kernel truncated it, and the
// socket's drop counter if the message carried one.
func (s *socket) datagram(i int) (b []byte, trunc bool, drops uint32, hasDrops bool) {
	m := &s.msgs[i]
	b = s.bufs[i*s.size : i*s.size+int(m.Len)]
	trunc = m.Hdr.Flags&unix.MSG_TRUNC != 0
	// The kernel attaches SO_RXQ_OVFL only once the socket has dropped something.
	if cl := int(m.Hdr.Controllen); cl >= unix.CmsgLen(4) {
		oob := s.oob[i*oobSize : i*oobSize+cl]
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && int(h.Len) >= unix.CmsgLen(4) {
			drops, hasDrops = binary.NativeEndian.Uint32(oob[unix.CmsgLen(0):]), true
		}
	}
	m.Hdr.SetControllen(oobSize) // the kernel wrote the length used; restore the capacity
	return
}

// memDrops reads the socket's drop counter with SO_MEMINFO, which unlike SO_RXQ_OVFL does not
// wait for the next datagram: the final count at Stop.
func (s *socket) memDrops() (uint32, bool) {
	var mi [unix.SK_MEMINFO_VARS]uint32
	var ok bool
	s.rc.Control(func(fd uintptr) {
		l := uint32(unsafe.Sizeof(mi))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
		ok = e == 0 && l > unix.SK_MEMINFO_DROPS*4
	})
	return mi[unix.SK_MEMINFO_DROPS], ok
}

func (s *socket) close() error { return s.conn.Close() }

// maxDrainBatches bounds the drain at Stop, so that a sender that never stops cannot hold
// Stop up: 64 batches of 64 is more than a default receive buffer holds of small reports.
const maxDrainBatches = 64

// run is a socket worker's loop: read a batch, decode every datagram, flush, publish; until
// Stop sets the read deadline. It then drains what the socket already holds and returns.
func (w *worker) run(stopping *atomic.Bool) {
	s := w.sock
	for {
		n, err := s.read()
		if err != nil {
			if stopping.Load() || errors.Is(err, net.ErrClosed) {
				for i := 0; i < maxDrainBatches; i++ {
					n := s.readNow()
					if n == 0 {
						break
					}
					w.batch(n)
				}
				return
			}
			// Not expected from a bound UDP socket (ENOMEM under memory pressure); count it
			// and back off rather than spin.
			w.drop(DropRecvError)
			w.publish()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w.batch(n)
		// A read that found the socket nearly drained means datagrams come slower than the
		// worker reads them: waiting a moment lets the next read take many at once, instead
		// of paying a wakeup (expensive, in a VM above all) for every datagram or two.
		if n < s.batch/2 && w.coalesce > 0 && !stopping.Load() {
			time.Sleep(w.coalesce)
		}
	}
}

// batch handles the n datagrams of the last recvmmsg.
func (w *worker) batch(n int) {
	s := w.sock
	w.local[cReads]++
	now := time.Now().UnixNano()
	for i := 0; i < n; i++ {
		b, trunc, drops, has := s.datagram(i)
		if has {
			w.local[cKernelDrops] = w.kdBase + uint64(drops)
		}
		if w.allow != nil && !s.allowed(i, w.allow) {
			w.local[cPackets]++
			w.local[cBytes] += uint64(len(b))
			w.drop(DropNotAllowed)
			continue
		}
		if trunc || w.drain {
			w.local[cPackets]++
			w.local[cBytes] += uint64(len(b))
			if trunc {
				w.drop(DropOversize)
			}
			continue
		}
		w.datagram(b, now)
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
