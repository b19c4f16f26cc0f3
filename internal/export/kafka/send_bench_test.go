//go:build unix

package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/telemetry"
)

// BenchmarkKafkaSend is the whole export's CPU per report with reports: full, against 3
// brokers in their own process: the worker's copy into its ring, the sender's encoding,
// the producer's batching and compression, and the acknowledgements (cpu-ns/report, this
// process's CPU over b.N reports), for each compression. The reports are intake gen's
// default stream (TR v2.0, 5 hops of 8 fields with both timestamps, every value drawn anew
// for each report) decoded as a listener decodes it. Where the brokers, which share this
// machine, fall behind, the benchmark waits for them rather than drop.
func BenchmarkKafkaSend(b *testing.B) {
	rs, err := gen.DefaultDecoded(0, 1024)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []string{"none", "snappy", "lz4", "zstd"} {
		b.Run(c, func(b *testing.B) { benchSend(b, c, rs) })
	}
}

func benchSend(b *testing.B, compression string, rs []telemetry.Report) {
	k := kfaketest.StartTopics(b, 3, 12, kfaketest.Topics...)
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Reports, cfg.Compression = k.Brokers, "full", compression
	s, err := New(cfg, Deps{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Stop(context.Background())
	p := s.Reports().(*Reports)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := benchclock.Process()
	for i := range b.N {
		p.Process(0, &rs[i%len(rs)])
		for i%256 == 255 && s.queued()+int(s.inFlight()) > cfg.Queue/2 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	for deadline := time.Now().Add(time.Minute); s.counts(kafkaReport) < uint64(b.N); {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d reports delivered", s.counts(kafkaReport), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(benchclock.Process()-c0)/float64(b.N), "cpu-ns/report")
	b.StopTimer()
	if c := s.Counts(); c.Sent["report"] != uint64(b.N) || c.Offered["report"] != uint64(b.N) {
		b.Fatalf("offered %d, sent %d of %d (dropped %v)", c.Offered["report"], c.Sent["report"], b.N, c.Dropped["report"])
	}
}

// counts is how many of kind's records the brokers acknowledged or the producer dropped.
func (s *Sink) counts(kind int) uint64 {
	n := s.sent[kind].Load()
	for i := range s.dropped[kind] {
		n += s.dropped[kind][i].Load()
	}
	return n
}
