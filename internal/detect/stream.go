package detect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// minLogRing is the least number of events the shared ring holds, whatever event_log says:
// the live streams read it too, and a stream reading promptly must survive a burst.
const minLogRing = 4096

// logSize is the shared ring's size for event_log n.
func logSize(n int) int { return max(n, minLogRing) }

// streamWriteTimeout bounds one write to a stream's client: a client that does not read for
// this long is dropped (a variable for the tests).
var streamWriteTimeout = 5 * time.Second

// streamKeepalive is how often an idle stream sends a comment.
const streamKeepalive = 15 * time.Second

// streamFlush is the least time between two wakeups of the streams: the events stored in
// between are written by each stream at once. Waking every stream for every event cost a
// goroutine wakeup and a write per event and stream.
const streamFlush = 10 * time.Millisecond

// logDrain is how many events the log's goroutine takes from the bus at once.
const logDrain = 256

// streamBatch is how many events a stream reads from the log at once.
const streamBatch = 64

// streamShared is how many of the newest events the log keeps encoded for the streams.
const streamShared = minLogRing

// Log keeps the most recent events in one ring, which GET /api/v1/events queries and every
// live stream (GET /api/v1/events/stream) reads at its own position: a bus consumer drained
// by its own goroutine, each event numbered. A stream costs its position and a small buffer,
// not a ring of its own; one that falls a whole ring behind, or whose client stops reading,
// is dropped and counted. While streams are open the log encodes each event once for all
// of them (encoded); a stream only adds its own sequence number. The Detector owns one
// (Detector.Log).
type Log struct {
	bus  *event.Bus
	cons *event.Consumer
	mu   sync.RWMutex
	ring []event.Event
	enc  []encoded     // the newest events encoded, at position % streamShared
	keep uint64        // events Query answers from: event_log
	seq  uint64        // events stored so far; the newest has seq
	wake chan struct{} // closed (and replaced) when events are stored, at most every streamFlush

	woke      time.Time   // when wake was last closed
	wakeTimer *time.Timer // closes wake at woke+streamFlush, when events came sooner

	cancel context.CancelFunc
	done   chan struct{}

	maxStreams int64
	streams    atomic.Int64
	opened     atomic.Uint64
	refused    atomic.Uint64
	behind     atomic.Uint64 // dropped: fell a whole ring behind
	slow       atomic.Uint64 // dropped: a write blocked past streamWriteTimeout
}

// StreamStats are the live streams' counters (GET /api/v1/detect/status, `streams`).
type StreamStats struct {
	Open    int64  `json:"open"`
	Max     int64  `json:"max"`
	Opened  uint64 `json:"opened"`
	Refused uint64 `json:"refused"`
	// Dropped are streams the collector closed: behind (the client read too slowly to keep
	// up with the ring) and slow (a write to the client blocked past its timeout).
	Dropped map[string]uint64 `json:"dropped"`
}

// newLog builds a log of size events over bus, reading it through a ring of ring events
// from start to stop; at most maxStreams streams read it at once.
func newLog(bus *event.Bus, size, ring, maxStreams int) *Log {
	return &Log{bus: bus, ring: make([]event.Event, logSize(size)), enc: make([]encoded, streamShared), keep: uint64(size),
		cons: bus.Subscribe("log", ring), wake: make(chan struct{}), maxStreams: int64(maxStreams)}
}

// Log returns the detector's event log (nil before RegisterAPI).
func (d *Detector) Log() *Log { return d.log }

// start drains the bus into the log until stop.
func (l *Log) start() {
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		buf := make([]event.Event, logDrain)
		for l.cons.Wait(ctx) {
			l.Drain(buf)
		}
		l.Drain(buf)
	}()
}

// encoded is an event as a stream writes it, but for its sequence number: b[:at] is
// "event: <kind>\ndata: {\"seq\":", b[at:] the rest of the JSON and the blank line. It is
// never changed once made (the streams read it outside the lock).
type encoded struct {
	pos  uint64 // the event's position in the log
	kind event.Kind
	b    []byte
	at   int
}

