// Package redis is the Redis sink (export.redis): the flow cache's events, evicted records,
// latest per-flow aggregates and histograms written to Redis streams and hashes (Sink).
package redis

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/record"
)

// The Redis sink is the SmartNIC sink's host side (§III-D: "the INT notifications ... are
// periodically flushed to the Redis database"): the threshold and change events of the flow
// cache's metrics go to a stream, every evicted flow record to a second stream (both XADD
// with MAXLEN ~), and the latest aggregates of every flow updated in the last hash_period to
// a hash per flow (HSET, then EXPIRE ttl).
//
// The client is go-redis (redis.UniversalClient: one server, a Sentinel-monitored master or
// a cluster, docs/config.md). The offerer only encodes an entry's fields and queues them in a
// bounded queue (full: dropped and counted); one writer goroutine turns up to redis.batch
// commands at a time into one pipeline and counts every reply. Nothing here ever waits on
// ingest's side.
//
// Only what Redis confirmed is counted sent, and only what it cannot have executed is
// counted dropped. A command written to the server may be executed however late its reply
// comes (a stalled server executes what sits in its socket buffer when it resumes, even
// after the client gave up and closed), so a written pipeline has no read or write
// deadline: it waits for its replies as long as the connection stands (redis.timeout bounds
// connecting and the PING). Each command is classified by its own reply: one that got a
// reply before the connection failed is sent (or rejected: an error reply), the commands
// after it are dropped (reason conn: an XADD is not idempotent, so go-redis's retries are
// off and nothing is sent twice) once settled: after a failure the writer PINGs, with
// exponential backoff, until the server answers again, while the queue keeps filling, and
// then settles the commands that got no reply before sending anything else. A server that
// went away may have executed some of them and persisted them without replying (Redis
// stopped with SIGTERM does: it exits with replies unsent), and they were executed in order:
// for each stream, the newest entry is compared with the unreplied XADDs to that stream,
// and those up to the one it equals are counted sent (none equal: none was executed); an
// unreplied HSET and EXPIRE, which are idempotent, are sent again. So what a stream holds is
// exactly what was counted sent. Stop ends a pipeline still waiting when its context ends
// by closing the connection: those commands are counted dropped, reason shutdown (the
// server may still execute them), as are those still unsettled at Stop.

// Kinds of Redis writes, the kind label of the counters.
const (
	redisEvent = iota
	redisFlow
	redisHash
	redisHist
	numRedisKinds
)

var redisKindNames = [numRedisKinds]string{"event", "flow", "hash", "histogram"}

// Drop reasons of the Redis counters.
const (
	redisDropQueue = iota
	redisDropConn
	redisDropRejected
	redisDropShutdown
	numRedisDrops
)

var redisDropNames = [numRedisDrops]string{"queue_full", "conn", "rejected", "shutdown"}

// redisItem is one queued write: a stream entry's fields (event, flow), or a hash's key and
// its field/value pairs (hash, histogram: HSET and EXPIRE).
type redisItem struct {
	kind   uint8
	key    string
	fields []string
}

// cmds is the number of commands the item becomes.
func (it *redisItem) cmds() int {
	if it.kind == redisHash || it.kind == redisHist {
		return 2
	}
	return 1
}

