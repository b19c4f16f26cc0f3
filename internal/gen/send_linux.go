package gen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CheckSend reports whether this system has the Sender: nil on Linux, whose sendmmsg the
// Sender uses. send_other.go is the other systems' version, which refuses.
func CheckSend() error { return nil }

// Sender sends a Generator's stream over UDP with sendmmsg. Successive runs continue the
// stream where the previous one stopped, so sequence numbers keep increasing; runs must
// not overlap.
type Sender struct {
	g       *Generator
	cfg     SendConfig
	workers []*worker
	next    atomic.Uint64 // stream position: datagrams claimed so far
	limit   uint64        // this run's end of stream (0: none)
	stop    atomic.Bool
	start   time.Time

	sent, reports, bytes, errs atomic.Uint64 // this run, for progress and Stats
}

// worker owns one socket and the sendmmsg vectors it fills from the ring, allocated once.
type worker struct {
	s     *Sender
	conn  *net.UDPConn
	rc    syscall.RawConn
	size  int // bytes per datagram buffer
	bufs  []byte
	iovs  []unix.Iovec
	msgs  []unix.Mmsghdr
	nrep  []int // reports in each queued datagram
	share float64

	// With GSO: the vectors sent are groups of datagrams, gmsgs[m] covering datagrams
	// gfirst[m] to gfirst[m]+gcnt[m]-1, with a UDP_SEGMENT control message in gctl.
	gmsgs  []unix.Mmsghdr
	gfirst []int
	gcnt   []int
	gctl   []byte
	vec    []unix.Mmsghdr // what send sends: msgs, or gmsgs

	// sendmmsg's arguments and results, for sendFn (a method value bound once so that
	// RawConn.Write does not allocate a closure per call).
	off, k int
	n      int
	errno  syscall.Errno
	sendFn func(fd uintptr) bool

	claimed uint64 // this run, for pacing
}

// NewSender opens cfg.Sockets sockets connected to cfg.To.
func NewSender(g *Generator, cfg SendConfig) (*Sender, error) {
	if cfg.Sockets == 0 {
		cfg.Sockets = 1
	}
	if cfg.Vector == 0 {
		cfg.Vector = 64
	}
	if cfg.SndBuf == 0 {
		cfg.SndBuf = 4 << 20
	}
	switch {
	case cfg.Sockets < 1 || cfg.Sockets > 256:
		return nil, fmt.Errorf("sockets: %d: allowed is 1 to 256", cfg.Sockets)
	case cfg.Vector < 1 || cfg.Vector > 1024:
		return nil, fmt.Errorf("vector: %d: allowed is 1 to 1024 datagrams per sendmmsg", cfg.Vector)
	case cfg.Rate < 0:
		return nil, fmt.Errorf("rate: %g: must be 0 (as fast as possible) or positive", cfg.Rate)
	case cfg.Duration < 0:
		return nil, fmt.Errorf("duration: %v: must not be negative", cfg.Duration)
	case cfg.GSO < 0 || cfg.GSO > MaxGSO:
		return nil, fmt.Errorf("gso: %d: allowed is 0 (off) to %d datagrams per send", cfg.GSO, MaxGSO)
	}
	raddr, err := net.ResolveUDPAddr("udp", cfg.To)
	if err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	s := &Sender{g: g, cfg: cfg}
	for i := 0; i < cfg.Sockets; i++ {
		w, err := s.newWorker(raddr)
		if err != nil {
			s.Close()
			return nil, err
		}
		w.share = 1 / float64(cfg.Sockets)
		s.workers = append(s.workers, w)
	}
	return s, nil
}

