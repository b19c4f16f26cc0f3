//go:build unix

package group

import (
	"bytes"
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
//
// BenchmarkInletCodecs is BenchmarkInlet with each group.compression but the default, for
// what each costs; BenchmarkFrameCodecs the bytes each makes of a full frame.
func BenchmarkInlet(b *testing.B) { benchInlet(b, "lz4") }

func BenchmarkInletCodecs(b *testing.B) {
	for _, c := range []string{"none", "snappy", "zstd"} {
		b.Run(c, func(b *testing.B) { benchInlet(b, c) })
	}
}

func benchInlet(b *testing.B, compression string) {
	k := kfaketest.StartTopics(b, 3, 12, "intake.raw")
	cfg := DefaultConfig()
	cfg.Role, cfg.Brokers, cfg.Name, cfg.Compression = RoleInlet, k.Brokers, "bench", compression
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

func BenchmarkFrameCodecs(b *testing.B) {
	rs := benchReports()
	frame := beginFrame(nil)
	var kb partition.KeyBuf
	n := 0
	for r := rs[0]; len(frame) < frameMaxBytes; n++ { // one partition's share of BenchmarkInlet's reports
		r.Flow.SrcPort, r.Seq = uint16(1000+n*12%benchFlows), uint32(n*12)
		frame = appendEntry(frame, partition.ReportKey(&kb, &r), &r)
	}
	endFrame(frame, n)
	for _, c := range []struct {
		name string
		c    kgo.Compressor
	}{{"lz4", mustCompressor(kgo.Lz4Compression())}, {"snappy", mustCompressor(kgo.SnappyCompression())}, {"zstd", mustCompressor(kgo.ZstdCompression())}} {
		b.Run(c.name, func(b *testing.B) {
			var dst bytes.Buffer
			var out []byte
			for range b.N {
				dst.Reset()
				out, _ = c.c.Compress(&dst, frame)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/report")
			b.ReportMetric(float64(len(out))/float64(n), "B/report")
			b.ReportMetric(float64(len(frame))/float64(n), "raw-B/report")
		})
	}
}

func mustCompressor(c kgo.CompressionCodec) kgo.Compressor {
	z, err := kgo.DefaultCompressor(c)
	if err != nil {
		panic(err)
	}
	return z
}
