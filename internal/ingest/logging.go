package ingest

import (
	"log/slog"
	"time"
)

// logEvery is the least time between two warnings of one worker. Decode errors and drops
// are counted per packet, but logged only when a batch is published: the first at once, the
// next after logEvery, each with the counts since the one before and the last error's
// text, so that a flood of bad datagrams costs a line per 10 s, not one per datagram.
const logEvery = 10 * time.Second

// workerLog is a worker's rate-limited warning state.
type workerLog struct {
	log    *slog.Logger // nil: no warnings (workers built by tests)
	errs   uint64       // counts as of the last warning
	drops  uint64
	kernel uint64
	last   time.Time
}

// checkLog warns about decode errors and drops since the last warning, if any happened and
// logEvery has passed. publish calls it once per batch.
func (w *worker) checkLog() {
	lg := &w.wlog
	if lg.log == nil {
		return
	}
	var drops uint64
	for i := cDrop0; i < cDrop0+int(numDropReasons); i++ {
		drops += w.local[i]
	}
	errs, kernel := w.local[cErrors], w.local[cKernelDrops]
	if errs == lg.errs && drops == lg.drops && kernel == lg.kernel {
		return
	}
	now := time.Now()
	if now.Sub(lg.last) < logEvery {
		return
	}
	attrs := []any{"listener", w.l.cfg.Name, "worker", w.id}
	if !lg.last.IsZero() {
		attrs = append(attrs, "since", now.Sub(lg.last).Round(time.Second))
	}
	if errs != lg.errs {
		lg.log.Warn("decode errors", append(attrs, "count", errs-lg.errs, "last", w.lastErr.Error())...)
	}
	if drops != lg.drops || kernel != lg.kernel {
		lg.log.Warn("datagrams dropped", append(attrs, "ingest", drops-lg.drops, "kernel", kernel-lg.kernel)...)
	}
	lg.errs, lg.drops, lg.kernel, lg.last = errs, drops, kernel, now
}
