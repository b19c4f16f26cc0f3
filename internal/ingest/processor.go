package ingest

import "github.com/intake-int/intake/telemetry"

// Processor consumes decoded reports in the worker that received them: the event detector,
// the flow cache, the DTA translator and the INT-label database each implement it and plug
// in through New without ingest knowing them (goflow2's small interfaces).
//
// Process is called for every report, on the hot path: it must not allocate and must not
// block. The Report is the worker's own and is overwritten by the next one: copy what you
// keep. worker is in [0, Config.Workers()); each worker calls from a single goroutine, so
// state indexed by worker needs no lock, and state shared between workers is sharded by
// flow key (docs/design.md, "Rules for the hot path"). A processor that hands reports to a goroutine of its own does so
// through a bounded queue and counts what does not fit (QueueDropper).
type Processor interface {
	// Name labels the processor's counters and status ("detect", "flowcache", ...).
	Name() string
	Process(worker int, r *telemetry.Report)
}

// BatchProcessor is implemented by processors that do better with many reports at once:
// the worker decodes a receive batch's reports into an array of its own and hands them
// over together (at most BatchReports at a time, in arrival order), instead of calling
// Process per report. A batch lets a processor stage its memory accesses so that their
// cache misses overlap, take each lock once for many reports, and publish counters and
// events once. The reports are the worker's and are overwritten after the call returns:
// copy what you keep. The rules of Process hold (no allocation, no blocking). Process is
// still called by other paths (tests, tools) and must have the same effect, report by report.
type BatchProcessor interface {
	Processor
	ProcessBatch(worker int, rs []telemetry.Report)
}

// BatchReports is the most reports a worker hands to ProcessBatch at once; a receive batch
// that holds more (many reports per datagram) is handed over in parts.
const BatchReports = 64

// Flusher is implemented by processors that batch: Flush is called by each worker after it
// has processed one recvmmsg batch (and at the end of a capture), in the worker's goroutine,
// after the batch's last ProcessBatch.
type Flusher interface {
	Flush(worker int)
}

// QueueDropper is implemented by processors that queue: QueueDrops returns the number of
// reports dropped because a queue was full, since creation. It must be safe to call from any
// goroutine; ingest exports it as intake_processor_queue_drops_total.
type QueueDropper interface {
	QueueDrops() uint64
}

// ProcessorFunc adapts a function to a Processor, for tests and small tools.
type ProcessorFunc struct {
	ProcName string
	F        func(worker int, r *telemetry.Report)
}

func (p ProcessorFunc) Name() string                            { return p.ProcName }
func (p ProcessorFunc) Process(worker int, r *telemetry.Report) { p.F(worker, r) }