// Sink writes to Redis; see above. NewRedis is inert; Start connects and runs.
type Sink struct {
	cfg  Config
	bmin time.Duration
	bmax time.Duration
	q    chan redisItem

	sent       [numRedisKinds]atomic.Uint64
	dropped    [numRedisKinds][numRedisDrops]atomic.Uint64
	inFlight   atomic.Int64 // items written in the pipeline whose replies are awaited
	reconnects atomic.Uint64
	connected  atomic.Bool
	aborted    atomic.Bool // Stop closed the client under a waiting pipeline
	lastErr    export.LastError

	maxLen string // XADD MAXLEN ~ maxLen
	ttl    string // EXPIRE key ttl, seconds
	args   []any  // the writer's command arguments
	// doubt holds the items of a pipeline whose connection failed before their replies: the
	// server may have executed them. The writer settles them when the server answers again
	// (settle), before anything else is sent.
	doubt []redisItem

	client   goredis.UniversalClient // between Start and Stop
	stop     chan struct{}
	stopCtx  context.Context
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New builds the sink for cfg (validated, a server set), retrying a lost connection with
// the export section's backoff, and registers its counters in deps.Metrics (may be nil).
func New(cfg Config, retry export.Retry, deps export.SinkDeps) *Sink {
	s := &Sink{cfg: cfg, bmin: retry.BackoffMin, bmax: retry.BackoffMax,
		q:      make(chan redisItem, cfg.Queue),
		maxLen: strconv.Itoa(cfg.MaxLen), ttl: strconv.FormatInt(int64(cfg.TTL/time.Second), 10)}
	s.lastErr.Log = deps.Logger
	if reg := deps.Metrics; reg != nil {
		sf := reg.Counter("intake_export_redis_sent_total", "Redis writes acknowledged, by kind (event: XADD to the events stream, flow: XADD of an evicted flow record, hash: HSET and EXPIRE of a flow's latest aggregates, histogram: HSET and EXPIRE of a switch's histogram).", "kind")
		df := reg.Counter("intake_export_redis_dropped_total", "Redis writes dropped, by kind and reason (queue_full, conn: the connection failed before the reply, rejected: an error reply, shutdown).", "kind", "reason")
		for k := range numRedisKinds {
			sf.Func(func() float64 { return float64(s.sent[k].Load()) }, redisKindNames[k])
			for d := range numRedisDrops {
				df.Func(func() float64 { return float64(s.dropped[k][d].Load()) }, redisKindNames[k], redisDropNames[d])
			}
		}
		reg.Counter("intake_export_redis_reconnects_total", "Redis connections made after the first.").
			Func(func() float64 { return float64(s.reconnects.Load()) })
		reg.Gauge("intake_export_redis_connected", "1 while the Redis sink has a connection.").
			Func(func() float64 {
				if s.connected.Load() {
					return 1
				}
				return 0
			})
		reg.Gauge("intake_export_redis_queued", "Redis writes waiting in the queue.").
			Func(func() float64 { return float64(len(s.q)) })
		reg.Gauge("intake_export_redis_in_flight", "Redis writes sent in a pipeline whose replies have not arrived yet.").
			Func(func() float64 { return float64(s.inFlight.Load()) })
	}
	return s
}

// Counts are the sink's counters by kind ("event", "flow", "hash", "histogram"), and
// its last error (a failed connect or write, or an error reply) with its time (RFC 3339).
type Counts struct {
	Sent          map[string]uint64            `json:"sent"`
	Dropped       map[string]map[string]uint64 `json:"dropped"`
	Reconnects    uint64                       `json:"reconnects"`
	Connected     bool                         `json:"connected"`
	Queued        int                          `json:"queued"`
	InFlight      int64                        `json:"in_flight"`
	LastError     string                       `json:"last_error,omitempty"`
	LastErrorTime string                       `json:"last_error_time,omitempty"`
}

// Counts returns the counters.
func (s *Sink) Counts() Counts {
	c := Counts{Sent: map[string]uint64{}, Dropped: map[string]map[string]uint64{},
		Reconnects: s.reconnects.Load(), Connected: s.connected.Load(), Queued: len(s.q), InFlight: s.inFlight.Load()}
	c.LastError, c.LastErrorTime = s.lastErr.Get()
	for k := range numRedisKinds {
		c.Sent[redisKindNames[k]] = s.sent[k].Load()
		m := map[string]uint64{}
		for d := range numRedisDrops {
			m[redisDropNames[d]] = s.dropped[k][d].Load()
		}
		c.Dropped[redisKindNames[k]] = m
	}
	return c
}

// Drops returns the writes dropped by "redis.<kind>.<reason>" (the redis section of GET
// /api/v1/status's drops), zero counts included.
func (s *Sink) Drops() map[string]uint64 {
	d := map[string]uint64{}
	for k := range numRedisKinds {
		for r := range numRedisDrops {
			d["redis."+redisKindNames[k]+"."+redisDropNames[r]] = s.dropped[k][r].Load()
		}
	}
	return d
}

// Name is the sink's component name.
func (s *Sink) Name() string { return "redis" }

// Start starts the writer with a new client. A stopped sink can be started again (a collector restart). It fails only when the
// TLS files cannot be loaded; the server need not be up.
func (s *Sink) Start(context.Context) error {
	if s.stop != nil {
		return nil
	}
	opts, err := s.cfg.universalOptions()
	if err != nil {
		return err
	}
	client := goredis.NewUniversalClient(opts)
	s.client = client
	s.aborted.Store(false)
	s.stop, s.stopOnce, s.stopCtx = make(chan struct{}), sync.Once{}, nil
	s.wg.Add(1)
	go s.write(client)
	return nil
}

// Stop sends what is queued until ctx ends, and drops (counting) the
// rest; a pipeline still waiting for its replies when ctx ends is ended by closing the
// connection.
func (s *Sink) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		s.stopCtx = ctx
		close(s.stop)
	})
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.aborted.Store(true)
		s.client.Close() // the writer's pipeline fails at once; it is the writer's to close too
		<-done
	}
	s.client = nil
	s.stop = nil
	return nil
}

