package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// Deps are what a role works with besides its configuration.
type Deps struct {
	// Brokers are the seed brokers when Config.Brokers is empty; Auth the TLS and SASL
	// options (export.kafka's).
	Brokers []string
	Auth    []kgo.Opt
	// Workers bounds the worker argument of Process (the inlet's receive workers).
	Workers int
	// States are the processor's states keyed by flow, which follow their partitions
	// through snapshots (state.go).
	States  []State
	Metrics *metrics.Registry
	Logger  *slog.Logger
}

func (d *Deps) fill() {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
}

// brokers are the seed brokers the role connects to.
func (c *Config) brokers(d *Deps) []string {
	if len(c.Brokers) > 0 {
		return c.Brokers
	}
	return d.Brokers
}

// Inlet produces every report the receive path decodes to the raw topic: it is the inlet
// role's only processor. Process is on the hot path: it appends the report to its worker's
// frame for the report's partition (frame.go), and a frame goes to the producer, without
// waiting, when it is full or has waited cfg.Linger; records come from a pool, so nothing
// is allocated per report once it is warm. When Buffered reports are unacknowledged, a
// frame is dropped and its reports counted.
type Inlet struct {
	cfg  Config
	deps Deps
	cl   *kgo.Client
	// parts is the raw topic's partition count, read at Start.
	parts int32

	workers []inletWorker
	pool    sync.Pool
	stop    chan struct{}
	done    chan struct{}

	inflight                  atomic.Int64 // reports handed to the producer, not yet acknowledged or failed
	produced, dropped, failed atomic.Uint64
	lastErr                   atomic.Pointer[string]
}

// inletWorker is one receive worker's frames, one per partition. Its lock is the worker's
// but for the linger flush, which takes it every cfg.Linger.
type inletWorker struct {
	mu        sync.Mutex
	frames    []frame
	kb        partition.KeyBuf
	offered   uint64 // the worker's own count
	published atomic.Uint64
	_         [40]byte
}

// frame is a record being filled with one partition's reports.
type frame struct {
	rec   *kgo.Record
	count int
	since time.Time
}

// NewInlet builds the inlet of cfg (validated, role inlet). It connects at Start.
func NewInlet(cfg Config, deps Deps) *Inlet {
	deps.fill()
	in := &Inlet{cfg: cfg, deps: deps, workers: make([]inletWorker, max(deps.Workers, 1))}
	in.pool.New = func() any { return &kgo.Record{Value: make([]byte, 0, frameMaxBytes+8<<10)} } // a frame never grows
	if reg := deps.Metrics; reg != nil {
		c := reg.Counter("intake_group_inlet_reports_total", "Reports the inlet offered to the raw topic, by outcome (produced: acknowledged; dropped: the producer's buffer was full; failed: the brokers did not take it in time).", "outcome")
		c.Func(func() float64 { return float64(in.produced.Load()) }, "produced")
		c.Func(func() float64 { return float64(in.dropped.Load()) }, "dropped")
		c.Func(func() float64 { return float64(in.failed.Load()) }, "failed")
	}
	return in
}

// Name labels the inlet's counters ("group").
func (in *Inlet) Name() string { return "group" }

// Start connects to the brokers and reads the raw topic's partition count; a topic the
// brokers do not have stops the start.
func (in *Inlet) Start(ctx context.Context) error {
	opts := append([]kgo.Opt{kgo.SeedBrokers(in.cfg.brokers(&in.deps)...),
		kgo.ClientID(clientID(in.cfg.Name, "inlet")),
		kgo.ProducerBatchCompression(compression[in.cfg.Compression]),
		kgo.ProducerBatchMaxBytes(int32(in.cfg.BatchBytes)),
		kgo.MaxBufferedRecords(in.cfg.Buffered), // frames: never fewer than reports; Buffered counts reports itself
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}, in.deps.Auth...)
	if in.cfg.Linger > 0 {
		opts = append(opts, kgo.ProducerLinger(in.cfg.Linger))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	n, err := topicPartitions(ctx, cl, in.cfg.Topic)
	if err != nil {
		cl.Close()
		return err
	}
	in.parts, in.cl = n, cl
	for i := range in.workers {
		in.workers[i].frames = make([]frame, n)
	}
	in.stop, in.done = make(chan struct{}), make(chan struct{})
	go in.linger()
	in.deps.Logger.Info("inlet: producing every report to the raw topic", "topic", in.cfg.Topic, "partitions", n,
		"brokers", fmt.Sprint(in.cfg.brokers(&in.deps)))
	return nil
}

// topicPartitions is the number of partitions of topic, or an error naming group.topic.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("group.topic %q: asking the brokers: %w", topic, err)
	}
	t, ok := td[topic]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("group.topic %q: the brokers do not have it: create it (its partitions are the group's unit of work)", topic)
	}
	if t.Err != nil {
		return 0, fmt.Errorf("group.topic %q: %w", topic, t.Err)
	}
	if len(t.Partitions) == 0 {
		return 0, fmt.Errorf("group.topic %q: has no partitions", topic)
	}
	return int32(len(t.Partitions)), nil
}

