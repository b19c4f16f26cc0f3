package export

import (
	"log/slog"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/record"
)

// SinkDeps are what a sink takes besides its configuration.
type SinkDeps struct {
	// Metrics gets the sink's counters (nil: none).
	Metrics *metrics.Registry
	// Logger is where the sink logs its errors, at most a line every 10 s (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// The inputs a sink may take. A sink implements the ones it takes; the composition root
// (package collector) sorts its sinks by type assertion, the way ingest sorts its
// processors, and hands each input's values to the sinks that take it:
//
//   - events and periodic values from the Pipeline (EventSink);
//   - the flow cache's evicted records (RecordSink), its updated flows once per period
//     (LatestSink) and its histograms once per period (HistogramSink), pushed by the flow
//     cache (flowcache.Deps);
//   - decoded reports, through an ingest.Processor the sink returns (ReportSink).
//
// Every Offer is called from one producer goroutine at a time and must not block: a sink
// queues (bounded, drops counted) and sends from its own goroutines. A sink is a component
// (Name, Start, Stop): it starts before what offers to it and stops after, so that Stop can
// flush what was offered last.
//
// Events reach every sink one way, through the Pipeline's bus consumer; no sink reads the
// event bus itself.

// EventSink takes the pipeline's events and periodic values (event.KindPeriodic). Offer is
// called from the pipeline goroutine only.
type EventSink interface {
	Offer(e *event.Event)
}

// RecordSink takes the flow cache's evicted records, from its drain goroutine.
type RecordSink interface {
	OfferRecord(r *record.Record)
}

// LatestSink takes every flow updated in the last LatestPeriod, once per period (Reason
// none). A period of 0 turns the input off.
type LatestSink interface {
	OfferLatest(r *record.Record)
	LatestPeriod() time.Duration
}

// HistogramSink takes every non-empty histogram of the flow cache once per
// HistogramPeriod. A period of 0 turns the input off.
type HistogramSink interface {
	OfferHistogram(h *record.Histogram)
	HistogramPeriod() time.Duration
}

// ReportSink takes decoded reports through the processor it returns (nil: it takes none),
// which ingest's workers call like every other processor.
type ReportSink interface {
	Reports() ingest.Processor
}
