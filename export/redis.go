package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/metrics"
)

// The Redis sink is the SmartNIC sink's host side (§III-D: "the INT notifications ... are
// periodically flushed to the Redis database"): the threshold and change events of the flow
// cache's metrics go to a stream, every evicted flow record to a second stream (both XADD
// with MAXLEN ~), and the latest aggregates of every flow updated in the last hash_period to
// a hash per flow (HSET, then EXPIRE ttl).
//
// It speaks RESP2 itself over one TCP connection: commands are queued already encoded in a
// bounded queue (full: dropped and counted), written in pipelined batches of up to
// redis.batch commands, and their replies read in order. A failed connection drops the
// commands whose replies did not arrive (counted, reason conn: an XADD is not idempotent, so
// they are not sent twice) and is redialled with exponential backoff while the queue keeps
// filling; nothing here ever waits on ingest's side.

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

type redisItem struct {
	kind uint8
	cmds int
	buf  []byte
}

// RedisSink writes to Redis; see above. NewRedis is inert; Start connects and runs.
type RedisSink struct {
	cfg  Redis
	bmin time.Duration
	bmax time.Duration
	q    chan redisItem

	sent       [numRedisKinds]atomic.Uint64
	dropped    [numRedisKinds][numRedisDrops]atomic.Uint64
	reconnects atomic.Uint64
	connected  atomic.Bool

	bus  *event.Bus
	cons *event.Consumer

	stop     chan struct{}
	stopCtx  context.Context
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// NewRedis builds the sink for cfg.Redis and registers its counters in reg (may be nil).
func NewRedis(cfg Config, reg *metrics.Registry) *RedisSink {
	s := &RedisSink{cfg: cfg.Redis, bmin: cfg.BackoffMin, bmax: cfg.BackoffMax,
		q: make(chan redisItem, cfg.Redis.Queue)}
	if reg != nil {
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
	}
	return s
}

// RedisCounts are the sink's counters by kind ("event", "flow", "hash").
type RedisCounts struct {
	Sent       map[string]uint64            `json:"sent"`
	Dropped    map[string]map[string]uint64 `json:"dropped"`
	Reconnects uint64                       `json:"reconnects"`
	Connected  bool                         `json:"connected"`
	Queued     int                          `json:"queued"`
}

// Counts returns the counters.
func (s *RedisSink) Counts() RedisCounts {
	c := RedisCounts{Sent: map[string]uint64{}, Dropped: map[string]map[string]uint64{},
		Reconnects: s.reconnects.Load(), Connected: s.connected.Load(), Queued: len(s.q)}
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

// Consumer returns the sink's event-bus consumer (nil before Start or without a bus).
func (s *RedisSink) Consumer() *event.Consumer { return s.cons }

// Start subscribes to bus (when not nil) with a ring of ring events, the sink's own R_I
// ring, and starts the writer. A stopped sink can be started again (a collector restart).
func (s *RedisSink) Start(bus *event.Bus, ring int) error {
	s.stop, s.stopOnce, s.stopCtx = make(chan struct{}), sync.Once{}, nil
	if bus != nil {
		s.bus = bus
		s.cons = bus.Subscribe("redis", ring)
		s.wg.Add(1)
		go s.readEvents()
	}
	s.wg.Add(1)
	go s.write()
	return nil
}

// Stop stops reading events, sends what is queued until ctx ends, and drops (counting) the
// rest.
func (s *RedisSink) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		s.stopCtx = ctx
		close(s.stop)
	})
	s.wg.Wait()
	if s.cons != nil {
		s.bus.Unsubscribe(s.cons)
	}
	s.stop = nil
	return nil
}

