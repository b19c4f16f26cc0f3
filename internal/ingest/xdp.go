package ingest

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/intake-int/intake/internal/prefetch"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// The xdp listener mode (docs/xdp.md): package xdp's program on the listener's interface
// redirects the frames of datagrams to the listener's port into one AF_XDP socket per
// receive queue; each is read by a worker of its own, which takes the UDP payload out of the
// frame and hands it to the same datagram path as a socket worker's. Frames come and go
// through shared rings: no system call per batch while frames keep coming.

// xdpState is an xdp listener's program and what its counters were before the current one
// (a program's counters start at zero; the listener's are cumulative over its life).
type xdpState struct {
	prog *xdp.Program
	base [xdp.NumOutcomes]uint64
	last [xdp.NumOutcomes]uint64
	zc   bool
}

// openXDP attaches the listener's program and binds an AF_XDP socket per worker, worker i
// on receive queue i.
func (rcv *Receiver) openXDP(l *listener) error {
	var opt xdp.Options
	k := &rcv.kernel
	if l.in == wire.InputDTA && k.DTA != nil {
		opt.Stores = k.DTA()
	}
	if l.in == wire.InputReport && k.Detect != nil {
		opt.Detect = k.Detect()
	}
	if l.in == wire.InputReport && k.FlowCache != nil {
		opt.FlowCache = k.FlowCache()
	}
	p, err := xdp.Attach(l.cfg.Interface, uint16(l.cfg.Port), opt)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.x.prog = p
	l.mu.Unlock()
	zc := true
	for i, w := range l.workers {
		s, err := xdp.Open(p.Ifindex(), i, l.cfg.RcvBuf)
		if err != nil {
			return err
		}
		w.xsk = s
		if err := p.Register(i, s); err != nil {
			return err
		}
		zc = zc && s.ZeroCopy()
	}
	l.mu.Lock()
	l.boundAddr = "xdp:" + l.cfg.Interface + ":" + strconv.Itoa(l.cfg.Port)
	l.x.zc = zc
	l.mu.Unlock()
	rcv.log.Info("XDP attached", "listener", l.cfg.Name, "interface", l.cfg.Interface, "attach", p.Mode(),
		"queues", len(l.workers), "zero_copy", zc, "rx_queues", xdp.RxQueues(l.cfg.Interface))
	return nil
}

// closeXDP detaches the listener's program, keeping its counters, and closes its sockets.
func (l *listener) closeXDP() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.x.prog == nil {
		return
	}
	var c [xdp.NumOutcomes]uint64
	if l.x.prog.Counts(&c) == nil {
		l.x.last = c
	}
	for i := range c {
		l.x.base[i] += l.x.last[i]
	}
	l.x.last = [xdp.NumOutcomes]uint64{}
	// Out of the XSKMAP first: the map's reference would keep a socket bound to its queue
	// until the kernel frees the map, later, and a restart's bind would find it busy.
	for i, w := range l.workers {
		if w.xsk != nil {
			l.x.prog.Unregister(i)
			w.xsk.Close()
			w.xsk = nil
		}
	}
	l.x.prog.Close()
	l.x.prog = nil
}

