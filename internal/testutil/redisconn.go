package testutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// RedisConn is a plain client connection for tests that read the Redis sink's streams and
// hashes back (go-redis speaking RESP2, so that replies keep their RESP2 shapes).
type RedisConn struct {
	c *goredis.Client
}

// DialRedis connects to addr, sending AUTH password and SELECT db when set, and checks that
// the server answers PING.
func DialRedis(addr, password string, db int, timeout time.Duration) (*RedisConn, error) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, Password: password, DB: db, Protocol: 2,
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
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	return v, err
}
