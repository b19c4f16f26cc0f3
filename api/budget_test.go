//go:build unix

package api_test

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/budget/budgettest"
)

// TestBudgetReal: max_connections connections, each with a request in progress (the most a
// connection holds: its handler's goroutine and the server's buffers), hold no more than the
// connections line, and not more than twice less.
func TestBudgetReal(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector enlarges goroutine stacks (13.3 MiB against 10.5 for 512 connections): not what a connection costs")
	}
	cfg := api.Config{MaxConnections: 512, MaxConnectionsPerSource: 512}
	raiseNoFile(t, 2*uint64(cfg.MaxConnections)+1000)
	s, _ := limitedServer(t, cfg)
	real := budgettest.HeapStacks(func() any {
		for i := range cfg.MaxConnections {
			c := dialFrom(t, "127.0.2."+strconv.Itoa(1+i%100), s.Addr())
			t.Cleanup(func() { c.Close() })
			io.WriteString(c, "GET /api/v1/block HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		}
		time.Sleep(500 * time.Millisecond) // the server reads the requests: the connections are active
		return s
	})
	if st := s.ConnStats(); st.Open != cfg.MaxConnections {
		t.Fatalf("%d connections open", st.Open)
	}
	cfg.Address = "127.0.0.1:0"
	// 3×, not 2×: goroutine stacks freed by an earlier test of the process are reused
	// without showing as new stack memory (5.5 MiB measured on a second run, 10.4 on a first).
	budgettest.Within(t, "http connections", real, budgettest.Memory(t, cfg.Budget(), "connections"), 3)
}
