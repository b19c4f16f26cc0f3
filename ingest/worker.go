package ingest

import (
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
	"github.com/intake-int/intake/xdp"
)

// DropReason says why ingest discarded a datagram (or a captured frame) before or around
// decoding. Decode errors are counted separately, by wire.Reason.
type DropReason uint8

const (
	DropOversize    DropReason = iota // longer than max_datagram: the kernel truncated it (MSG_TRUNC)
	DropRecvError                     // recvmmsg failed with an unexpected error (counted per call)
	DropDecoderLoop                   // a decoder did not reach Done within the bound on reports per datagram
	DropNotUDP                        // capture: a frame that is not one whole UDP datagram
	DropNoListener                    // capture: a UDP datagram to a port no listener has
	DropNotAllowed                    // from a source the listener's allow list does not hold
	numDropReasons
)

var dropNames = [...]string{"oversize", "recv_error", "decoder_loop", "not_udp", "no_listener", "not_allowed"}

func (d DropReason) String() string {
	if int(d) < len(dropNames) {
		return dropNames[d]
	}
	return "unknown"
}

// DropReasons lists the drop reasons, for callers that preallocate.
func DropReasons() []DropReason {
	rs := make([]DropReason, numDropReasons)
	for i := range rs {
		rs[i] = DropReason(i)
	}
	return rs
}

const numFormats = int(telemetry.FormatLabel) + 1

// Counter slots of a worker, one flat array so that publishing is a loop.
const (
	cPackets = iota
	cBytes
	cReports
	cErrors      // decode errors, all reasons
	cKernelDrops // cumulative SO_RXQ_OVFL count of the worker's sockets (this and earlier ones)
	cReads       // recvmmsg calls that returned datagrams
	cGRO         // datagrams that arrived inside GRO super-datagrams
	cFormat0     // reports by telemetry.Format
	cReason0     = cFormat0 + numFormats
	cDrop0       = cReason0 + wire.NumReasons
	cInner0      = cDrop0 + int(numDropReasons) // reports kept whose inner packet did not decode, by wire.Reason
	nCounters    = cInner0 + wire.NumReasons
)

// worker is one receive loop: a socket (or a capture), a wire.Reader and a Report of its own.
// It counts in local, plain fields only it touches, and publishes them to pub once per batch:
// an atomic per packet would cost more than decoding a small report (see package metrics).
type worker struct {
	id  int
	l   *listener
	dec *wire.Decoder
	in  wire.Input
	// kdone: what the XDP program has done with the datagram in hand already
	// (detect.kernel, flowcache.kernel).
	kdone telemetry.KernelDone

	procs    []Processor      // every processor, in call order
	plain    []Processor      // those without a batch path: called as each report is decoded
	batchers []BatchProcessor // those with one: handed the batch's reports at once
	flushers []Flusher

	rd  wire.Reader
	rep telemetry.Report
	// reps holds the reports decoded since the last hand-over when there are batchers
	// (BatchReports of them, allocated once); nrep are in use.
	reps []telemetry.Report
	nrep int

	local     [nCounters]uint64
	published [nCounters]uint64
	_         [64]byte // keep pub off the cache line of the fields above
	pub       [nCounters]atomic.Uint64
	_         [64]byte

	// kdBase is the kernel drop count of sockets this worker read before the current one.
	kdBase uint64

	sock    *socket     // nil when not running
	xsk     *xdp.Socket // the AF_XDP socket instead, for an xdp listener (xdp.go)
	pf      [8]uintptr  // prefetchFrame's scratch: a frame's first lines
	dg      xdp.Datagram
	touched bool       // RunCapture: handed a datagram since the last flush
	drain   bool       // count datagrams only (SetDrainOnly)
	allow   *allowList // the listener's sources; nil: every source

	coalesce time.Duration // wait after a read that nearly drained the socket (listener's coalesce)

	// monoOff is CLOCK_REALTIME less CLOCK_MONOTONIC as read at monotonic time monoAt: an
	// AF_XDP frame's receive time is monotonic (frameTime).
	monoOff, monoAt int64

	wlog workerLog
}