func (s *Sender) newWorker(raddr *net.UDPAddr) (*worker, error) {
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return nil, err
	}
	w := &worker{s: s, conn: conn, size: s.g.MaxLen()}
	if w.rc, err = conn.SyscallConn(); err != nil {
		conn.Close()
		return nil, err
	}
	w.rc.Control(func(fd uintptr) {
		// SO_SNDBUFFORCE passes net.core.wmem_max with CAP_NET_ADMIN; otherwise take what
		// SO_SNDBUF grants.
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, s.cfg.SndBuf) != nil {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, s.cfg.SndBuf)
		}
	})
	v := s.cfg.Vector
	w.bufs = make([]byte, v*w.size)
	w.iovs = make([]unix.Iovec, v)
	w.msgs = make([]unix.Mmsghdr, v)
	w.nrep = make([]int, v)
	for i := range w.msgs {
		w.iovs[i].Base = &w.bufs[i*w.size]
		w.msgs[i].Hdr.Iov = &w.iovs[i]
		w.msgs[i].Hdr.Iovlen = 1
	}
	w.vec = w.msgs
	if s.cfg.GSO > 1 {
		var serr error
		w.rc.Control(func(fd uintptr) {
			// Probe: a kernel without UDP GSO refuses the option.
			serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, 0)
		})
		if serr != nil {
			conn.Close()
			return nil, fmt.Errorf("gso: UDP_SEGMENT: %w", serr)
		}
		cs := unix.CmsgSpace(2)
		w.gmsgs = make([]unix.Mmsghdr, v)
		w.gfirst, w.gcnt = make([]int, v), make([]int, v)
		w.gctl = make([]byte, v*cs)
		for m := range w.gmsgs {
			h := (*unix.Cmsghdr)(unsafe.Pointer(&w.gctl[m*cs]))
			h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
			h.SetLen(unix.CmsgLen(2))
		}
		w.vec = w.gmsgs
	}
	w.sendFn = w.send
	return w, nil
}

// maxGSOBytes bounds a GSO super-datagram's payload (IPv6's 65535-byte payload, less the
// UDP header).
const maxGSOBytes = 65535 - 8

// group packs datagrams 0..k-1 into GSO sends: runs of up to cfg.GSO consecutive
// datagrams of one size (the last of a run may be shorter), and returns the number of sends.
func (w *worker) group(k int) int {
	cs := unix.CmsgSpace(2)
	m := 0
	for j := 0; j < k; m++ {
		start, seg := j, int(w.iovs[j].Len)
		total := seg
		for j++; j < k && j-start < w.s.cfg.GSO; j++ {
			l := int(w.iovs[j].Len)
			if l > seg || total+l > maxGSOBytes {
				break
			}
			total += l
			if l < seg {
				j++
				break
			}
		}
		h := &w.gmsgs[m].Hdr
		h.Iov, h.Iovlen = &w.iovs[start], uint64(j-start)
		w.gfirst[m], w.gcnt[m] = start, j-start
		if j-start > 1 {
			binary.NativeEndian.PutUint16(w.gctl[m*cs+unix.CmsgLen(0):], uint16(seg))
			h.Control = &w.gctl[m*cs]
			h.SetControllen(unix.CmsgLen(2))
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
	}
	return m
}

// LocalAddrs returns the sockets' source addresses.
func (s *Sender) LocalAddrs() []net.Addr {
	var out []net.Addr
	for _, w := range s.workers {
		out = append(out, w.conn.LocalAddr())
	}
	return out
}

// Close closes the sockets.
func (s *Sender) Close() error {
	var errs []error
	for _, w := range s.workers {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}

// Run sends until Count datagrams have been sent, Duration has passed or ctx is done,
// whichever comes first, and returns what it sent. With none of them it runs until ctx
// is done.
func (s *Sender) Run(ctx context.Context) (Stats, error) {
	s.stop.Store(false)
	s.sent.Store(0)
	s.reports.Store(0)
	s.bytes.Store(0)
	s.errs.Store(0)
	first := s.next.Load()
	s.limit = 0
	if s.cfg.Count > 0 {
		s.limit = first + s.cfg.Count
	}
	s.start = time.Now()

	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() { // turns ctx, the deadline and progress into the stop flag and lines
		defer watch.Done()
		var deadline <-chan time.Time
		if s.cfg.Duration > 0 {
			t := time.NewTimer(s.cfg.Duration)
			defer t.Stop()
			deadline = t.C
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				s.stop.Store(true)
				return
			case <-deadline:
				s.stop.Store(true)
				return
			case now := <-tick.C:
				if s.cfg.Progress != nil {
					el := now.Sub(s.start)
					fmt.Fprintf(s.cfg.Progress, "gen: %s: %d datagrams, %d reports sent (%.0f datagrams/s), %d send errors\n",
						el.Round(time.Second), s.sent.Load(), s.reports.Load(), per(s.sent.Load(), el), s.errs.Load())
				}
			}
		}
	}()

	errc := make(chan error, len(s.workers))
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- w.run()
		}()
	}
	wg.Wait()
	close(done)
	watch.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Workers claim past the limit when they race for the last batch; the stream resumes
	// at the limit.
	if s.limit > 0 && s.next.Load() > s.limit {
		s.next.Store(s.limit)
	}
	st := Stats{Datagrams: s.sent.Load(), Reports: s.reports.Load(), Bytes: s.bytes.Load(),
		SendErrors: s.errs.Load(), Claimed: s.next.Load() - first, Elapsed: time.Since(s.start)}
	return st, errors.Join(errs...)
}

