package ingest

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/telemetry"
)

// datagramVectors is what recvmmsg takes per datagram beside its buffer: its iovec (16 B),
// control buffer (80 B), mmsghdr (64 B) and source address (28 B), rounded up
// (socket_linux.go; TestBudgetReal).
const datagramVectors = 192

// Budget is the memory the receive path takes: per listener, each socket's recvmmsg buffers
// (batch × max_datagram), its worker's batch of decoded reports, and its kernel receive buffer (rcvbuf; Linux charges up to twice
// the request, its bookkeeping, against it). docs/config.md, "Budget".
func (c *Config) Budget() budget.Budget {
	var b budget.Budget
	for _, l := range c.Listeners {
		socks := int64(l.Sockets)
		size, gro := l.MaxDatagram, ""
		if l.GRO == nil || *l.GRO { // the buffers hold a GRO super-datagram (an upper bound off Linux)
			size, gro = max(size, groBufSize), " (gro)"
		}
		b = append(b, budget.Item{Component: "ingest", Part: l.Name + " buffers",
			Memory: budget.Add(budget.Mul(socks, int64(l.Batch), int64(size)+datagramVectors),
				budget.Mul(socks, BatchReports, int64(unsafe.Sizeof(telemetry.Report{})))),
			Note: fmt.Sprintf("%d sockets × (%d datagrams × %d B%s, %d reports decoded)", l.Sockets, l.Batch, size, gro, BatchReports)})
		b = append(b, budget.Item{Component: "ingest", Part: l.Name + " rcvbuf",
			Memory: budget.Mul(socks, 2, int64(l.RcvBuf)), Outside: true,
			Note: fmt.Sprintf("%d sockets × 2 × rcvbuf %d B (kernel)", l.Sockets, l.RcvBuf)})
	}
	for _, s := range c.Sinks {
		b = append(b, budget.Item{Component: "ingest", Part: s.Name + " reports",
			Memory: budget.Mul(BatchReports, int64(unsafe.Sizeof(telemetry.Report{}))),
			Note:   fmt.Sprintf("%d reports decoded", BatchReports)})
		b = append(b, budget.Item{Component: "ingest", Part: s.Name + " ring", Memory: int64(s.Ring), Outside: true,
			Note: fmt.Sprintf("the sink's ring buffer %d B (kernel, mapped)", s.Ring)})
	}
	return b
}
