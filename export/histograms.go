package export

import (
	"context"
	"time"

	"github.com/intake-int/intake/flowcache"
)

// HistogramWriter hands every per-switch and end-to-end histogram of the flow cache to a
// sink once per period (the SmartNIC sink's host reading the distribution arrays, §III-D):
// the Redis sink's histogram hashes.
type HistogramWriter struct {
	period time.Duration
	hist   *flowcache.Histograms
	offer  func(*flowcache.HistJSON)
	cancel context.CancelFunc
	done   chan struct{}
}

// NewHistogramWriter builds the writer; Start runs it.
func NewHistogramWriter(period time.Duration, h *flowcache.Histograms, offer func(*flowcache.HistJSON)) *HistogramWriter {
	return &HistogramWriter{period: period, hist: h, offer: offer}
}

// Name is the writer's component name.
func (w *HistogramWriter) Name() string { return "histogram-writer" }

// Start runs the writer until Stop.
func (w *HistogramWriter) Start(context.Context) error {
	if w.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
	return nil
}

// Stop ends the writer.
func (w *HistogramWriter) Stop(context.Context) error {
	if w.cancel != nil {
		w.cancel()
		<-w.done
		w.cancel = nil
	}
	return nil
}

func (w *HistogramWriter) run(ctx context.Context) {
	defer close(w.done)
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, sw := range w.hist.Switches() {
			for m := range flowcache.NumMetrics {
				if j, ok := w.hist.Histogram(sw, m); ok && j.Total > 0 {
					w.offer(&j)
				}
			}
		}
		if j := w.hist.E2E(); j.Total > 0 {
			w.offer(&j)
		}
	}
}
