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

// encoder turns items (events, or flow records already in line protocol) into a request
// body for one kind of sink.
type encoder[T any] interface {
	// points is the number of points e becomes (0: the sink skips it).
	points(e *T) int
	// encode appends the batch's body to dst.
	encode(dst []byte, batch []T) []byte
}

// poster sends one body. A *permanentError is not retried (the server refused the data).
type poster func(ctx context.Context, body []byte) error

type permanentError struct {
	msg string
	// partial is the number of points the server refused when it stored the rest of the
	// batch (InfluxDB's "partial write: ... dropped=N"); 0: all refused.
	partial uint64
}

func (e *permanentError) Error() string { return e.msg }

// Drop reasons of the dropped-points counter.
const (
	dropQueueFull = "queue_full"
	dropRejected  = "rejected"
	dropShutdown  = "shutdown"
	// dropSeriesLimit: a gauge for a key beyond export.prometheus.series_limit.
	dropSeriesLimit = "series_limit"
)

// queued is the sink framework: a bounded queue filled by Offer, a goroutine that batches up
// to batch points or flush time, posts, and retries with backoff.
type queued[T any] struct {
	name  string
	cfg   Config
	batch int
	enc   encoder[T]
	post  poster
	q     chan T

	Sent, Retried, Failures          atomic.Uint64
	DropQueue, DropRejected, DropEnd atomic.Uint64
	Batches                          atomic.Uint64
	lastErr                          lastError

	// source says which reduction-accounting source an item is a value of (valueSource),
	// for a sink of the pipeline's events; nil for a sink of other items (flow records),
	// whose vals stay zero.
	source func(*T) int
	vals   *valueCount

	stop     chan struct{}
	stopCtx  context.Context
	stopOnce sync.Once
	done     chan struct{}
}

func newQueued[T any](name string, cfg Config, batch int, enc encoder[T], post poster, deps SinkDeps) *queued[T] {
	s := &queued[T]{name: name, cfg: cfg, batch: batch, enc: enc, post: post, q: make(chan T, cfg.Queue),
		stop: make(chan struct{}), done: make(chan struct{}), vals: newValueCount(dropQueueFull, dropRejected, dropShutdown)}
	s.lastErr.log = deps.Logger
	reg := deps.Metrics
	s.source, _ = any(valueSource).(func(*T) int) // T is event.Event: a sink of the pipeline
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

func (s *queued[T]) Name() string { return s.name }

// Offer queues e, or counts its points (and its value) as dropped when the queue is full.
func (s *queued[T]) Offer(e *T) {
	n := s.enc.points(e)
	if n == 0 {
		return
	}
	select {
	case s.q <- *e:
	default:
		s.DropQueue.Add(uint64(n))
		var v sourceCounts
		s.count(e, &v)
		s.vals.drop(dropQueueFull, v.total())
	}
}

// count adds e to v when it is a value (a sink of the pipeline's events, e taken: it has
// points) and returns its points.
func (s *queued[T]) count(e *T, v *sourceCounts) int {
	n := s.enc.points(e)
	if s.source != nil && n > 0 {
		if src := s.source(e); src >= 0 {
			v[src]++
		}
	}
	return n
}

// ValueCounts returns the values the sink stored (its server accepted their batch) and
// dropped; zero for a sink of flow records.
func (s *queued[T]) ValueCounts() ValueCounts { return s.vals.counts() }

// Dropped returns all points dropped.
func (s *queued[T]) Dropped() uint64 {
	return s.DropQueue.Load() + s.DropRejected.Load() + s.DropEnd.Load()
}

// SinkStatus returns the sink's counters and its last error.
func (s *queued[T]) SinkStatus() SinkStatus {
	st := SinkStatus{Name: s.name, Sent: s.Sent.Load(), Retried: s.Retried.Load(), Queued: len(s.q),
		Dropped: map[string]uint64{dropQueueFull: s.DropQueue.Load(), dropRejected: s.DropRejected.Load(), dropShutdown: s.DropEnd.Load()}}
	st.LastError, st.LastErrorTime = s.lastErr.get()
	return st
}

// lastError is a sink's most recent error and its time. It is set on the error path only
// (a failed or refused batch), so its mutex costs nothing while writes succeed. Errors are
// also logged (level warn, to log or slog.Default), at most one line per sink every logEvery, with the
// count of those not logged since: a server that is down for an hour is a few hundred lines,
// not one per retry.
type lastError struct {
	mu         sync.Mutex
	msg        string
	at         time.Time
	logged     time.Time
	suppressed int
	log        *slog.Logger
}

// logEvery is the least time between two logged errors of one sink.
const logEvery = 10 * time.Second

func (l *lastError) set(sink string, err error) {
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
		lg := l.log
		if lg == nil {
			lg = slog.Default()
		}
		lg.Warn("export failed", "sink", sink, "error", err, "errors_not_logged", n)
	}
}

// get returns the message and its time as RFC 3339 (both empty before any error).
func (l *lastError) get() (msg, at string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		return "", ""
	}
	return l.msg, l.at.Format(time.RFC3339Nano)
}

// Start starts the sender; after Stop it may be started again (a collector restarted).
func (s *queued[T]) Start(context.Context) error {
	select {
	case <-s.done:
		s.stop, s.done, s.stopCtx, s.stopOnce = make(chan struct{}), make(chan struct{}), nil, sync.Once{}
	default:
	}
	go s.run()
	return nil
}

func (s *queued[T]) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopCtx = ctx
		close(s.stop)
	})
	<-s.done
	return nil
}

func (s *queued[T]) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *queued[T]) run() {
	defer close(s.done)
	batch := make([]T, 0, s.batch)
	var body []byte
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		// Gather: the first event waits for anything; the rest until full or flush time.
		batch, points := batch[:0], 0
		var vals sourceCounts
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
		body = s.enc.encode(body[:0], batch)
		s.send(body, uint64(points), vals)
	}
}

// send posts one batch, of points points holding vals values, until it is accepted,
// refused, or the sink stops and its context ends; every point and every value is counted
// exactly once as sent (stored) or dropped.
func (s *queued[T]) send(body []byte, points uint64, vals sourceCounts) {
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
			s.vals.store(vals)
			return
		}
		s.Failures.Add(1)
		s.lastErr.set(s.name, err)
		var perm *permanentError
		if errors.As(err, &perm) {
			if perm.partial > 0 && perm.partial < points {
				s.Sent.Add(points - perm.partial)
				s.DropRejected.Add(perm.partial)
				stored, refused := vals.refuse(perm.partial)
				s.vals.store(stored)
				s.vals.drop(dropRejected, refused.total())
				return
			}
			s.DropRejected.Add(points)
			s.vals.drop(dropRejected, vals.total())
			return
		}
		if s.stopping() && (s.stopCtx == nil || s.stopCtx.Err() != nil) {
			s.DropEnd.Add(points)
			s.vals.drop(dropShutdown, vals.total())
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
func (s *queued[T]) dropQueued() {
	for {
		select {
		case e := <-s.q:
			var v sourceCounts
			s.DropEnd.Add(uint64(s.count(&e, &v)))
			s.vals.drop(dropShutdown, v.total())
		default:
			return
		}
	}
}

// httpPost is a poster for POST url with headers; 2xx is success, 4xx except 404/408/429 is
// permanent, anything else (5xx, network) is retried. onStatus may turn a response into a
// different error (InfluxDB's "database not found").
func httpPost(client *http.Client, url string, header http.Header, gz bool, onStatus func(code int, body []byte) error) poster {
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
			return &permanentError{msg: err.Error()}
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
			return &permanentError{msg: err.Error()}
		}
	}
}
