package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Encoder turns items (events, or flow records already in line protocol) into a request
// body for one kind of sink.
type Encoder[T any] interface {
	// Points is the number of points e becomes (0: the sink skips it).
	Points(e *T) int
	// Encode appends the batch's body to dst.
	Encode(dst []byte, batch []T) []byte
}

// Poster sends one body. A *PermanentError is not retried (the server refused the data).
type Poster func(ctx context.Context, body []byte) error

type PermanentError struct {
	Msg string
	// Partial is the number of points the server refused when it stored the rest of the
	// batch (InfluxDB's "partial write: ... dropped=N"); 0: all refused.
	Partial uint64
}

func (e *PermanentError) Error() string { return e.Msg }

// Drop reasons of the dropped-points counter.
const (
	dropQueueFull = "queue_full"
	dropRejected  = "rejected"
	dropShutdown  = "shutdown"
)

// Queued is the sink framework of the HTTP sinks (export/influx, export/prom): a bounded queue filled by Offer, a goroutine that batches up
// to batch points or flush time, posts, and retries with backoff.
type Queued[T any] struct {
	name  string
	cfg   Batching
	batch int
	enc   Encoder[T]
	post  Poster
	q     chan T

	Sent, Retried, Failures          atomic.Uint64
	DropQueue, DropRejected, DropEnd atomic.Uint64
	Batches                          atomic.Uint64
	lastErr                          LastError

	// source says which reduction-accounting source an item is a value of (ValueSource),
	// for a sink of the pipeline's events; nil for a sink of other items (flow records),
	// whose vals stay zero.
	source func(*T) int
	vals   *ValueCount

	stop     chan struct{}
	stopCtx  context.Context
	stopOnce sync.Once
	done     chan struct{}
}

func NewQueued[T any](name string, cfg Batching, batch int, enc Encoder[T], post Poster, deps SinkDeps) *Queued[T] {
	s := &Queued[T]{name: name, cfg: cfg, batch: batch, enc: enc, post: post, q: make(chan T, cfg.Queue),
		stop: make(chan struct{}), done: make(chan struct{}), vals: NewValueCount(dropQueueFull, dropRejected, dropShutdown)}
	s.lastErr.Log = deps.Logger
	reg := deps.Metrics
	s.source, _ = any(ValueSource).(func(*T) int) // T is event.Event: a sink of the pipeline
	if reg != nil {
		reg.Counter("intake_export_sent_points_total", "Points a sink delivered.", "sink").
			Func(func() float64 { return float64(s.Sent.Load()) }, name)
		reg.Counter("intake_export_retried_points_total", "Points sent again after a failed attempt.", "sink").
			Func(func() float64 { return float64(s.Retried.Load()) }, name)
		d := reg.Counter("intake_export_dropped_points_total", "Points a sink dropped, by reason.", "sink", "reason")
		d.Func(func() float64 { return float64(s.DropQueue.Load()) }, name, dropQueueFull)
		d.Func(func() float64 { return float64(s.DropRejected.Load()) }, name, dropRejected)
		d.Func(func() float64 { return float64(s.DropEnd.Load()) }, name, dropShutdown)
		reg.Gauge("intake_export_queued_events", "Events waiting in a sink's queue.", "sink").
			Func(func() float64 { return float64(len(s.q)) }, name)
	}
	return s
}

func (s *Queued[T]) Name() string { return s.name }

// Offer queues e, or counts its points (and its value) as dropped when the queue is full.
func (s *Queued[T]) Offer(e *T) {
	n := s.enc.Points(e)
	if n == 0 {
		return
	}
	select {
	case s.q <- *e:
	default:
		s.DropQueue.Add(uint64(n))
		var v SourceCounts
		s.count(e, &v)
		s.vals.Drop(dropQueueFull, v.total())
	}
}

// count adds e to v when it is a value (a sink of the pipeline's events, e taken: it has
// points) and returns its points.
func (s *Queued[T]) count(e *T, v *SourceCounts) int {
	n := s.enc.Points(e)
	if s.source != nil && n > 0 {
		if src := s.source(e); src >= 0 {
			v[src]++
		}
	}
	return n
}

// ValueCounts returns the values the sink stored (its server accepted their batch) and
// dropped; zero for a sink of flow records.
func (s *Queued[T]) ValueCounts() ValueCounts { return s.vals.Counts() }

// Dropped returns all points dropped.
func (s *Queued[T]) Dropped() uint64 {
	return s.DropQueue.Load() + s.DropRejected.Load() + s.DropEnd.Load()
}

// SinkStatus returns the sink's counters and its last error.
func (s *Queued[T]) SinkStatus() SinkStatus {
	st := SinkStatus{Name: s.name, Sent: s.Sent.Load(), Retried: s.Retried.Load(), Queued: len(s.q),
		Dropped: map[string]uint64{dropQueueFull: s.DropQueue.Load(), dropRejected: s.DropRejected.Load(), dropShutdown: s.DropEnd.Load()}}
	st.LastError, st.LastErrorTime = s.lastErr.Get()
	return st
}

// LastError is a sink's most recent error and its time. It is set on the error path only
// (a failed or refused batch), so its mutex costs nothing while writes succeed. Errors are
// also logged (level warn, to log or slog.Default), at most one line per sink every logEvery, with the
// count of those not logged since: a server that is down for an hour is a few hundred lines,
// not one per retry.
type LastError struct {
	mu         sync.Mutex
	msg        string
	at         time.Time
	logged     time.Time
	suppressed int
	Log        *slog.Logger // nil: slog.Default()
}

// logEvery is the least time between two logged errors of one sink.
const logEvery = 10 * time.Second

