//go:build linux

package ingest

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// recorder keeps a copy of every report it is given, per worker, and checks at each Flush
// that it has been given every report a plain processor (ref) has: a batch is handed over
// completely before the flush.
type recorder struct {
	name string
	ref  *recorder // for a batch recorder: the plain one beside it

	mu        sync.Mutex
	got       map[int][]telemetry.Report
	batches   int
	oversized int // ProcessBatch calls with more than BatchReports reports, or none
	viaProc   int // Process calls (a batch recorder is never called so by a worker)
	lagging   int // flushes that found fewer reports here than in ref
}

func newRecorder(name string, ref *recorder) *recorder {
	return &recorder{name: name, ref: ref, got: map[int][]telemetry.Report{}}
}

func (p *recorder) Name() string { return p.name }
func (p *recorder) Process(w int, r *telemetry.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got[w] = append(p.got[w], *r)
	p.viaProc++
}
func (p *recorder) Flush(w int) {
	if p.ref == nil {
		return
	}
	p.mu.Lock()
	n := len(p.got[w])
	p.mu.Unlock()
	p.ref.mu.Lock()
	if len(p.ref.got[w]) != n {
		p.lagging++
	}
	p.ref.mu.Unlock()
}

// batchRecorder is a recorder with a batch path.
type batchRecorder struct{ *recorder }

func (p batchRecorder) ProcessBatch(w int, rs []telemetry.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(rs) == 0 || len(rs) > BatchReports {
		p.oversized++
	}
	p.got[w] = append(p.got[w], rs...)
	p.batches++
}