func (w *worker) run() error {
	w.claimed = 0
	for !w.s.stop.Load() {
		k := len(w.msgs)
		if w.s.cfg.Rate > 0 {
			if k = w.pace(k); k == 0 {
				continue // slept; look at the stop flag again
			}
		}
		more, err := w.step(k)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// pace returns how many datagrams the token bucket allows now, at most k, sleeping first
// when it allows none. The bucket is this worker's share of the rate, with a burst of a
// millisecond's worth (at least one datagram, at most a vector), and is computed from the
// time since the run began, so that sleep overshoot is caught up rather than accumulated.
func (w *worker) pace(k int) int {
	rate := w.s.cfg.Rate * w.share
	burst := min(float64(k), max(1, rate/1000))
	el := time.Since(w.s.start).Seconds()
	allowed := el*rate + burst - float64(w.claimed)
	if allowed < 1 {
		// Sleep in slices of at most 50 ms, so that a stop is noticed soon at low rates.
		wait := min((float64(w.claimed)+1-burst)/rate-el, 0.05)
		time.Sleep(time.Duration(wait * float64(time.Second)))
		return 0
	}
	return min(k, int(allowed))
}

// step claims up to k datagrams of the stream, copies them into the vectors and sends them.
// It returns false when the run's count is used up.
func (w *worker) step(k int) (bool, error) {
	s := w.s
	g := s.g
	var first uint64
	if g.t.cfg.Fresh {
		// A fresh stream is built in claim order, so claiming and building hold one lock.
		g.mu.Lock()
		first = s.next.Load()
		if s.limit > 0 {
			if first >= s.limit {
				g.mu.Unlock()
				return false, nil
			}
			k = int(min(uint64(k), s.limit-first))
		}
		for j := 0; j < k; j++ {
			b, n, err := g.buildFresh(w.bufs[j*w.size : j*w.size : (j+1)*w.size])
			if err == nil && len(b) > w.size {
				// append moved it out of the vector: the size bound (cutBatch) is wrong
				err = fmt.Errorf("gen: datagram of %d bytes exceeds the %d-byte bound", len(b), w.size)
			}
			if err != nil {
				g.mu.Unlock()
				return false, err
			}
			w.iovs[j].SetLen(len(b))
			w.nrep[j] = n
		}
		s.next.Store(first + uint64(k))
		g.mu.Unlock()
	} else {
		first = s.next.Add(uint64(k)) - uint64(k)
		if s.limit > 0 {
			if first >= s.limit {
				return false, nil
			}
			k = int(min(uint64(k), s.limit-first))
		}
		for j := 0; j < k; j++ {
			n, reps := g.copyOut(w.bufs[j*w.size:(j+1)*w.size], first+uint64(j))
			w.iovs[j].SetLen(n)
			w.nrep[j] = reps
		}
	}
	w.claimed += uint64(k)

	sends := k
	if w.gmsgs != nil {
		sends = w.group(k)
	}
	var sent, reports, bytes, errs uint64
	for off := 0; off < sends; {
		w.off, w.k = off, sends
		if err := w.rc.Write(w.sendFn); err != nil {
			return false, err // the socket was closed
		}
		if w.errno != 0 {
			// The kernel refused the send at off (a pending ICMP error, a full device
			// queue): count its datagrams and go on with the next.
			a, b := w.span(off)
			errs += uint64(b - a)
			off++
			continue
		}
		for m := off; m < off+w.n; m++ {
			a, b := w.span(m)
			for j := a; j < b; j++ {
				sent++
				reports += uint64(w.nrep[j])
				bytes += uint64(w.iovs[j].Len)
			}
		}
		off += w.n
	}
	s.sent.Add(sent)
	s.reports.Add(reports)
	s.bytes.Add(bytes)
	s.errs.Add(errs)
	return true, nil
}

// span returns the datagrams of send m: m itself, or its GSO group.
func (w *worker) span(m int) (int, int) {
	if w.gmsgs == nil {
		return m, m + 1
	}
	return w.gfirst[m], w.gfirst[m] + w.gcnt[m]
}

// send is called by RawConn.Write when the socket may be writable; returning false parks
// the goroutine until it is.
func (w *worker) send(fd uintptr) bool {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.vec[w.off])),
		uintptr(w.k-w.off), unix.MSG_DONTWAIT, 0, 0)
	if e == unix.EAGAIN || e == unix.EINTR {
		return false
	}
	w.n, w.errno = int(n), e
	if e == 0 && n == 0 { // nothing sent and no error: wait rather than spin
		return false
	}
	return true
}