// encodeEvent encodes e, at position pos, for the streams.
func encodeEvent(pos uint64, e *event.Event) encoded {
	const seq0 = `{"seq":0` // EventJSON's first field, with Seq 0
	j, _ := json.Marshal(ToJSON(0, e))
	kind := e.Kind.String()
	b := make([]byte, 0, len(kind)+len(j)+20)
	b = append(append(append(b, "event: "...), kind...), "\ndata: {\"seq\":"...)
	at := len(b)
	b = append(append(b, j[len(seq0):]...), "\n\n"...)
	return encoded{pos: pos, kind: e.Kind, b: b, at: at}
}

// appendTo appends the event as a stream writes it, numbered seq.
func (c *encoded) appendTo(out []byte, seq uint64) []byte {
	out = strconv.AppendUint(append(out, c.b[:c.at]...), seq, 10)
	return append(out, c.b[c.at:]...)
}

// Drain moves waiting events into the log now and wakes the streams (within streamFlush).
// With streams open, it encodes each event for them.
func (l *Log) Drain(buf []event.Event) {
	var enc []encoded
	for {
		n := l.cons.Poll(buf)
		enc = enc[:0]
		var pos uint64
		if l.streams.Load() > 0 { // a stream opened later starts after these events
			l.mu.RLock()
			pos = l.seq
			l.mu.RUnlock()
			for i := range buf[:n] {
				enc = append(enc, encodeEvent(pos+uint64(i), &buf[i]))
			}
		}
		l.mu.Lock()
		if l.seq != pos { // another Drain stored events meanwhile: the streams encode these
			enc = enc[:0]
		}
		for i := range buf[:n] {
			if i < len(enc) {
				l.enc[l.seq%streamShared] = enc[i]
			}
			l.ring[l.seq%uint64(len(l.ring))] = buf[i]
			l.seq++
		}
		if n > 0 {
			l.wakeStreams()
		}
		l.mu.Unlock()
		if n < len(buf) {
			return
		}
	}
}

// wakeStreams wakes the streams waiting for events now, or at streamFlush after the last
// wakeup if that is later (l.mu held).
func (l *Log) wakeStreams() {
	if l.wakeTimer != nil {
		return // a wakeup is due
	}
	now := time.Now()
	if d := l.woke.Add(streamFlush).Sub(now); d > 0 {
		l.wakeTimer = time.AfterFunc(d, func() {
			l.mu.Lock()
			l.wakeTimer = nil
			l.wakeNow(time.Now())
			l.mu.Unlock()
		})
		return
	}
	l.wakeNow(now)
}

func (l *Log) wakeNow(now time.Time) {
	close(l.wake)
	l.wake, l.woke = make(chan struct{}), now
}

// stop ends the log's goroutine; the log keeps its events and its place on the bus (so
// that a restart loses nothing published meanwhile).
func (l *Log) stop() {
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel = nil
	}
}

// Query returns the logged events with time ≥ since (Unix ns), a kind in kinds (all when
// empty) and, when flow is not nil, keyed by that flow, oldest first, at most limit (the
// newest ones). It sees the newest event_log events.
func (l *Log) Query(since int64, kinds map[event.Kind]bool, flow *telemetry.FlowKey, limit int) []EventJSON {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := uint64(len(l.ring))
	first := uint64(0)
	if w := min(n, l.keep); l.seq > w {
		first = l.seq - w
	}
	out := []EventJSON{}
	for s := first; s < l.seq; s++ {
		e := &l.ring[s%n]
		if e.Time < since || (len(kinds) > 0 && !kinds[e.Kind]) ||
			(flow != nil && (!e.Measurement.HasFlow() || e.Key.Flow != *flow)) {
			continue
		}
		out = append(out, ToJSON(s+1, e))
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// read returns the events from position from on in dst, encoded, and how many; lost > 0
// when the ring no longer holds from (the reader fell that many events behind). An event
// the log has not encoded (stored before a stream was open, or past streamShared behind)
// is copied into evs at its index instead, with dst's b nil. wake is closed when events
// after the ones returned are stored.
func (l *Log) read(from uint64, dst []encoded, evs []event.Event) (n int, lost uint64, wake <-chan struct{}) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	size := uint64(len(l.ring))
	if l.seq > size && from < l.seq-size {
		return 0, l.seq - size - from, nil
	}
	for ; from+uint64(n) < l.seq && n < len(dst); n++ {
		p := from + uint64(n)
		if c := l.enc[p%streamShared]; c.b != nil && c.pos == p {
			dst[n] = c
			continue
		}
		dst[n], evs[n] = encoded{pos: p}, l.ring[p%size]
	}
	return n, 0, l.wake
}

// position is where a stream opened now starts reading.
func (l *Log) position() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.seq
}

