package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/smallfile"
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

// RedisSink writes to Redis; see above. NewRedis is inert; Start connects and runs.
type RedisSink struct {
	cfg  Redis
	bmin time.Duration
	bmax time.Duration
	q    chan redisItem

	sent       [numRedisKinds]atomic.Uint64
	dropped    [numRedisKinds][numRedisDrops]atomic.Uint64
	inFlight   atomic.Int64 // items written in the pipeline whose replies are awaited
	reconnects atomic.Uint64
	connected  atomic.Bool
	aborted    atomic.Bool // Stop closed the client under a waiting pipeline
	lastErr    lastError

	maxLen string // XADD MAXLEN ~ maxLen
	ttl    string // EXPIRE key ttl, seconds
	args   []any  // the writer's command arguments
	// doubt holds the items of a pipeline whose connection failed before their replies: the
	// server may have executed them. The writer settles them when the server answers again
	// (settle), before anything else is sent.
	doubt []redisItem

	client   redis.UniversalClient // between Start and Stop
	stop     chan struct{}
	stopCtx  context.Context
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// NewRedis builds the sink for cfg.Redis (validated) and registers its counters in
// deps.Metrics (may be nil).
func NewRedis(cfg Config, deps SinkDeps) *RedisSink {
	s := &RedisSink{cfg: cfg.Redis, bmin: cfg.BackoffMin, bmax: cfg.BackoffMax,
		q:      make(chan redisItem, cfg.Redis.Queue),
		maxLen: strconv.Itoa(cfg.Redis.MaxLen), ttl: strconv.FormatInt(int64(cfg.Redis.TTL/time.Second), 10)}
	s.lastErr.log = deps.Logger
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

// RedisCounts are the sink's counters by kind ("event", "flow", "hash", "histogram"), and
// its last error (a failed connect or write, or an error reply) with its time (RFC 3339).
type RedisCounts struct {
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
func (s *RedisSink) Counts() RedisCounts {
	c := RedisCounts{Sent: map[string]uint64{}, Dropped: map[string]map[string]uint64{},
		Reconnects: s.reconnects.Load(), Connected: s.connected.Load(), Queued: len(s.q), InFlight: s.inFlight.Load()}
	c.LastError, c.LastErrorTime = s.lastErr.get()
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
func (s *RedisSink) Drops() map[string]uint64 {
	d := map[string]uint64{}
	for k := range numRedisKinds {
		for r := range numRedisDrops {
			d["redis."+redisKindNames[k]+"."+redisDropNames[r]] = s.dropped[k][r].Load()
		}
	}
	return d
}

// Name is the sink's component name.
func (s *RedisSink) Name() string { return "redis" }

// Start starts the writer with a new client. A stopped sink can be started again (a collector restart). It fails only when the
// TLS files cannot be loaded; the server need not be up.
func (s *RedisSink) Start(context.Context) error {
	if s.stop != nil {
		return nil
	}
	opts, err := s.cfg.universalOptions()
	if err != nil {
		return err
	}
	client := redis.NewUniversalClient(opts)
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
func (s *RedisSink) Stop(ctx context.Context) error {
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

// RedisEvent reports whether e goes to the events stream: the threshold (above, below) and
// change events of the flow cache's metrics, per switch and end to end.
func RedisEvent(e *event.Event) bool {
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

func (s *RedisSink) offer(kind uint8, key string, fields []string) {
	select {
	case s.q <- redisItem{kind: kind, key: key, fields: fields}:
	default:
		s.dropped[kind][redisDropQueue].Add(1)
	}
}

// redisEventFields is the most strings AppendRedisEvent appends (a flow's event at a switch).
const redisEventFields = 28

// Offer queues XADD of e to the events stream when RedisEvent(e) (an export.EventSink: the
// pipeline offers every event and periodic value).
func (s *RedisSink) Offer(e *event.Event) {
	if !RedisEvent(e) {
		return
	}
	s.offer(redisEvent, "", AppendRedisEvent(make([]string, 0, redisEventFields), e))
}

// redisRecordFields is the most strings AppendRedisRecord appends for r.
func redisRecordFields(r *record.Record) int {
	return 26 + len(r.Hops)*(2+4*int(record.NumMetrics))
}

// OfferRecord queues XADD of an evicted flow record to the flows stream.
func (s *RedisSink) OfferRecord(r *record.Record) {
	s.offer(redisFlow, "", AppendRedisRecord(make([]string, 0, redisRecordFields(r)), r, true))
}

// LatestPeriod is how often the flow cache offers its updated flows (redis.hash_period; 0:
// the hashes are off).
func (s *RedisSink) LatestPeriod() time.Duration { return s.cfg.HashPeriod }

// HistogramPeriod is how often the flow cache offers its histograms (redis.hash_period, as
// the flows' hashes).
func (s *RedisSink) HistogramPeriod() time.Duration { return s.cfg.HashPeriod }

// OfferLatest queues HSET of a flow's latest aggregates and EXPIRE of its hash.
func (s *RedisSink) OfferLatest(r *record.Record) {
	s.offer(redisHash, RedisFlowKey(s.cfg.HashPrefix, r), AppendRedisRecord(make([]string, 0, redisRecordFields(r)), r, false))
}

// OfferHistogram queues HSET of one histogram as the hash <histogram_prefix><switch>:<metric>
// (fields scale, bins, total, and one per non-empty bin: its lower bound → its count) and
// EXPIRE of it.
func (s *RedisSink) OfferHistogram(h *record.Histogram) {
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

// RedisFlowKey is a flow's hash key: prefix + "src,dst,sport,dport,proto".
func RedisFlowKey(prefix string, r *record.Record) string {
	k := &r.Flow
	return prefix + k.SrcAddr().String() + "," + k.DstAddr().String() + "," + strconv.Itoa(int(k.SrcPort)) + "," +
		strconv.Itoa(int(k.DstPort)) + "," + strconv.Itoa(int(k.Proto))
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// AppendRedisEvent appends an event's stream fields (name, value pairs).
func AppendRedisEvent(f []string, e *event.Event) []string {
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

// AppendRedisRecord appends a flow record's fields: the 5-tuple, the reason (evicted records
// only), packets, first_ns, last_ns, latency_latest and latency_mean (when the reports
// carried hop latencies), path (node ids source first, ':'-joined), hops, and per hop n
// (1 = source) hn_node_id and hn_<metric>_latest / hn_<metric>_mean for the metrics carried.
func AppendRedisRecord(f []string, r *record.Record, withReason bool) []string {
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

func (s *RedisSink) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// write is the writer goroutine: make sure the server answers, gather a batch, pipeline it,
// count the replies.
func (s *RedisSink) write(client redis.UniversalClient) {
	defer s.wg.Done()
	defer func() {
		client.Close()
		s.connected.Store(false)
		for _, it := range s.doubt {
			s.dropped[it.kind][redisDropConn].Add(1)
		}
		s.doubt = s.doubt[:0]
		s.dropQueued()
	}()
	pipe := client.Pipeline()
	backoff := s.bmin
	dials := 0
	up := false
	batch := make([]redisItem, 0, 64)
	for {
		if !up {
			if s.stopping() && (len(s.q) == 0 || s.stopCtx.Err() != nil) {
				return
			}
			if err := s.ping(client); err != nil {
				s.lastErr.set("redis", err)
				if s.stopping() {
					return // nowhere to flush to
				}
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.stop:
					t.Stop()
				}
				backoff = min(backoff*2, s.bmax)
				continue
			}
			if dials > 0 {
				s.reconnects.Add(1)
			}
			dials++
			backoff = s.bmin
			up = true
			s.connected.Store(true)
			if err := s.settle(client, pipe); err != nil {
				s.lastErr.set("redis", err)
				up = false
				s.connected.Store(false)
				continue
			}
		}
		batch = batch[:0]
		select {
		case it := <-s.q:
			batch = append(batch, it)
		case <-s.stop:
			if len(s.q) == 0 || s.stopCtx.Err() != nil {
				return
			}
			continue
		}
		cmds := batch[0].cmds()
	gather:
		for cmds < s.cfg.Batch {
			select {
			case it := <-s.q:
				batch = append(batch, it)
				cmds += it.cmds()
			default:
				break gather
			}
		}
		if err := s.send(pipe, batch); err != nil {
			s.lastErr.set("redis", err)
			up = false
			s.connected.Store(false)
		}
	}
}

// settle counts the items of a failed pipeline (s.doubt) now that the server answers again:
// an unreplied XADD is sent if the stream's newest entry shows that it, or a later XADD of
// the pipeline to the same stream, was executed, else dropped (reason conn); an unreplied
// HSET with its EXPIRE is sent again. An error (the server gone again) leaves the rest
// unsettled for the next time.
func (s *RedisSink) settle(client redis.UniversalClient, pipe redis.Pipeliner) error {
	if len(s.doubt) == 0 {
		return nil
	}
	var again []redisItem
	for _, kind := range []uint8{redisEvent, redisFlow} {
		stream := s.cfg.EventsStream
		if kind == redisFlow {
			stream = s.cfg.FlowsStream
		}
		var items []redisItem
		for _, it := range s.doubt {
			if it.kind == kind {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.Timeout)
		last, err := client.XRevRangeN(ctx, stream, "+", "-", 1).Result()
		cancel()
		if err != nil {
			return err
		}
		executed := 0
		if len(last) == 1 {
			for j := len(items) - 1; j >= 0; j-- {
				if sameFields(last[0].Values, items[j].fields) {
					executed = j + 1
					break
				}
			}
		}
		s.sent[kind].Add(uint64(executed))
		s.dropped[kind][redisDropConn].Add(uint64(len(items) - executed))
	}
	for _, it := range s.doubt {
		if it.kind == redisHash || it.kind == redisHist {
			again = append(again, it)
		}
	}
	s.doubt = s.doubt[:0]
	if len(again) == 0 {
		return nil
	}
	return s.send(pipe, again)
}

// sameFields reports whether a stream entry's values are the field list fields (name,
// value, name, value, ...).
func sameFields(values map[string]any, fields []string) bool {
	if len(values)*2 != len(fields) {
		return false
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if v, ok := values[fields[i]].(string); !ok || v != fields[i+1] {
			return false
		}
	}
	return true
}

// ping checks that the server (the master, every cluster node asked) answers: it connects
// when there is no connection, authenticating and selecting the database.
func (s *RedisSink) ping(client redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.Timeout)
	defer cancel()
	return client.Ping(ctx).Err()
}

// send pipelines one batch and counts every item as sent, rejected (an error reply) or
// dropped (reason conn: the connection failed before all its replies arrived). It returns
// the connection's error, if any.
func (s *RedisSink) send(pipe redis.Pipeliner, batch []redisItem) error {
	// The commands' arguments are slices of one reused array; a field is passed as a
	// *string into its item (go-redis writes *string as the string), so that the fields are
	// neither copied nor boxed one by one.
	n := 0
	for i := range batch {
		n += len(batch[i].fields) + 9
	}
	if cap(s.args) < n {
		s.args = make([]any, 0, n)
	}
	a := s.args[:0]
	ctx := context.Background()
	cmd := func(start int) {
		pipe.Do(ctx, a[start:len(a):len(a)]...).SetFirstKeyPos(1)
	}
	for i := range batch {
		it := &batch[i]
		start := len(a)
		switch it.kind {
		case redisEvent, redisFlow:
			stream := &s.cfg.EventsStream
			if it.kind == redisFlow {
				stream = &s.cfg.FlowsStream
			}
			a = append(a, "xadd", stream, "maxlen", "~", &s.maxLen, "*")
			a = appendPtrs(a, it.fields)
			cmd(start)
		default:
			a = append(a, "hset", &it.key)
			a = appendPtrs(a, it.fields)
			cmd(start)
			start = len(a)
			a = append(a, "expire", &it.key, &s.ttl)
			cmd(start)
		}
	}
	s.inFlight.Store(int64(len(batch)))
	cmds, _ := pipe.Exec(ctx)
	s.inFlight.Store(0)
	clear(a) // let the items go
	s.args = a[:0]
	lost := redisDropConn
	if s.aborted.Load() {
		lost = redisDropShutdown
	}
	var connErr, rejected error
	for i := range batch {
		it := &batch[i]
		n := it.cmds()
		conn, rej := redisOutcome(cmds[:min(n, len(cmds))])
		if len(cmds) < n && conn == nil {
			conn = errors.New("redis: reply missing") // never: Exec returns every command queued
		}
		cmds = cmds[min(n, len(cmds)):]
		switch {
		case conn != nil && lost == redisDropConn:
			s.doubt = append(s.doubt, *it)
			connErr = conn
		case conn != nil:
			s.dropped[it.kind][lost].Add(1)
			connErr = conn
		case rej != nil:
			s.dropped[it.kind][redisDropRejected].Add(1)
			if rejected == nil {
				rejected = rej
			}
		default:
			s.sent[it.kind].Add(1)
		}
	}
	if rejected != nil && connErr == nil {
		s.lastErr.set("redis", rejected)
	}
	return connErr
}

// redisOutcome classifies one item's commands by their own replies: conn is the error of a
// command that got no reply (the connection failed first), rej an error reply. A command
// that got a reply is confirmed even when go-redis, after a failure later in the pipeline,
// sets the failure as every command's error: its reply is its value.
func redisOutcome(cmds []redis.Cmder) (conn, rej error) {
	for _, c := range cmds {
		err := c.Err()
		if err == nil {
			continue
		}
		if rc, ok := c.(*redis.Cmd); ok && rc.Val() != nil {
			continue // replied: the failure came after this command
		}
		if isReplyError(err) {
			rej = err
		} else {
			conn = err
		}
	}
	return conn, rej
}

func appendPtrs(a []any, fields []string) []any {
	for j := range fields {
		a = append(a, &fields[j])
	}
	return a
}

// isReplyError reports whether err is the server's error reply to a command (the command
// was refused; the connection is fine).
func isReplyError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func (s *RedisSink) dropQueued() {
	for {
		select {
		case it := <-s.q:
			s.dropped[it.kind][redisDropShutdown].Add(1)
		default:
			return
		}
	}
}

// universalOptions are go-redis's options for the configured server: one address or URL, a
// Sentinel-monitored master, or a cluster.
func (r *Redis) universalOptions() (*redis.UniversalOptions, error) {
	o := &redis.UniversalOptions{
		ClientName: "intake",
		Username:   r.Username,
		Password:   r.Password,
		DB:         r.DB,
		// One writer: one connection (per node), the pipelines on it, not on a pool of their
		// own.
		PoolSize:         1,
		PipelinePoolSize: -1,
		// An XADD is not idempotent: a batch whose connection failed is dropped and counted,
		// never sent again.
		MaxRetries: -1,
		// The sink's own backoff paces the reconnects.
		DialerRetries: 1,
		DialTimeout:   r.Timeout,
		// A written command waits for its reply as long as the connection stands: the
		// server may execute it however late (see above). Operations are bounded by their
		// context instead: the PING's is redis.timeout, a pipeline's has no deadline.
		ReadTimeout:           -1,
		WriteTimeout:          -1,
		ContextTimeoutEnabled: true,
	}
	tlsOn := r.TLS
	var base *tls.Config
	switch {
	case r.URL != "":
		u, err := redis.ParseURL(r.URL)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %w", err)
		}
		o.Addrs = []string{u.Addr}
		if o.Username == "" {
			o.Username = u.Username
		}
		if o.Password == "" {
			o.Password = u.Password
		}
		if o.DB == 0 {
			o.DB = u.DB
		}
		if u.ClientName != "" {
			o.ClientName = u.ClientName
		}
		o.Protocol = u.Protocol
		if u.TLSConfig != nil {
			tlsOn, base = true, u.TLSConfig
		}
	case r.Sentinel.Master != "":
		o.MasterName = r.Sentinel.Master
		o.Addrs = append([]string(nil), r.Sentinel.Addresses...)
		o.SentinelUsername, o.SentinelPassword = r.Sentinel.Username, r.Sentinel.Password
	case len(r.Cluster.Addresses) > 0:
		o.Addrs = append([]string(nil), r.Cluster.Addresses...)
		o.IsClusterMode = true
	default:
		o.Addrs = []string{r.Address}
	}
	tc, err := r.tlsConfig(tlsOn, base)
	if err != nil {
		return nil, err
	}
	o.TLSConfig = tc
	return o, nil
}

// tlsConfig is the client's TLS configuration (nil when on is false), from base (a rediss://
// URL's) or a new one, with the configured CA, client certificate, server name and
// verification.
func (r *Redis) tlsConfig(on bool, base *tls.Config) (*tls.Config, error) {
	if !on {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		tc = base.Clone()
	}
	if r.TLSCA != "" {
		pem, err := smallfile.Read(r.TLSCA, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("redis.tls_ca: %q: must be a readable PEM file of CA certificates: %v", r.TLSCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls_ca: %q: must be a PEM file of CA certificates: none found", r.TLSCA)
		}
		tc.RootCAs = pool
	}
	if r.TLSCert != "" || r.TLSKey != "" {
		cert, err := smallfile.KeyPair(r.TLSCert, r.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("redis.tls_cert: %q: must be a PEM certificate with its key in redis.tls_key (%q): %v", r.TLSCert, r.TLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if r.TLSServerName != "" {
		tc.ServerName = r.TLSServerName
	}
	if r.TLSInsecureSkipVerify {
		tc.InsecureSkipVerify = true
	}
	return tc, nil
}

// RedisConn is a plain client connection for tests and tools that read the sink's streams
// and hashes back (go-redis speaking RESP2, so that replies keep their RESP2 shapes).
type RedisConn struct {
	c *redis.Client
}

// DialRedis connects to addr, sending AUTH password and SELECT db when set, and checks that
// the server answers PING.
func DialRedis(addr, password string, db int, timeout time.Duration) (*RedisConn, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, DB: db, Protocol: 2,
		PoolSize: 1, PipelinePoolSize: -1, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	return &RedisConn{c: c}, nil
}

// Close closes the connection.
func (c *RedisConn) Close() error { return c.c.Close() }

// Do sends one command and returns its reply: string (simple or bulk), int64, nil, or
// []any for arrays; an error reply is a redis.Error.
func (c *RedisConn) Do(timeout time.Duration, args ...string) (any, error) {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	v, err := c.c.Do(ctx, a...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}