// xdpCounts returns the listener's XDP outcome counts, cumulative; nil when it is not an xdp
// listener.
func (l *listener) xdpCounts() map[string]uint64 {
	if l.cfg.Mode != ModeXDP {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.x.prog != nil {
		var c [xdp.NumOutcomes]uint64
		if l.x.prog.Counts(&c) == nil {
			l.x.last = c
		}
	}
	m := make(map[string]uint64, xdp.NumOutcomes)
	for o := range xdp.NumOutcomes {
		m[o.String()] = l.x.base[o] + l.x.last[o]
	}
	return m
}

// xdpAttach says how the listener's program is attached ("native", "generic"), empty when
// it is not attached.
func (l *listener) xdpAttach() (string, bool) {
	if l.x.prog == nil {
		return "", false
	}
	return l.x.prog.Mode(), l.x.zc
}

// dropsEvery is how many batches an AF_XDP worker reads between two reads of its socket's
// drop counter (a system call).
const dropsEvery = 64

// xdpWaitMs bounds a wait in poll, as readTimeout bounds a socket read: Stop wakes a worker
// at once (eventfd); the timeout is the safety net.
const xdpWaitMs = 250

// xdpDrainBatches bounds the drain at Stop, as maxDrainBatches does a socket worker's.
const xdpDrainBatches = 64

// runXDP is an AF_XDP worker's loop, on its own locked thread: take what the rx ring holds
// (up to the listener's batch), decode it, hand the frames back; wait in poll when the ring
// is empty, until Stop wakes it. It then drains what the ring still holds.
func (w *worker) runXDP(stopping *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, batch := w.xsk, w.l.cfg.Batch
	drained := 0
	for {
		n := s.Peek(batch)
		if n == 0 {
			if stopping.Load() {
				return
			}
			s.Wait(xdpWaitMs)
			continue
		}
		w.xdpBatch(n)
		if stopping.Load() {
			if drained++; drained >= xdpDrainBatches {
				return
			}
			continue
		}
		if n < batch/2 && w.coalesce > 0 {
			sleepThread(w.coalesce)
		}
	}
}

// xdpBatch handles the n frames Peek found.
func (w *worker) xdpBatch(n int) {
	s := w.xsk
	w.local[cReads]++
	var batchTime int64 // the fallback for a frame without the program's time, read once a batch
	max := w.l.cfg.MaxDatagram
	for j := 0; j < min(n, framePrefetch); j++ {
		w.prefetchFrame(j)
	}
	for i := 0; i < n; i++ {
		if i+framePrefetch < n {
			w.prefetchFrame(i + framePrefetch)
		}
		f := s.Frame(i)
		if !xdp.Parse(f, &w.dg) {
			// The program redirects only what Parse reads; counted should that ever differ.
			w.local[cPackets]++
			w.local[cBytes] += uint64(len(f))
			w.drop(DropNotUDP)
			continue
		}
		b := w.dg.Payload
		if w.allow != nil {
			ok := false
			if w.dg.V4 {
				ok = w.allow.allow4(binary.BigEndian.Uint32(w.dg.Src[:4]))
			} else {
				ok = w.allow.allow16(&w.dg.Src)
			}
			if !ok {
				w.local[cPackets]++
				w.local[cBytes] += uint64(len(b))
				w.drop(DropNotAllowed)
				continue
			}
		}
		if len(b) > max {
			w.local[cPackets]++
			w.local[cBytes] += uint64(max)
			w.drop(DropOversize)
			continue
		}
		ft := s.FrameTime(i)
		w.kdone = telemetry.KernelDone(ft >> 62)
		now := w.frameTime(ft &^ xdp.MetaMarks)
		if now == 0 {
			if batchTime == 0 {
				batchTime = time.Now().UnixNano()
			}
			now = batchTime
		}
		w.one(b, now)
	}
	if w.local[cReads]%dropsEvery == 0 {
		w.local[cKernelDrops] = w.kdBase + s.Drops()
	}
	// The reports of the batch may point into the frames: they go back to the kernel only
	// after the processors have had them.
	w.handOver()
	s.Release()
	for _, f := range w.flushers {
		f.Flush(w.id)
	}
	w.publish()
}

// frameTime turns the program's monotonic time of a frame into Unix ns (0: the frame has
// none). The clocks' offset is read again once a second of frame time: it moves only when
// the real-time clock is set or slewed.
func (w *worker) frameTime(mono uint64) int64 {
	if mono == 0 {
		return 0
	}
	if m := int64(mono); w.monoAt == 0 || m-w.monoAt > int64(time.Second) || m < w.monoAt {
		w.monoOff, w.monoAt = xdp.MonoOffset(), m
	}
	return int64(mono) + w.monoOff
}

// framePrefetch is how many frames ahead of the one it decodes a worker prefetches: a frame
// was written by the kernel on the CPU that received it (copy mode), and its first read
// here would wait for the lines to come over; a few frames ahead, the waits overlap.
const framePrefetch = 4

// prefetchFrame prefetches the first lines of rx frame j of the worker's AF_XDP socket
// (headers, report header and INT stack: up to 512 bytes).
func (w *worker) prefetchFrame(j int) {
	f := w.xsk.Frame(j)
	if len(f) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(&f[0]))
	k := 0
	for off := 0; off < len(f) && k < len(w.pf); off += 64 {
		w.pf[k] = base + uintptr(off)
		k++
	}
	prefetch.Addrs(w.pf[:k])
}

// finishXDP records the socket's final drop count once the worker has returned.
func (w *worker) finishXDP() {
	w.local[cKernelDrops] = w.kdBase + w.xsk.Drops()
	w.kdBase = w.local[cKernelDrops]
	w.publish()
}

// xdpError names the listener in an attach or bind failure.
func xdpError(l *listener, err error) error {
	return fmt.Errorf("mode xdp on interface %s: %w", l.cfg.Interface, err)
}
