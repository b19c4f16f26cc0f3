package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func (s *Sink) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// write is the writer goroutine: make sure the server answers, gather a batch, pipeline it,
// count the replies.
func (s *Sink) write(client goredis.UniversalClient) {
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
				s.lastErr.Set("redis", err)
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
				s.lastErr.Set("redis", err)
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
			s.lastErr.Set("redis", err)
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
func (s *Sink) settle(client goredis.UniversalClient, pipe goredis.Pipeliner) error {
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
func (s *Sink) ping(client goredis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.Timeout)
	defer cancel()
	return client.Ping(ctx).Err()
}

// send pipelines one batch and counts every item as sent, rejected (an error reply) or
// dropped (reason conn: the connection failed before all its replies arrived). It returns
// the connection's error, if any.
func (s *Sink) send(pipe goredis.Pipeliner, batch []redisItem) error {
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
		s.lastErr.Set("redis", rejected)
	}
	return connErr
}

// redisOutcome classifies one item's commands by their own replies: conn is the error of a
// command that got no reply (the connection failed first), rej an error reply. A command
// that got a reply is confirmed even when go-redis, after a failure later in the pipeline,
// sets the failure as every command's error: its reply is its value.
func redisOutcome(cmds []goredis.Cmder) (conn, rej error) {
	for _, c := range cmds {
		err := c.Err()
		if err == nil {
			continue
		}
		if rc, ok := c.(*goredis.Cmd); ok && rc.Val() != nil {
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
	var re goredis.Error
	return errors.As(err, &re)
}

func (s *Sink) dropQueued() {
	for {
		select {
		case it := <-s.q:
			s.dropped[it.kind][redisDropShutdown].Add(1)
		default:
			return
		}
	}
}
