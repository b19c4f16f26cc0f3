//go:build linux

package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
)

// TestRecvTimePerDatagram: every datagram's reports carry the time the kernel received that
// datagram, not one time per recvmmsg batch. One sender's 300 datagrams into one socket,
// read in batches of up to 64, get 300 receive times, strictly increasing in send order,
// all between the first send and the end of the run.
func TestRecvTimePerDatagram(t *testing.T) {
	rec := newRecorder("rec", nil)
	coalesce := 20 * time.Millisecond // a read that drained the socket waits: the next takes many
	c, err := New(testConfig(Listener{Format: "report", Address: "127.0.0.1", Batch: 64, Coalesce: &coalesce}),
		Deps{Processors: []Processor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 300
	before := time.Now().UnixNano()
	send(t, loopback(c.ListenerAddr(0)), seqReports(t, n, 1, 1)...)
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	checkRecvTimes(t, rec.got[0], n, c.Status().Listeners[0].SocketReads, before, after)
}

// checkRecvTimes asserts that the reports of n one-report datagrams, read in fewer than n
// reads, came in send order with receive times strictly increasing within [before, after].
func checkRecvTimes(t *testing.T, rs []telemetry.Report, n int, reads uint64, before, after int64) {
	t.Helper()
	if len(rs) != n {
		t.Fatalf("%d reports, want %d", len(rs), n)
	}
	if reads >= uint64(n) {
		t.Fatalf("%d reads for %d datagrams: no read held two, the test shows nothing", reads, n)
	}
	for i := range rs {
		r := &rs[i]
		if r.Seq != uint32(i+1) {
			t.Fatalf("report %d has seq %d: out of order", i, r.Seq)
		}
		if r.RecvTime < before || r.RecvTime > after {
			t.Errorf("report %d: receive time %d outside the run [%d, %d]", i, r.RecvTime, before, after)
		}
		if i > 0 && r.RecvTime <= rs[i-1].RecvTime {
			t.Errorf("report %d: receive time %d not after the previous datagram's %d (%d reads for %d datagrams)",
				i, r.RecvTime, rs[i-1].RecvTime, reads, n)
		}
	}
}
