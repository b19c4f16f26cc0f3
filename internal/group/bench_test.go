//go:build unix

package group

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/partition"
)

// cpuNs is the process's user and system CPU time so far.
func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkInlet is the inlet's CPU per report produced (encoding, partitioning, framing,
// lz4, the acknowledgements) against 3 brokers in their own process: cpu-ns/report is this
// process's CPU time over b.N reports. The report is the one a worker has just decoded (in
// cache), its flow one of benchFlows. BenchmarkBareProducer is franz-go alone producing
// each report's binary form as a record of its own to the same partitions with the same
// options, as a producer without frames would, for the ratio.
func BenchmarkInlet(b *testing.B) {
	k := kfaketest.StartTopics(b, 3, 12, "intake.raw")
	cfg := DefaultConfig()
	cfg.Role, cfg.Brokers, cfg.Name = RoleInlet, k.Brokers, "bench"
	in := NewInlet(cfg, Deps{Workers: 1})
	if err := in.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer in.Stop(context.Background())
	r := benchReports()[0]
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuNs()
	for i := range b.N {
		r.Flow.SrcPort, r.Seq = uint16(1000+i%benchFlows), uint32(i)
		in.Process(0, &r)
		if i%256 == 255 {
			in.Flush(0)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in.flushOlder(time.Now().Add(time.Hour))
	if err := in.cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuNs()-c0)/float64(b.N), "cpu-ns/report")
	b.StopTimer()
	if st := in.Status(); st.Produced != uint64(b.N) || st.Dropped+st.Failed != 0 {
		b.Fatalf("produced %d of %d (%d dropped, %d failed)", st.Produced, b.N, st.Dropped, st.Failed)
	}
}

func BenchmarkBareProducer(b *testing.B) {
	k := kfaketest.StartTopics(b, 3, 12, "intake.raw")
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rs := benchReports()
	keys, vals, parts := make([][]byte, len(rs)), make([][]byte, len(rs)), make([]int32, len(rs))
	for i := range rs {
		var kb partition.KeyBuf
		keys[i] = append([]byte(nil), partition.ReportKey(&kb, &rs[i])...)
		vals[i] = appendReport(nil, &rs[i])
		parts[i] = int32(partition.Hash(keys[i]) % 12)
	}
	var failed int
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed++
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuNs()
	for i := range b.N {
		j := i % benchFlows
		cl.Produce(context.Background(), &kgo.Record{Topic: "intake.raw", Partition: parts[j], Key: keys[j], Value: vals[j]}, done)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuNs()-c0)/float64(b.N), "cpu-ns/report")
	if failed > 0 {
		b.Fatalf("%d failed", failed)
	}
}
