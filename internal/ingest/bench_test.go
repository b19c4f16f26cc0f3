//go:build linux

package ingest

import (
	"fmt"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

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
	w := &worker{sock: s}
	w.init(0, dec, in, []Processor{p})
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

// withAllow gives the worker of filled an allow list of n prefixes (the source matches the
// last) and its socket the senders' addresses, as recvmmsg leaves them: IPv4-mapped, from a
// dual-stack socket.
func withAllow(tb testing.TB, w *worker, n int) {
	var entries []string
	for i := range n - 1 {
		entries = append(entries, fmt.Sprintf("192.0.%d.0/24", i))
	}
	entries = append(entries, "10.0.0.0/8")
	ps, err := ParseAllow(entries)
	if err != nil {
		tb.Fatal(err)
	}
	w.allow = newAllowList(ps)
	s := w.sock
	s.names = make([]unix.RawSockaddrInet6, s.batch)
	for i := range s.names {
		s.names[i].Family = unix.AF_INET6
		s.names[i].Addr = netip.MustParseAddr("::ffff:10.1.2.3").As16()
		s.msgs[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		s.msgs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
	}
}

// BenchmarkHotPathAllow is BenchmarkHotPath with an allow list of 8 prefixes, the sender in
// the last: the check's cost is the difference. It must report 0 allocs/op.
func BenchmarkHotPathAllow(b *testing.B) {
	good := goodReports(b)
	if good == nil {
		b.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(b, wire.InputReport, good[:1])
	withAllow(b, w, 8)
	w.batch(0, n)
	if w.local[cReports] != uint64(n) || w.local[cDrop0+int(DropNotAllowed)] != 0 {
		b.Fatalf("reference batch: %d reports, %d not allowed", w.local[cReports], w.local[cDrop0+int(DropNotAllowed)])
	}
	b.ReportAllocs()
	for b.Loop() {
		w.batch(0, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/report")
}

// BenchmarkAllowCheck is the check alone, per datagram: 8 prefixes, the sender in the last.
func BenchmarkAllowCheck(b *testing.B) {
	w, _, n := filled(b, wire.InputReport, [][]byte{{0}})
	withAllow(b, w, 8)
	b.ReportAllocs()
	ok := 0
	for b.Loop() {
		for i := range n {
			if w.sock.allowed(i, w.allow) {
				ok++
			}
		}
	}
	if ok != b.N*n {
		b.Fatalf("%d of %d allowed", ok, b.N*n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/datagram")
}

func TestHotPathAllowAllocs(t *testing.T) {
	good := goodReports(t)
	if good == nil {
		t.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(t, wire.InputReport, append(good, garbage...))
	withAllow(t, w, 8)
	if a := testing.AllocsPerRun(100, func() { w.batch(0, n) }); a != 0 {
		t.Errorf("%v allocations per batch, want 0", a)
	}
	// Not allowed: dropped and counted, not decoded.
	w.local = [nCounters]uint64{}
	for i := range w.sock.names {
		w.sock.names[i].Addr = netip.MustParseAddr("::ffff:11.1.2.3").As16()
	}
	w.batch(0, n)
	if w.local[cDrop0+int(DropNotAllowed)] != uint64(n) || w.local[cReports] != 0 || w.local[cPackets] != uint64(n) {
		t.Errorf("not allowed: drops %d reports %d packets %d", w.local[cDrop0+int(DropNotAllowed)], w.local[cReports], w.local[cPackets])
	}
}