// reportSlack bounds Next calls per datagram beyond its length: every report consumes at
// least one byte (an error at least stops), so more calls than bytes means a decoder does
// not advance.
const reportSlack = 2

// setProcessors sets the processors the worker calls, in order, sorting out which have a
// batch path and which flush.
func (w *worker) setProcessors(procs []Processor) {
	w.procs, w.plain, w.batchers, w.flushers = procs, nil, nil, nil
	for _, p := range procs {
		if bp, ok := p.(BatchProcessor); ok {
			w.batchers = append(w.batchers, bp)
		} else {
			w.plain = append(w.plain, p)
		}
		if f, ok := p.(Flusher); ok {
			w.flushers = append(w.flushers, f)
		}
	}
	w.reps, w.nrep = nil, 0
	if len(w.batchers) > 0 {
		w.reps = make([]telemetry.Report, BatchReports)
	}
}

// datagram decodes one datagram and hands its reports to the processors: to those without a
// batch path at once, to the others when the batch array is full or the batch ends
// (endBatch). It is the hot path: no allocation, no lock, no atomic.
func (w *worker) datagram(b []byte, now int64) {
	w.local[cPackets]++
	w.local[cBytes] += uint64(len(b))
	w.rd.Reset(w.dec, w.in, b)
	r := &w.rep
	for n := len(b) + reportSlack; n > 0; n-- {
		if w.reps != nil {
			r = &w.reps[w.nrep]
		}
		err := w.rd.Next(r)
		if err == nil {
			r.RecvTime = now
			r.Kernel = w.kdone
			w.local[cReports]++
			if ie := w.rd.InnerErr(); ie != nil && int(ie.Reason) < wire.NumReasons {
				w.local[cInner0+int(ie.Reason)]++
			}
			if f := int(r.Format); f < numFormats {
				w.local[cFormat0+f]++
			}
			for _, p := range w.plain {
				p.Process(w.id, r)
			}
			if w.reps != nil {
				if w.nrep++; w.nrep == len(w.reps) {
					w.handOver()
				}
			}
			continue
		}
		if err == wire.Done {
			return
		}
		// A type assertion, not wire.ReasonOf: errors.As takes its target as an interface,
		// which costs an allocation per error.
		reason := wire.BadValue
		if e, ok := err.(*wire.Error); ok && int(e.Reason) < wire.NumReasons {
			reason = e.Reason
			w.wlog.sample = *e
		}
		w.local[cErrors]++
		w.local[cReason0+int(reason)]++
	}
	w.local[cDrop0+int(DropDecoderLoop)]++
}

// one handles one datagram: decoded, or only counted in drain mode.
func (w *worker) one(b []byte, now int64) {
	if w.drain {
		w.local[cPackets]++
		w.local[cBytes] += uint64(len(b))
		return
	}
	w.datagram(b, now)
}

// drop counts a datagram discarded for reason.
func (w *worker) drop(reason DropReason) { w.local[cDrop0+int(reason)]++ }

// handOver gives the reports decoded since the last hand-over to the batch processors.
func (w *worker) handOver() {
	if w.nrep == 0 {
		return
	}
	rs := w.reps[:w.nrep]
	for _, p := range w.batchers {
		p.ProcessBatch(w.id, rs)
	}
	w.nrep = 0
}

// endBatch hands the batch's last reports over, lets batching processors flush and
// publishes the counters.
func (w *worker) endBatch() {
	w.handOver()
	for _, f := range w.flushers {
		f.Flush(w.id)
	}
	w.publish()
}

func (w *worker) publish() {
	for i := range w.local {
		if v := w.local[i]; v != w.published[i] {
			w.pub[i].Store(v)
			w.published[i] = v
		}
	}
	w.checkLog()
}

// count returns a published counter; any goroutine may call it.
func (w *worker) count(i int) uint64 { return w.pub[i].Load() }