// Stop sends every frame, waits for what the producer holds (within ctx) and disconnects.
// The receive path has stopped before it.
func (in *Inlet) Stop(ctx context.Context) error {
	if in.cl == nil {
		return nil
	}
	close(in.stop)
	<-in.done
	in.flushOlder(time.Now().Add(time.Hour))
	err := in.cl.Flush(ctx)
	in.cl.Close()
	in.cl = nil
	return err
}

// Process appends r to its worker's frame for the partition of r's owner key.
func (in *Inlet) Process(worker int, r *telemetry.Report) {
	w := &in.workers[worker]
	w.offered++
	key := partition.ReportKey(&w.kb, r) // the worker's own buffer: a local one escapes (crc32)
	part := partition.Hash(key) % uint32(in.parts)
	w.mu.Lock()
	f := &w.frames[part]
	if f.rec == nil {
		f.rec = in.pool.Get().(*kgo.Record)
		f.rec.Value = beginFrame(f.rec.Value)
		f.since = time.Now()
	}
	f.rec.Value = appendEntry(f.rec.Value, key, r)
	if f.count++; f.count == frameMaxReports || len(f.rec.Value) >= frameMaxBytes {
		in.send(int32(part), f)
	}
	w.mu.Unlock()
}

// send hands frame f of partition part to the producer (the frame's worker is locked),
// unless Buffered reports are unacknowledged already: then its reports are dropped.
func (in *Inlet) send(part int32, f *frame) {
	rec, n := f.rec, f.count
	f.rec, f.count = nil, 0
	endFrame(rec.Value, n)
	if in.inflight.Add(int64(n)) > int64(in.cfg.Buffered) {
		in.inflight.Add(-int64(n))
		in.dropped.Add(uint64(n))
		in.pool.Put(rec)
		return
	}
	rec.Topic, rec.Partition = in.cfg.Topic, part
	rec.Key, rec.Headers, rec.Timestamp, rec.Context = nil, nil, time.Time{}, nil
	in.cl.TryProduce(context.Background(), rec, in.promise)
}

// Flush publishes the worker's count (ingest calls it after each receive batch).
func (in *Inlet) Flush(worker int) {
	w := &in.workers[worker]
	w.published.Store(w.offered)
}

// linger sends the frames that have waited cfg.Linger, until Stop.
func (in *Inlet) linger() {
	defer close(in.done)
	every := max(in.cfg.Linger, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-in.stop:
			return
		case now := <-t.C:
			in.flushOlder(now.Add(-in.cfg.Linger))
		}
	}
}

// flushOlder sends every frame begun before cut.
func (in *Inlet) flushOlder(cut time.Time) {
	for i := range in.workers {
		w := &in.workers[i]
		w.mu.Lock()
		for p := range w.frames {
			if f := &w.frames[p]; f.rec != nil && f.since.Before(cut) {
				in.send(int32(p), f)
			}
		}
		w.mu.Unlock()
	}
}

// promise counts a frame's reports by outcome and returns its record to the pool.
func (in *Inlet) promise(rec *kgo.Record, err error) {
	n := frameCount(rec.Value)
	in.inflight.Add(-int64(n))
	switch {
	case err == nil:
		in.produced.Add(uint64(n))
	case errors.Is(err, kgo.ErrMaxBuffered):
		in.dropped.Add(uint64(n))
	default:
		in.failed.Add(uint64(n))
		s := err.Error()
		in.lastErr.Store(&s)
	}
	rec.Value = rec.Value[:0]
	in.pool.Put(rec)
}

// InletStatus is the inlet's part of GET /api/v1/status ("group").
type InletStatus struct {
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
	// Offered reports; Produced, acknowledged by the brokers; Dropped, not taken because the
	// producer held Buffered reports; Failed, not acknowledged in time.
	Offered   uint64 `json:"offered"`
	Produced  uint64 `json:"produced"`
	Dropped   uint64 `json:"dropped"`
	Failed    uint64 `json:"failed"`
	LastError string `json:"last_error,omitempty"`
}

// Status returns the inlet's counts.
func (in *Inlet) Status() InletStatus {
	st := InletStatus{Topic: in.cfg.Topic, Partitions: in.parts, Produced: in.produced.Load(),
		Dropped: in.dropped.Load(), Failed: in.failed.Load()}
	for i := range in.workers {
		st.Offered += in.workers[i].published.Load()
	}
	if p := in.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// Drops are the reports the inlet could not produce, by reason ("group.<reason>").
func (in *Inlet) Drops() map[string]uint64 {
	return map[string]uint64{"group.inlet_buffer_full": in.dropped.Load(), "group.inlet_failed": in.failed.Load()}
}
