package ingest

import (
	"testing"

	"github.com/intake-int/intake/internal/budget/budgettest"
	"github.com/intake-int/intake/telemetry"
)

// TestBudgetReal: a listener's sockets, opened as serve opens them (recvmmsg vectors,
// buffers, source addresses), and their workers' batches of decoded reports hold no more
// than its buffers line, and not more than twice less.
func TestBudgetReal(t *testing.T) {
	cfg := Config{Listeners: []Listener{{Name: "report:0", Sockets: 2, Batch: 64, MaxDatagram: 9216, RcvBuf: 1 << 20, GRO: new(bool)}}}
	l := cfg.Listeners[0]
	real := budgettest.Heap(func() any {
		var held []any
		for range l.Sockets {
			s, err := openSocket("udp4", "127.0.0.1:0", l.RcvBuf, l.Batch, l.MaxDatagram, false, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.close() })
			held = append(held, s, make([]telemetry.Report, BatchReports)) // worker.setProcs
		}
		return held
	})
	budgettest.Within(t, "ingest buffers", real, budgettest.Memory(t, cfg.Budget(), "report:0 buffers"), 2)
}