// IsEvent reports whether e goes to the events stream: the threshold (above, below) and
// change events of the flow cache's metrics, per switch and end to end.
func IsEvent(e *event.Event) bool {
	switch e.Kind {
	case event.KindChange, event.KindAbove, event.KindBelow:
	default:
		return false
	}
	switch e.Measurement {
	case event.FlowLatency, event.FlowHopLatency, event.QueueOccupancy, event.TxUtilization:
		return true
	}
	return false
}

func (s *Sink) offer(kind uint8, key string, fields []string) {
	select {
	case s.q <- redisItem{kind: kind, key: key, fields: fields}:
	default:
		s.dropped[kind][redisDropQueue].Add(1)
	}
}

// redisEventFields is the most strings AppendEvent appends (a flow's event at a switch).
const redisEventFields = 28

// Offer queues XADD of e to the events stream when IsEvent(e) (an export.EventSink: the
// pipeline offers every event and periodic value).
func (s *Sink) Offer(e *event.Event) {
	if !IsEvent(e) {
		return
	}
	s.offer(redisEvent, "", AppendEvent(make([]string, 0, redisEventFields), e))
}

// redisRecordFields is the most strings AppendRecord appends for r.
func redisRecordFields(r *record.Record) int {
	return 26 + len(r.Hops)*(2+4*int(record.NumMetrics))
}

// OfferRecord queues XADD of an evicted flow record to the flows stream.
func (s *Sink) OfferRecord(r *record.Record) {
	s.offer(redisFlow, "", AppendRecord(make([]string, 0, redisRecordFields(r)), r, true))
}

// LatestPeriod is how often the flow cache offers its updated flows (redis.hash_period; 0:
// the hashes are off).
func (s *Sink) LatestPeriod() time.Duration { return s.cfg.HashPeriod }

// HistogramPeriod is how often the flow cache offers its histograms (redis.hash_period, as
// the flows' hashes).
func (s *Sink) HistogramPeriod() time.Duration { return s.cfg.HashPeriod }

// OfferLatest queues HSET of a flow's latest aggregates and EXPIRE of its hash.
func (s *Sink) OfferLatest(r *record.Record) {
	s.offer(redisHash, FlowKey(s.cfg.HashPrefix, r), AppendRecord(make([]string, 0, redisRecordFields(r)), r, false))
}

