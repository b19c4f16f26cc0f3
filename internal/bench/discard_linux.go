package bench

import (
	"cmp"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// discard is bench sink's receiving application: a UDP socket on the receiving host whose
// thread reads each datagram and throws it away, and measures its own CPU time, so that a
// phase's process CPU less the discard's is the collector's. Every phase runs one, so the
// host's stack delivers the same datagrams in each.
type discard struct {
	fd   int
	addr string
	n    atomic.Uint64
	stop atomic.Bool
	done chan time.Duration // the reading thread's CPU time, at its end
}

// newDiscard opens the socket on host (a free port) with an 8 MiB receive buffer, so that a
// burst is read rather than dropped, and starts its reader.
func newDiscard(host string) (*discard, error) {
	ip := net.ParseIP(cmp.Or(host, "127.0.0.1")).To4()
	if ip == nil {
		return nil, &net.AddrError{Err: "not an IPv4 address", Addr: host}
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], ip)
	// SO_RCVBUFFORCE (root) goes past rmem_max; where it is refused SO_RCVBUF gets what it can.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	}
	// The reader wakes every 20 ms to see whether to stop.
	tv := unix.NsecToTimeval((20 * time.Millisecond).Nanoseconds())
	err = cmp.Or(unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv), unix.Bind(fd, sa))
	var got unix.Sockaddr
	if err == nil {
		got, err = unix.Getsockname(fd)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	d := &discard{fd: fd, addr: net.JoinHostPort(ip.String(), strconv.Itoa(got.(*unix.SockaddrInet4).Port)), done: make(chan time.Duration, 1)}
	go d.read()
	return d, nil
}

// read reads until Close, on a thread of its own, and reports that thread's CPU time.
func (d *discard) read() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	buf := make([]byte, 2048)
	for !d.stop.Load() {
		if _, _, err := unix.Recvfrom(d.fd, buf, 0); err == nil {
			d.n.Add(1)
		}
	}
	d.done <- threadCPU() - cpu0
}

// threadCPU is the calling thread's user plus system CPU time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Addr is the socket's address, host:port.
func (d *discard) Addr() string { return d.addr }

// Count is the datagrams read.
func (d *discard) Count() uint64 { return d.n.Load() }

// Close stops the reader and closes the socket; it returns the reader's CPU time.
func (d *discard) Close() time.Duration {
	d.stop.Store(true)
	cpu := <-d.done
	unix.Close(d.fd)
	return cpu
}