func (l *LastError) Set(sink string, err error) {
	now := time.Now()
	l.mu.Lock()
	l.msg, l.at = err.Error(), now
	log := now.Sub(l.logged) >= logEvery
	n := l.suppressed
	if log {
		l.logged, l.suppressed = now, 0
	} else {
		l.suppressed++
	}
	l.mu.Unlock()
	if log {
		lg := l.Log
		if lg == nil {
			lg = slog.Default()
		}
		lg.Warn("export failed", "sink", sink, "error", err, "errors_not_logged", n)
	}
}

// get returns the message and its time as RFC 3339 (both empty before any error).
func (l *LastError) Get() (msg, at string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		return "", ""
	}
	return l.msg, l.at.Format(time.RFC3339Nano)
}

// Start starts the sender; after Stop it may be started again (a collector restarted).
func (s *Queued[T]) Start(context.Context) error {
	select {
	case <-s.done:
		s.stop, s.done, s.stopCtx, s.stopOnce = make(chan struct{}), make(chan struct{}), nil, sync.Once{}
	default:
	}
	go s.run()
	return nil
}

func (s *Queued[T]) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopCtx = ctx
		close(s.stop)
	})
	<-s.done
	return nil
}

func (s *Queued[T]) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *Queued[T]) run() {
	defer close(s.done)
	batch := make([]T, 0, s.batch)
	var body []byte
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		// Gather: the first event waits for anything; the rest until full or flush time.
		batch, points := batch[:0], 0
		var vals SourceCounts
		select {
		case e := <-s.q:
			batch = append(batch, e)
			points += s.count(&e, &vals)
		case <-s.stop:
			if len(s.q) == 0 {
				return
			}
			continue
		}
		timer.Reset(s.cfg.Flush)
	gather:
		for points < s.batch {
			select {
			case e := <-s.q:
				batch = append(batch, e)
				points += s.count(&e, &vals)
			case <-timer.C:
				break gather
			case <-s.stop:
				// Take what is queued now without waiting for the flush time.
				for points < s.batch {
					select {
					case e := <-s.q:
						batch = append(batch, e)
						points += s.count(&e, &vals)
						continue
					default:
					}
					break
				}
				break gather
			}
		}
		timer.Stop()
		body = s.enc.Encode(body[:0], batch)
		s.send(body, uint64(points), vals)
	}
}

// send posts one batch, of points points holding vals values, until it is accepted,
// refused, or the sink stops and its context ends; every point and every value is counted
// exactly once as sent (stored) or dropped.
func (s *Queued[T]) send(body []byte, points uint64, vals SourceCounts) {
	backoff := s.cfg.BackoffMin
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if s.stopping() && s.stopCtx != nil {
			ctx, cancel = context.WithCancel(s.stopCtx)
		}
		err := s.post(ctx, body)
		cancel()
		if err == nil {
			s.Sent.Add(points)
			s.Batches.Add(1)
			s.vals.Store(vals)
			return
		}
		s.Failures.Add(1)
		s.lastErr.Set(s.name, err)
		var perm *PermanentError
		if errors.As(err, &perm) {
			if perm.Partial > 0 && perm.Partial < points {
				s.Sent.Add(points - perm.Partial)
				s.DropRejected.Add(perm.Partial)
				stored, refused := vals.refuse(perm.Partial)
				s.vals.Store(stored)
				s.vals.Drop(dropRejected, refused.total())
				return
			}
			s.DropRejected.Add(points)
			s.vals.Drop(dropRejected, vals.total())
			return
		}
		if s.stopping() && (s.stopCtx == nil || s.stopCtx.Err() != nil) {
			s.DropEnd.Add(points)
			s.vals.Drop(dropShutdown, vals.total())
			s.dropQueued()
			return
		}
		s.Retried.Add(points)
		wait := time.NewTimer(backoff)
		var end <-chan struct{}
		if s.stopping() && s.stopCtx != nil {
			end = s.stopCtx.Done()
		}
		select {
		case <-wait.C:
		case <-end:
			wait.Stop()
		}
		backoff = min(backoff*2, s.cfg.BackoffMax)
	}
}

// dropQueued empties the queue into the shutdown drop counter (past the stop deadline).
func (s *Queued[T]) dropQueued() {
	for {
		select {
		case e := <-s.q:
			var v SourceCounts
			s.DropEnd.Add(uint64(s.count(&e, &v)))
			s.vals.Drop(dropShutdown, v.total())
		default:
			return
		}
	}
}

// HTTPPost is a Poster for POST url with headers; 2xx is success, 4xx except 404/408/429 is
// permanent, anything else (5xx, network) is retried. onStatus may turn a response into a
// different error (InfluxDB's "database not found").
func HTTPPost(client *http.Client, url string, header http.Header, gz bool, onStatus func(code int, body []byte) error) Poster {
	var zbuf bytes.Buffer
	var zw *gzip.Writer
	return func(ctx context.Context, body []byte) error {
		payload := body
		if gz {
			zbuf.Reset()
			if zw == nil {
				zw = gzip.NewWriter(&zbuf)
			} else {
				zw.Reset(&zbuf)
			}
			zw.Write(body)
			zw.Close()
			payload = zbuf.Bytes()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			return &PermanentError{Msg: err.Error()}
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			return nil
		}
		if onStatus != nil {
			if err := onStatus(resp.StatusCode, msg); err != nil {
				return err
			}
		}
		err = fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(msg))
		switch c := resp.StatusCode; {
		case c == 404 || c == 408 || c == 429 || c >= 500:
			return err
		default:
			return &PermanentError{Msg: err.Error()}
		}
	}
}
