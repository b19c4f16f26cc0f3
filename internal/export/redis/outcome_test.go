//go:build unix

package redis

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/intake-int/intake/internal/testutil"
)

// startRedis starts redis-server on a free loopback port, without persistence, stopped at
// the test's end, and returns its address once it answers PING.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testing.Short() {
			t.Skip("redis-server not installed (-short)")
		}
		t.Fatal("redis-server not found: install it with: apt-get install -y redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	testutil.Eventually(t, 20*time.Second, "redis-server ready", func() bool {
		c, err := testutil.DialRedis(addr, "", 0, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestRedisOutcome classifies the commands of a pipeline the server cut short (QUIT closes
// the connection after its reply): a command that got its reply counts, even though go-redis
// sets the connection's error on every command of the pipeline; those after it do not.
func TestRedisOutcome(t *testing.T) {
	addr := startRedis(t)
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, DialerRetries: 1, PoolSize: 2})
	defer c.Close()
	ctx := t.Context()
	pipe := c.Pipeline()
	pipe.Do(ctx, "xadd", "s", "*", "f", "1")
	pipe.Do(ctx, "hset", "s", "f", "1") // WRONGTYPE: an error reply
	pipe.Do(ctx, "xadd", "s", "*", "f", "2")
	pipe.Do(ctx, "quit")
	pipe.Do(ctx, "xadd", "s", "*", "f", "3")
	pipe.Do(ctx, "hset", "h", "f", "1")
	cmds, err := pipe.Exec(ctx)
	if err == nil || len(cmds) != 6 {
		t.Fatalf("exec: %d commands, %v", len(cmds), err)
	}
	for _, tc := range []struct {
		cmds      []goredis.Cmder
		conn, rej bool
	}{
		{cmds[0:1], false, false},
		{cmds[1:2], false, true},
		{cmds[0:3], false, true},
		{cmds[2:3], false, false},
		{cmds[4:5], true, false},
		{cmds[2:6], true, false},
	} {
		conn, rej := redisOutcome(tc.cmds)
		if (conn != nil) != tc.conn || (rej != nil) != tc.rej {
			t.Errorf("%v: conn %v rejected %v, want %v %v", tc.cmds, conn, rej, tc.conn, tc.rej)
		}
	}
	rc, err := testutil.DialRedis(addr, "", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if n, err := rc.Do(5*time.Second, "XLEN", "s"); err != nil || n != int64(2) {
		t.Errorf("XLEN %v %v, want the 2 XADDs before QUIT", n, err)
	}
}
