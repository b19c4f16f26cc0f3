//go:build linux

package ingest

import (
	"testing"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

type nop struct{ n uint64 }

func (p *nop) Name() string                       { return "nop" }
func (p *nop) Process(_ int, r *telemetry.Report) { p.n += uint64(r.NHops) }
func (p *nop) Flush(int)                          {}

// nopBatch is nop with a batch path: a worker hands it a batch's reports at once.
type nopBatch struct{ nop }

func (p *nopBatch) ProcessBatch(_ int, rs []telemetry.Report) {
	for i := range rs {
		p.n += uint64(rs[i].NHops)
	}
}

// filled returns a worker whose socket buffers hold a recvmmsg batch of datagrams, as the
// kernel leaves them, and no file descriptor: the benchmark starts after the system call.
func filled(tb testing.TB, in wire.Input, dgrams [][]byte) (*worker, *nop, int) {
	const batch = 64
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	p := &nop{}
	s := &socket{batch: batch, size: 2048, max: 2048}
	s.alloc()
	for i := 0; i < batch; i++ {
		d := dgrams[i%len(dgrams)]
		copy(s.bufs[i*s.size:], d)
		s.msgs[i].Len = uint32(len(d))
	}
	w := &worker{dec: dec, in: in, sock: s}
	w.setProcessors([]Processor{p})
	return w, p, batch
}

// BenchmarkHotPath measures one recvmmsg batch of 64 TR v2.0 datagrams (one INT-MD report,
// 5 hops each) from the filled buffers through decode to a no-op processor, with counting,
// flush and publish. It must report 0 allocs/op.
func BenchmarkHotPath(b *testing.B) {
	good := goodReports(b)
	if good == nil {
		b.Skip("TR v2.0 encoder not ready")
	}
	w, p, n := filled(b, wire.InputReport, good[:1])
	w.batch(0, n)
	if w.local[cReports] != uint64(n) || w.local[cErrors] != 0 {
		b.Fatalf("reference batch: %d reports, %d errors", w.local[cReports], w.local[cErrors])
	}
	b.ReportAllocs()
	for b.Loop() {
		w.batch(0, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/report")
	_ = p.n
}

// BenchmarkHotPathBatch is BenchmarkHotPath with a processor that takes the batch's reports
// at once (ProcessBatch): the reports are decoded into the worker's batch array instead of
// one Report. It must report 0 allocs/op.
func BenchmarkHotPathBatch(b *testing.B) {
	good := goodReports(b)
	if good == nil {
		b.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(b, wire.InputReport, good[:1])
	p := &nopBatch{}
	w.setProcessors([]Processor{p})
	w.batch(0, n)
	if w.local[cReports] != uint64(n) || p.n != uint64(5*n) {
		b.Fatalf("reference batch: %d reports, %d hops", w.local[cReports], p.n)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.batch(0, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/report")
}

// BenchmarkHotPathMixed: coalesced TR v2.0 datagrams of three reports interleaved with
// garbage, so the error path is measured too (and must not allocate either).
func BenchmarkHotPathMixed(b *testing.B) {
	good := goodReports(b)
	if good == nil {
		b.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(b, wire.InputReport, append([][]byte{good[1]}, garbage...))
	b.ReportAllocs()
	for b.Loop() {
		w.batch(0, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/datagram")
}

func TestHotPathAllocs(t *testing.T) {
	good := goodReports(t)
	if good == nil {
		t.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(t, wire.InputReport, append(good, garbage...))
	if a := testing.AllocsPerRun(100, func() { w.batch(0, n) }); a != 0 {
		t.Errorf("%v allocations per batch, want 0", a)
	}
}
