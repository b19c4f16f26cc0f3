package api

import (
	"fmt"

	"github.com/intake-int/intake/internal/budget"
)

// connBytes is what one connection the server holds takes at most: its goroutine's stack,
// the server's read and write buffers and connection state, with a request in progress
// (TestBudgetReal measures 21 KiB with the client's end; a flood of 20,000 connections took
// 390 MB before the cap).
const connBytes = 24 << 10

// Budget is the memory of the connections the server holds at most (max_connections), none
// when the API is off (docs/config.md, "Budget").
func (c *Config) Budget() budget.Budget {
	if c.Address == "" {
		return nil
	}
	n := c.MaxConnections
	if n == 0 {
		n = DefaultMaxConnections
	}
	return budget.Budget{{Component: "http", Part: "connections", Memory: budget.Mul(int64(n), connBytes),
		Note: fmt.Sprintf("%d connections × %s (max_connections)", n, budget.Bytes(connBytes))}}
}
