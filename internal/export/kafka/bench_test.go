package kafka

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/telemetry"
)

func benchReport() telemetry.Report {
	var r telemetry.Report
	r.Format, r.NodeID, r.Seq, r.RecvTime = telemetry.FormatTR20, 7, 1, 1e18
	r.Has |= telemetry.HasFlow
	r.Flow = telemetry.FlowKey{Src: netip.MustParseAddr("10.0.0.1").As16(), Dst: netip.MustParseAddr("10.0.0.2").As16(),
		SrcPort: 1000, DstPort: 80, Proto: 6}
	r.NHops = 5
	for h := range 5 {
		r.Hops[h] = telemetry.Hop{NodeID: uint32(h + 1), HopLatency: 300, QueueOccupancy: 20, TxUtil: 30, EgressTS: 5}
	}
	return r
}

// drained is a sink whose queues a goroutine empties (the sender's side left out): the
// benchmarks below measure the offering side only.
func drained(b *testing.B, reports string) (*Sink, *Reports, func()) {
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Reports, cfg.Queue = []string{"127.0.0.1:1"}, reports, 1<<16
	s, err := New(cfg, Deps{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	p, _ := s.Reports().(*Reports) // nil with reports off
	go func() {
		for {
			n := 0
			for _, r := range s.rings {
				n += r.drain(-1, func(*kafkaReportItem) {})
			}
			select {
			case <-s.events:
			case <-done:
				return
			default:
				if n == 0 {
					runtime.Gosched()
				}
			}
		}
	}()
	return s, p, func() { close(done) }
}

// BenchmarkKafkaProcess is the ingest worker's CPU per report exported (reports: full): the
// copy into the worker's ring. Target: ≤ 100 ns, no allocation. The ring (4096 reports) is
// emptied every 4096 reports by moving its head, so that every report is queued (none
// dropped) and the ring's memory is reused as the sender's reading would let it be.
func BenchmarkKafkaProcess(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Reports, cfg.Queue = []string{"127.0.0.1:1"}, "full", 4096
	s, err := New(cfg, Deps{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	p := s.Reports().(*Reports)
	q := s.rings[0]
	r := benchReport()
	b.ReportAllocs()
	clk := benchclock.Start(b)
	i := 0
	for b.Loop() {
		p.Process(0, &r)
		if i++; i&4095 == 0 {
			q.head.Store(q.tail.Load())
		}
	}
	clk.Stop("", 0)
	if d := s.droppedOf(kafkaReport, kafkaDropQueue); d != 0 {
		b.Fatalf("%d dropped", d)
	}
}

// BenchmarkKafkaProcessConcurrent is BenchmarkKafkaProcess with a goroutine emptying the
// ring as the sender does (on another core when one is free): reports it had no room for
// are dropped (dropped/op), which costs less than queueing.
func BenchmarkKafkaProcessConcurrent(b *testing.B) {
	s, p, stop := drained(b, "full")
	defer stop()
	r := benchReport()
	b.ReportAllocs()
	clk := benchclock.Start(b)
	for b.Loop() {
		p.Process(0, &r)
	}
	clk.Stop("", 0)
	d := s.droppedOf(kafkaReport, kafkaDropQueue)
	b.ReportMetric(float64(d)/float64(b.N), "dropped/op")
}

// BenchmarkKafkaProcessSampled is the worker's CPU per report with reports: sampled (1 in
// 100): what a report not exported costs.
func BenchmarkKafkaProcessSampled(b *testing.B) {
	_, p, stop := drained(b, "sampled")
	defer stop()
	r := benchReport()
	b.ReportAllocs()
	clk := benchclock.Start(b)
	for b.Loop() {
		p.Process(0, &r)
	}
	clk.Stop("", 0)
}

// BenchmarkKafkaOfferEvent is the export pipeline's CPU per event offered.
func BenchmarkKafkaOfferEvent(b *testing.B) {
	s, _, stop := drained(b, "off")
	defer stop()
	e := event.Event{Kind: event.KindChange, Measurement: event.QueueOccupancy, Key: event.Key{Switch: 3}}
	b.ReportAllocs()
	for b.Loop() {
		s.Offer(&e)
	}
}

// BenchmarkKafkaEncodeReport is the sender's CPU per report: the protobuf message, its key
// and value (the producer's own work, batching and compression, is not in it).
func BenchmarkKafkaEncodeReport(b *testing.B) {
	r := benchReport()
	benchEncode(b, &r)
}

// BenchmarkKafkaEncodeDTA is BenchmarkKafkaEncodeReport for a DTA Key-Write (a 13-byte
// 5-tuple key, 4 bytes of data).
func BenchmarkKafkaEncodeDTA(b *testing.B) {
	r := telemetry.Report{Format: telemetry.FormatDTA, RecvTime: 1e18,
		DTA: telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 2, KeyLen: 13, DataLen: 4}}
	benchEncode(b, &r)
}

func benchEncode(b *testing.B, r *telemetry.Report) {
	var it kafkaReportItem
	fillReportItem(&it, r)
	s := &Sink{}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = s.encodeReport(buf, &it)
	}
}

// TestReportWire: the reports' hand-written protobuf is proto.Marshal's, byte for byte,
// for reports with and without a flow, IPv4 and IPv6, no hop to more than kafkapb.MaxHops,
// every DTA primitive and INT-label exports of 0 to 12 items.
func TestReportWire(t *testing.T) {
	var w reportWire
	check := func(name string, r *telemetry.Report) {
		t.Helper()
		var it kafkaReportItem
		fillReportItem(&it, r)
		want, err := proto.Marshal(&kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Report{Report: ReportMessage(&it)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := w.appendReportMessage(nil, &it); !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %x\nwant %x", name, got, want)
		}
	}
	for i, d := range []telemetry.DTA{
		{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 3, KeyLen: 16, DataLen: 4, Immediate: true},
		{Op: telemetry.DTAKeyIncrement, HeaderLen: 3, Seq: 200, Retransmit: true, Redundancy: 1, KeyLen: 4, Counter: 1 << 40},
		{Op: telemetry.DTAPostcard, HeaderLen: 2, KeyLen: 13, Hop: 5, DataLen: 4},
		{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 1 << 31, DataLen: 32},
	} {
		r := telemetry.Report{Format: telemetry.FormatDTA, RecvTime: int64(i), DTA: d}
		for j := range r.DTA.KeyLen {
			r.DTA.Key[j] = byte(j + 1)
		}
		for j := range r.DTA.DataLen {
			r.DTA.Data[j] = byte(0xf0 + j)
		}
		check(r.DTA.Op.String(), &r)
	}
	for _, n := range []int{0, 1, 5, 12} {
		r := telemetry.Report{Format: telemetry.FormatLabel, RecvTime: 9, LabelSpecific: n == 5, NLabels: uint8(n)}
		for j := range n {
			r.Labels[j] = telemetry.LabelItem{SwitchID: uint8(j), IngressPort: 1, EgressPort: uint8(j), IngressTS: 1 << 47,
				EgressTS: uint64(j), EnqTS: 7, EnqQDepth: 1 << 23, DeqTimedelta: uint32(j) * 100, DeqQDepth: 3}
		}
		check(fmt.Sprintf("int-label, %d items", n), &r)
	}
	for i, nh := range []int{0, 1, 5, 8, 12} {
		r := benchReport()
		r.NHops = uint8(nh)
		for h := range nh {
			r.Hops[h] = telemetry.Hop{NodeID: uint32(h), IngressPort: uint32(i), EgressPort: 1 << 20, HopLatency: uint32(h * 1000),
				QueueID: uint16(h), QueueOccupancy: uint32(i), TxUtil: 7, EgressTS: uint64(h) << 40}
		}
		switch i {
		case 1:
			r.Has &^= telemetry.HasFlow
		case 2:
			r.Flow.IPv6 = true
			r.Flow.Src = netip.MustParseAddr("2001:db8::1").As16()
		case 3:
			r.Format, r.RecvTime, r.Seq = 0, 0, 0
		}
		check(fmt.Sprintf("report %d", i), &r)
	}
	// Values of every size: gen's stream (8 fields a hop, timestamps, values drawn anew),
	// then each report with its values at their largest, and an IPv4 flow whose addresses
	// are not IPv4-mapped (16 bytes, as FlowKeyMessage writes them).
	rs, err := gen.DefaultDecoded(0, 256)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		check(fmt.Sprintf("gen report %d", i), &rs[i])
	}
	r := rs[0]
	for n := range uint8(13) { // Reports of 0 to 12 hops: their lengths take 1 byte, then 2
		r.NHops = n
		check(fmt.Sprintf("gen report of %d hops", n), &r)
	}
	r.NHops, r.RecvTime, r.NodeID, r.Seq, r.HWID, r.IngressTS = 12, -1, ^uint32(0), ^uint32(0), 0xff, ^uint64(0)
	for h := range r.NHops {
		r.Hops[h] = telemetry.Hop{NodeID: ^uint32(0), IngressPort: ^uint32(0), EgressPort: ^uint32(0), HopLatency: ^uint32(0),
			QueueID: ^uint16(0), QueueOccupancy: ^uint32(0), TxUtil: ^uint32(0), EgressTS: ^uint64(0)}
	}
	check("largest values", &r)
	r.Flow.Src, r.Flow.Dst = [16]byte{1, 2, 3}, [16]byte{15: 9}
	check("unmapped addresses", &r)
}
