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

// Dispatcher decodes datagrams and hands their reports to the processors: the hot path
// every receive loop runs (the socket worker, the AF_XDP worker, RunCapture) and the one
// BenchmarkPipeline measures. Processors with a batch path get a batch's reports at once
// (BatchReports at most), the others each report as it is decoded; every Flusher is flushed
// at EndBatch. It counts in plain fields only its goroutine touches: a Dispatcher belongs to
// one goroutine, and a worker publishes its counts once per batch (an atomic per packet would
// cost more than decoding a small report, see package metrics).
type Dispatcher struct {
	id  int
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

	lastErr wire.Error // the last decode error, copied (no allocation): the worker's warning cites it

	local [nCounters]uint64
}

// NewDispatcher returns a Dispatcher that decodes datagrams of input in with dec and hands
// the reports to procs as worker number worker (the argument of Process, ProcessBatch and
// Flush), sorted by setProcessors as a Receiver's workers are.
func NewDispatcher(worker int, dec *wire.Decoder, in wire.Input, procs []Processor) *Dispatcher {
	d := &Dispatcher{}
	d.init(worker, dec, in, procs)
	return d
}

func (d *Dispatcher) init(worker int, dec *wire.Decoder, in wire.Input, procs []Processor) {
	d.id, d.dec, d.in = worker, dec, in
	d.setProcessors(procs)
}

// DispatchCounts are what a Dispatcher has counted since it was built.
type DispatchCounts struct {
	Packets      uint64 // datagrams handed to Datagram
	Bytes        uint64 // their bytes
	Reports      uint64 // reports decoded and handed to the processors
	DecodeErrors uint64 // decode errors, all reasons
}

// Counters returns the Dispatcher's counts; only its own goroutine may call it.
func (d *Dispatcher) Counters() DispatchCounts {
	return DispatchCounts{Packets: d.local[cPackets], Bytes: d.local[cBytes], Reports: d.local[cReports], DecodeErrors: d.local[cErrors]}
}

// worker is one receive loop: a socket (or a capture) and the Dispatcher it feeds. It
// publishes the Dispatcher's counts to pub once per batch, for any goroutine to read.
type worker struct {
	Dispatcher
	l *listener

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

// setProcessors sets the processors the Dispatcher calls, in order, sorting out which have a
// batch path and which flush.
func (d *Dispatcher) setProcessors(procs []Processor) {
	d.procs, d.plain, d.batchers, d.flushers = procs, nil, nil, nil
	for _, p := range procs {
		if bp, ok := p.(BatchProcessor); ok {
			d.batchers = append(d.batchers, bp)
		} else {
			d.plain = append(d.plain, p)
		}
		if f, ok := p.(Flusher); ok {
			d.flushers = append(d.flushers, f)
		}
	}
	d.reps, d.nrep = nil, 0
	if len(d.batchers) > 0 {
		d.reps = make([]telemetry.Report, BatchReports)
	}
}

// Datagram decodes one datagram and hands its reports, received at now (Unix ns), to the
// processors: to those without a batch path at once, to the others when the batch array is
// full or the batch ends (EndBatch). It is the hot path: no allocation, no lock, no atomic.
func (d *Dispatcher) Datagram(b []byte, now int64) {
	d.local[cPackets]++
	d.local[cBytes] += uint64(len(b))
	d.rd.Reset(d.dec, d.in, b)
	r := &d.rep
	for n := len(b) + reportSlack; n > 0; n-- {
		if d.reps != nil {
			r = &d.reps[d.nrep]
		}
		err := d.rd.Next(r)
		if err == nil {
			r.RecvTime = now
			r.Kernel = d.kdone
			d.local[cReports]++
			if ie := d.rd.InnerErr(); ie != nil && int(ie.Reason) < wire.NumReasons {
				d.local[cInner0+int(ie.Reason)]++
			}
			if f := int(r.Format); f < numFormats {
				d.local[cFormat0+f]++
			}
			for _, p := range d.plain {
				p.Process(d.id, r)
			}
			if d.reps != nil {
				if d.nrep++; d.nrep == len(d.reps) {
					d.handOver()
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
			d.lastErr = *e
		}
		d.local[cErrors]++
		d.local[cReason0+int(reason)]++
	}
	d.local[cDrop0+int(DropDecoderLoop)]++
}

// one handles one datagram: decoded, or only counted in drain mode.
func (w *worker) one(b []byte, now int64) {
	if w.drain {
		w.local[cPackets]++
		w.local[cBytes] += uint64(len(b))
		return
	}
	w.Datagram(b, now)
}

// drop counts a datagram discarded for reason.
func (w *worker) drop(reason DropReason) { w.local[cDrop0+int(reason)]++ }

// handOver gives the reports decoded since the last hand-over to the batch processors.
func (d *Dispatcher) handOver() {
	if d.nrep == 0 {
		return
	}
	rs := d.reps[:d.nrep]
	for _, p := range d.batchers {
		p.ProcessBatch(d.id, rs)
	}
	d.nrep = 0
}

// EndBatch ends a receive batch: it hands the batch's last reports over and lets batching
// processors flush.
func (d *Dispatcher) EndBatch() {
	d.handOver()
	for _, f := range d.flushers {
		f.Flush(d.id)
	}
}

// endBatch ends the worker's batch and publishes its counters.
func (w *worker) endBatch() {
	w.EndBatch()
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