func (s *RedisSink) readEvents() {
	defer s.wg.Done()
	buf := make([]event.Event, 256)
	for {
		select {
		case <-s.stop:
			return
		case <-s.cons.Notify():
		}
		for {
			n := s.cons.Poll(buf)
			for i := range buf[:n] {
				s.OfferEvent(&buf[i])
			}
			if n < len(buf) {
				break
			}
		}
	}
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

func (s *RedisSink) offer(kind uint8, cmds int, buf []byte) {
	select {
	case s.q <- redisItem{kind: kind, cmds: cmds, buf: buf}:
	default:
		s.dropped[kind][redisDropQueue].Add(1)
	}
}

// OfferEvent queues XADD of e to the events stream when RedisEvent(e).
func (s *RedisSink) OfferEvent(e *event.Event) {
	if !RedisEvent(e) {
		return
	}
	f := AppendRedisEvent(nil, e)
	s.offer(redisEvent, 1, s.xadd(s.cfg.EventsStream, f))
}

// OfferRecord queues XADD of an evicted flow record to the flows stream.
func (s *RedisSink) OfferRecord(r *flowcache.Record) {
	f := AppendRedisRecord(nil, r, true)
	s.offer(redisFlow, 1, s.xadd(s.cfg.FlowsStream, f))
}

// OfferLatest queues HSET of a flow's latest aggregates and EXPIRE of its hash.
func (s *RedisSink) OfferLatest(r *flowcache.Record) {
	key := RedisFlowKey(s.cfg.HashPrefix, r)
	f := AppendRedisRecord(nil, r, false)
	args := append([]string{"HSET", key}, f...)
	buf := AppendCommand(nil, args...)
	buf = AppendCommand(buf, "EXPIRE", key, strconv.FormatInt(int64(s.cfg.TTL/time.Second), 10))
	s.offer(redisHash, 2, buf)
}

// OfferHistogram queues HSET of one histogram as the hash <histogram_prefix><switch>:<metric>
// (fields scale, bins, total, and one per non-empty bin: its lower bound → its count) and
// EXPIRE of it.
func (s *RedisSink) OfferHistogram(h *flowcache.HistJSON) {
	key := s.cfg.HistogramPrefix + h.Switch + ":" + h.Metric
	args := []string{"HSET", key, "scale", h.Scale, "bins", strconv.Itoa(h.Bins), "total", u(h.Total)}
	for _, b := range h.Counts {
		args = append(args, u(b.Lo), u(b.Count))
	}
	buf := AppendCommand(nil, args...)
	buf = AppendCommand(buf, "EXPIRE", key, strconv.FormatInt(int64(s.cfg.TTL/time.Second), 10))
	s.offer(redisHist, 2, buf)
}

func (s *RedisSink) xadd(stream string, fields []string) []byte {
	args := append([]string{"XADD", stream, "MAXLEN", "~", strconv.Itoa(s.cfg.MaxLen), "*"}, fields...)
	return AppendCommand(nil, args...)
}

// RedisFlowKey is a flow's hash key: prefix + "src,dst,sport,dport,proto".
func RedisFlowKey(prefix string, r *flowcache.Record) string {
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
func AppendRedisRecord(f []string, r *flowcache.Record, withReason bool) []string {
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
		for m := range flowcache.NumMetrics {
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

// write is the writer goroutine: connect, gather a batch, pipeline it, count the replies.
func (s *RedisSink) write() {
	defer s.wg.Done()
	var c *RedisConn
	defer func() {
		if c != nil {
			c.Close()
		}
		s.connected.Store(false)
		s.dropQueued()
	}()
	backoff := s.bmin
	dials := 0
	batch := make([]redisItem, 0, 64)
	var buf []byte
	for {
		if c == nil {
			if s.stopping() && (len(s.q) == 0 || s.stopCtx.Err() != nil) {
				return
			}
			var err error
			c, err = DialRedis(s.cfg.Address, s.cfg.Password, s.cfg.DB, s.cfg.Timeout)
			if err != nil {
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
			s.connected.Store(true)
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
		cmds := batch[0].cmds
	gather:
		for cmds < s.cfg.Batch {
			select {
			case it := <-s.q:
				batch = append(batch, it)
				cmds += it.cmds
			default:
				break gather
			}
		}
		buf = buf[:0]
		for _, it := range batch {
			buf = append(buf, it.buf...)
		}
		if err := s.send(c, buf, batch); err != nil {
			c.Close()
			c = nil
			s.connected.Store(false)
		}
	}
}

// send pipelines one batch and counts every item as sent, rejected or (when the connection
// fails first) dropped.
func (s *RedisSink) send(c *RedisConn, buf []byte, batch []redisItem) error {
	c.conn.SetDeadline(time.Now().Add(s.cfg.Timeout))
	_, err := c.conn.Write(buf)
	done := 0
	if err == nil {
		for ; done < len(batch); done++ {
			it := &batch[done]
			rejected := false
			for j := 0; j < it.cmds && err == nil; j++ {
				var rerr error
				_, rerr = c.read()
				var re RedisError
				if errors.As(rerr, &re) {
					rejected = true
				} else if rerr != nil {
					err = rerr
				}
			}
			if err != nil {
				break
			}
			if rejected {
				s.dropped[it.kind][redisDropRejected].Add(1)
			} else {
				s.sent[it.kind].Add(1)
			}
		}
	}
	for _, it := range batch[done:] {
		s.dropped[it.kind][redisDropConn].Add(1)
	}
	return err
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

// RedisConn is a minimal RESP2 client connection: enough for the sink (pipelined writes) and
// for tests and tools reading streams and hashes back.
type RedisConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// RedisError is an error reply ("-ERR ...").
type RedisError string

func (e RedisError) Error() string { return string(e) }

// DialRedis connects to addr and, when set, sends AUTH password and SELECT db.
func DialRedis(addr, password string, db int, timeout time.Duration) (*RedisConn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &RedisConn{conn: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	if password != "" {
		if _, err := c.Do(timeout, "AUTH", password); err != nil {
			nc.Close()
			return nil, fmt.Errorf("redis %s: AUTH: %w", addr, err)
		}
	}
	if db != 0 {
		if _, err := c.Do(timeout, "SELECT", strconv.Itoa(db)); err != nil {
			nc.Close()
			return nil, fmt.Errorf("redis %s: SELECT %d: %w", addr, db, err)
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *RedisConn) Close() error { return c.conn.Close() }

// Do sends one command and returns its reply: string (simple or bulk), int64, nil, or
// []any for arrays; an error reply is a RedisError.
func (c *RedisConn) Do(timeout time.Duration, args ...string) (any, error) {
	c.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := c.conn.Write(AppendCommand(nil, args...)); err != nil {
		return nil, err
	}
	return c.read()
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

var errProtocol = errors.New("redis: protocol error")

func (c *RedisConn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, errProtocol
	}
	return l[:len(l)-2], nil
}

// read reads one reply.
func (c *RedisConn) read() (any, error) {
	l, err := c.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '+':
		return string(l[1:]), nil
	case '-':
		return nil, RedisError(l[1:])
	case ':':
		return strconv.ParseInt(string(l[1:]), 10, 64)
	case '$':
		n, err := strconv.Atoi(string(l[1:]))
		if err != nil || n < -1 || n > 512<<20 {
			return nil, errProtocol
		}
		if n == -1 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(string(l[1:]))
		if err != nil || n < -1 || n > 1<<24 {
			return nil, errProtocol
		}
		if n == -1 {
			return nil, nil
		}
		a := make([]any, n)
		var first error
		for i := range a {
			v, err := c.read()
			var re RedisError
			if errors.As(err, &re) {
				if first == nil {
					first = err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			a[i] = v
		}
		return a, first
	}
	return nil, errProtocol
}