// OfferHistogram queues HSET of one histogram as the hash <histogram_prefix><switch>:<metric>
// (fields scale, bins, total, and one per non-empty bin: its lower bound → its count) and
// EXPIRE of it.
func (s *Sink) OfferHistogram(h *record.Histogram) {
	s.offer(redisHist, s.cfg.HistogramPrefix+h.Switch+":"+h.Metric, appendRedisHist(make([]string, 0, 6+2*len(h.Counts)), h))
}

// appendRedisHist appends a histogram's fields (OfferHistogram).
func appendRedisHist(f []string, h *record.Histogram) []string {
	f = append(f, "scale", h.Scale, "bins", strconv.Itoa(h.Bins), "total", u(h.Total))
	for _, b := range h.Counts {
		f = append(f, u(b.Lo), u(b.Count))
	}
	return f
}

// FlowKey is a flow's hash key: prefix + "src,dst,sport,dport,proto".
func FlowKey(prefix string, r *record.Record) string {
	k := &r.Flow
	return prefix + k.SrcAddr().String() + "," + k.DstAddr().String() + "," + strconv.Itoa(int(k.SrcPort)) + "," +
		strconv.Itoa(int(k.DstPort)) + "," + strconv.Itoa(int(k.Proto))
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// AppendEvent appends an event's stream fields (name, value pairs).
func AppendEvent(f []string, e *event.Event) []string {
	f = append(f, "time", strconv.FormatInt(e.Time, 10), "kind", e.Kind.String(), "scope", e.Scope.String(),
		"measurement", e.Measurement.String())
	k := &e.Key
	if e.Measurement.HasFlow() {
		f = append(f, "src", k.Flow.SrcAddr().String(), "dst", k.Flow.DstAddr().String(),
			"sport", u(uint64(k.Flow.SrcPort)), "dport", u(uint64(k.Flow.DstPort)), "proto", u(uint64(k.Flow.Proto)))
	}
	if e.Measurement.HasSwitch() {
		f = append(f, "switch_id", u(uint64(k.Switch)))
	}
	switch e.Measurement {
	case event.QueueOccupancy:
		f = append(f, "queue_id", u(uint64(k.Queue)))
	case event.TxUtilization:
		f = append(f, "port", u(uint64(k.Port)))
	}
	return append(f, "value", u(e.Value), "prev", u(e.Prev), "threshold", u(e.Threshold))
}

// AppendRecord appends a flow record's fields: the 5-tuple, the reason (evicted records
// only), packets, first_ns, last_ns, latency_latest and latency_mean (when the reports
// carried hop latencies), path (node ids source first, ':'-joined), hops, and per hop n
// (1 = source) hn_node_id and hn_<metric>_latest / hn_<metric>_mean for the metrics carried.
func AppendRecord(f []string, r *record.Record, withReason bool) []string {
	k := &r.Flow
	f = append(f, "src", k.SrcAddr().String(), "dst", k.DstAddr().String(), "sport", u(uint64(k.SrcPort)),
		"dport", u(uint64(k.DstPort)), "proto", u(uint64(k.Proto)))
	if withReason {
		f = append(f, "reason", r.Reason.String())
	}
	f = append(f, "packets", u(r.Packets), "first_ns", strconv.FormatInt(r.First, 10), "last_ns", strconv.FormatInt(r.Last, 10))
	if r.LatCount > 0 {
		f = append(f, "latency_latest", u(r.LatLatest), "latency_mean", strconv.FormatFloat(r.LatMean(), 'f', -1, 64))
	}
	f = append(f, "path", r.PathString(), "hops", strconv.Itoa(len(r.Hops)))
	for i := range r.Hops {
		h := &r.Hops[i]
		p := "h" + strconv.Itoa(i+1) + "_"
		f = append(f, p+"node_id", u(uint64(h.NodeID)))
		for m := range record.NumMetrics {
			if h.Count[m] > 0 {
				f = append(f, p+m.String()+"_latest", u(h.Latest[m]), p+m.String()+"_mean", strconv.FormatFloat(h.Mean(m), 'f', -1, 64))
			}
		}
	}
	return f
}