// seqReports returns TR v2.0 datagrams of per reports each, numbered by Seq from first.
func seqReports(t *testing.T, n, per int, first uint32) [][]byte {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	seq := first
	for i := 0; i < n; i++ {
		rs := make([]telemetry.Report, per)
		for j := range rs {
			rs[j] = refReport(seq)
			rs[j].Hops[0].HopLatency = seq // every report distinct beyond its number
			seq++
		}
		b, err := enc.AppendBatch(nil, rs)
		if err != nil {
			t.Skipf("TR v2.0 batch encoder: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// checkSame asserts that the batch recorder was handed exactly the plain recorder's
// reports, in the same order, per worker, and that want reports went through in all.
func checkSame(t *testing.T, plain *recorder, batch batchRecorder, want int) {
	t.Helper()
	total := 0
	for w, rs := range plain.got {
		bs := batch.got[w]
		if len(bs) != len(rs) {
			t.Errorf("worker %d: batch path %d reports, plain %d", w, len(bs), len(rs))
			continue
		}
		for i := range rs {
			if !rs[i].Equal(&bs[i]) {
				t.Fatalf("worker %d report %d differs:\nplain %+v\nbatch %+v", w, i, rs[i], bs[i])
			}
		}
		total += len(rs)
	}
	if total != want {
		t.Errorf("%d reports went through, want %d", total, want)
	}
	if batch.viaProc != 0 || batch.oversized != 0 || batch.lagging != 0 || batch.batches == 0 {
		t.Errorf("batch processor: %d Process calls, %d batches of which %d empty or over %d reports, %d flushes before the batch was handed over",
			batch.viaProc, batch.batches, batch.oversized, BatchReports, batch.lagging)
	}
}

// TestBatchProcessorSocket: a processor with a batch path gets every report the socket
// worker decodes, once, in order, identical to what a plain processor beside it gets, in
// parts of at most BatchReports (16-report datagrams in recvmmsg batches of 8 are 128
// reports a batch), all before the batch's Flush; the counts are unchanged.
func TestBatchProcessorSocket(t *testing.T) {
	plain := newRecorder("plain", nil)
	batch := batchRecorder{newRecorder("batch", plain)}
	c, err := New(testConfig(Listener{Format: "report", Address: "127.0.0.1", Sockets: 2, MaxDatagram: 8192}),
		Deps{Processors: []Processor{plain, batch}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	dgrams := seqReports(t, 40, 16, 1)
	var bs [][]byte
	for i, d := range dgrams { // bad datagrams in between: errors do not disturb the batch
		bs = append(bs, d, garbage[i%len(garbage)])
	}
	for i := 0; i < 3; i++ { // three senders, so that both sockets may see traffic
		send(t, loopback(c.ListenerAddr(0)), bs...)
	}
	testutil.Eventually(t, 10*time.Second, "3×40×16 reports decoded", func() bool { return c.Status().ReportsDecoded >= 3*40*16 })
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Status(); st.ReportsDecoded != 3*40*16 || st.PacketsReceived != 3*80 {
		t.Fatalf("decoded %d reports of %d datagrams, want %d of %d", st.ReportsDecoded, st.PacketsReceived, 3*40*16, 3*80)
	}
	checkSame(t, plain, batch, 3*40*16)
}

// TestBatchProcessorCapture: RunCapture hands reports over the same way.
func TestBatchProcessorCapture(t *testing.T) {
	plain := newRecorder("plain", nil)
	batch := batchRecorder{newRecorder("batch", plain)}
	c, err := New(testConfig(Listener{Format: "report", Address: "127.0.0.1", Port: 32766, MaxDatagram: 8192}),
		Deps{Processors: []Processor{plain, batch}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	pw, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	frame := pcap.UDPFrame{Src: netip.MustParseAddrPort("10.0.3.1:4000"), Dst: netip.MustParseAddrPort("10.0.0.100:32766")}
	// 150 datagrams of 1 to 7 reports: hand-overs fall inside datagrams and between flushes.
	n := 0
	for i := 0; i < 150; i++ {
		per := 1 + i%7
		d := seqReports(t, 1, per, uint32(n+1))[0]
		n += per
		if err := pw.WritePacket(time.Unix(1_700_000_000, int64(i)), pcap.AppendUDPFrame(nil, &frame, d)); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunCapture(rd); err != nil {
		t.Fatal(err)
	}
	if st := c.Status(); st.ReportsDecoded != uint64(n) {
		t.Fatalf("decoded %d reports, want %d", st.ReportsDecoded, n)
	}
	checkSame(t, plain, batch, n)
	if got := plain.got[0][n-1].RecvTime; got != time.Unix(1_700_000_000, 149).UnixNano() {
		t.Errorf("last RecvTime %d: not the capture's time", got)
	}
}

func TestHotPathBatchAllocs(t *testing.T) {
	good := goodReports(t)
	if good == nil {
		t.Skip("TR v2.0 encoder not ready")
	}
	w, _, n := filled(t, wire.InputReport, append(good, garbage...))
	p := &nopBatch{}
	w.setProcessors([]Processor{&nop{}, p})
	if a := testing.AllocsPerRun(100, func() { w.batch(0, n) }); a != 0 {
		t.Errorf("%v allocations per batch, want 0", a)
	}
	if p.n == 0 {
		t.Error("the batch processor saw no hops")
	}
}

// TestDispatcher: the exported dispatch, as BenchmarkPipeline drives it, hands a batch
// processor every report a plain one gets, as worker number 5, all before each EndBatch's
// flush, and counts exactly what the offline decoder finds in the same datagrams.
func TestDispatcher(t *testing.T) {
	plain := newRecorder("plain", nil)
	batch := batchRecorder{newRecorder("batch", plain)}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher(5, dec, wire.InputReport, []Processor{plain, batch})
	var e expect
	for i, b := range seqReports(t, 40, 16, 1) {
		for _, x := range [][]byte{b, garbage[i%len(garbage)]} {
			d.Datagram(x, int64(i+1))
			e.add(t, wire.InputReport, x)
		}
		if i%3 == 2 {
			d.EndBatch()
		}
	}
	d.EndBatch()
	want := DispatchCounts{Packets: e.packets, Bytes: e.bytes, Reports: e.reports, DecodeErrors: e.errTotal}
	if got := d.Counters(); got != want || want.Reports != 40*16 || want.DecodeErrors == 0 {
		t.Fatalf("counters %+v, want %+v (640 reports, some errors)", got, want)
	}
	if len(plain.got) != 1 || len(plain.got[5]) != 40*16 {
		t.Fatalf("plain processor: reports by worker %v, want 640 of worker 5", len(plain.got[5]))
	}
	if got := plain.got[5][17].RecvTime; got != 2 {
		t.Errorf("report 17's RecvTime %d, want 2 (its datagram's)", got)
	}
	checkSame(t, plain, batch, 40*16)
}