// StreamStats returns the streams' counters.
func (l *Log) StreamStats() StreamStats {
	return StreamStats{Open: l.streams.Load(), Max: l.maxStreams, Opened: l.opened.Load(), Refused: l.refused.Load(),
		Dropped: map[string]uint64{"behind": l.behind.Load(), "slow": l.slow.Load()}}
}

func (l *Log) acquire() bool {
	if l.streams.Add(1) > l.maxStreams {
		l.streams.Add(-1)
		l.refused.Add(1)
		return false
	}
	l.opened.Add(1)
	return true
}

// handleStream serves the events as server-sent events until the client goes away, the
// server stops, or the stream is dropped for reading too slowly.
func (d *Detector) handleStream(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "kind") {
		return
	}
	kinds, ok := parseKinds(w, r)
	if !ok {
		return
	}
	l := d.log
	if !l.acquire() {
		w.Header().Set("Retry-After", "10")
		api.Error(w, http.StatusServiceUnavailable, fmt.Sprintf("too many event streams: %d open (detect.max_streams)", l.maxStreams))
		return
	}
	defer l.streams.Add(-1)
	// The stream outlives http.write_timeout: each write sets its own deadline (net/http
	// clears the read deadline once the request is read, so read_timeout does not end it).
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := w.Write(b)
		if err == nil {
			err = rc.Flush()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			l.slow.Add(1)
		}
		return err == nil
	}
	cur := l.position()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if !send([]byte(": intake event stream\n\n")) {
		return
	}
	enc, evs := make([]encoded, streamBatch), make([]event.Event, streamBatch)
	out := make([]byte, 0, 4096)
	var seq uint64
	keepalive := time.NewTicker(streamKeepalive)
	defer keepalive.Stop()
	for {
		n, lost, wake := l.read(cur, enc, evs)
		if lost > 0 {
			// The ring moved on past this stream: what it missed is gone. Say how much, and
			// end the stream rather than hold the ring back for one slow client.
			l.behind.Add(1)
			send([]byte("event: overflow\ndata: {\"lost\": " + strconv.FormatUint(lost, 10) + "}\n\n"))
			return
		}
		if n > 0 {
			cur += uint64(n)
			out = out[:0]
			for i := range enc[:n] {
				seq++
				c := &enc[i]
				kind := c.kind
				if c.b == nil {
					kind = evs[i].Kind
				}
				if len(kinds) > 0 && !kinds[kind] {
					continue
				}
				if c.b == nil {
					*c = encodeEvent(c.pos, &evs[i])
				}
				out = c.appendTo(out, seq)
			}
			if len(out) > 0 && !send(out) {
				return
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			if !send([]byte(": keepalive\n\n")) {
				return
			}
		case <-wake:
		}
	}
}

// Drops is the live event streams dropped (behind, slow) and refused, for the collector's
// status; nil when the detector has no event log.
func (d *Detector) Drops() map[string]uint64 {
	if d.log == nil {
		return nil
	}
	ss := d.log.StreamStats()
	return map[string]uint64{"event_streams.behind": ss.Dropped["behind"], "event_streams.slow": ss.Dropped["slow"],
		"event_streams.refused": ss.Refused}
}
