//go:build unix

package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// BenchmarkInlet is the inlet's CPU per report produced (encoding, partitioning, framing,
// compression, the acknowledgements) against 3 brokers in their own process: cpu-ns/report
// is this process's CPU time over b.N reports. The report is the one a worker has just
// decoded (in cache), its flow one of benchFlows, its 5 hops of 4 fields the same in every
// report. BenchmarkBareProducer is franz-go alone producing each report's binary form as a
// record of its own to the same partitions with the same options, as a producer without
// frames would, for the ratio.
//
// BenchmarkInletGen and BenchmarkBareProducerGen are the same with the reports a fabric
// sends: intake gen's default stream (TR v2.0, 5 hops of 8 fields with both timestamps,
// every value drawn anew for each report) over benchGenFlows flows, decoded as a listener
// decodes it. Each report is copied into the worker's report first, as the decoder writes
// it; that copy's CPU, measured alone in the same run, is not counted. Where the brokers,
// which share this machine, fall behind, the benchmark waits for them rather than drop.
//
// BenchmarkInletCodecs is BenchmarkInlet with each group.compression but the default, for
// what each costs; BenchmarkFrameCodecs the bytes each makes of a full frame.
func BenchmarkInlet(b *testing.B) {
	r := benchReports()[0]
	benchInlet(b, DefaultConfig().Compression, func(i int) *telemetry.Report {
		r.Flow.SrcPort, r.Seq = uint16(1000+i%benchFlows), uint32(i)
		return &r
	})
}

func BenchmarkInletCodecs(b *testing.B) {
	for _, c := range []string{"none", "lz4", "snappy", "zstd"} {
		if c == DefaultConfig().Compression {
			continue
		}
		b.Run(c, func(b *testing.B) {
			r := benchReports()[0]
			benchInlet(b, c, func(i int) *telemetry.Report {
				r.Flow.SrcPort, r.Seq = uint16(1000+i%benchFlows), uint32(i)
				return &r
			})
		})
	}
}

func BenchmarkInletGen(b *testing.B) {
	rs := genStream(b)
	// What differs between the reports, side by side (a Report is 3.6 KiB, mostly unused
	// room: copying from 8,192 of them would cost more than the inlet).
	type varying struct {
		seq, node uint32
		recv      int64
		its       uint64
		flow      telemetry.FlowKey
		hops      [5]telemetry.Hop
	}
	vs := make([]varying, len(rs))
	for i, r := range rs {
		vs[i] = varying{r.Seq, r.NodeID, r.RecvTime, r.IngressTS, r.Flow, [5]telemetry.Hop(r.Hops[:5])}
	}
	for _, c := range []string{"none", "lz4", "snappy", "zstd"} {
		b.Run(c, func(b *testing.B) {
			hot := rs[0]
			benchInlet(b, c, func(i int) *telemetry.Report {
				v := &vs[i%len(vs)]
				hot.Seq, hot.NodeID, hot.RecvTime, hot.IngressTS, hot.Flow = v.seq, v.node, v.recv, v.its, v.flow
				copy(hot.Hops[:5], v.hops[:])
				return &hot
			})
		})
	}
}

// BenchmarkInletFloor is BenchmarkInletGen/snappy with each report's binary form written
// beforehand: each report's owner key, its partition and its frame are as in Process, but
// the form is copied in, not written from the report. What is left is the least this inlet
// costs a report beyond writing the form: the key, the frames, snappy and the client.
func BenchmarkInletFloor(b *testing.B) {
	rs := genStream(b)
	forms := make([][]byte, len(rs))
	for i := range rs {
		forms[i] = appendReport(nil, &rs[i])
	}
	benchInletStep(b, "snappy", func(in *Inlet, i int) {
		// Process, line for line, but for the form's copy: Process is left as it is
		// rather than split for this benchmark (its figure moves with its code's layout).
		r := &rs[i%len(rs)]
		w := &in.workers[0]
		w.offered++
		key := partition.ReportKey(&w.kb, r)
		part := partition.Hash(key) % uint32(in.parts)
		w.mu.Lock()
		f := &w.frames[part]
		if f.rec == nil {
			f.rec = in.pool.Get().(*kgo.Record)
			f.rec.Value = beginFrame(f.rec.Value)
			f.since = time.Now()
		}
		v := append(f.rec.Value, byte(len(key)))
		v = append(v, key...)
		v = binary.BigEndian.AppendUint16(v, uint16(len(forms[i%len(rs)])))
		f.rec.Value = append(v, forms[i%len(rs)]...)
		if f.count++; f.count == frameMaxReports || len(f.rec.Value) >= frameMaxBytes {
			in.send(int32(part), f)
		}
		w.mu.Unlock()
	}, 0)
}

// benchInlet runs b.N reports from feed (report i) through an inlet with compression c.
// feed's own CPU, measured alone first, is not counted.
func benchInlet(b *testing.B, compression string, feed func(i int) *telemetry.Report) {
	f0 := benchclock.Process()
	for i := range b.N {
		feed(i) // it writes the worker's report: not a loop the compiler drops
	}
	fed := benchclock.Process() - f0
	benchInletStep(b, compression, func(in *Inlet, i int) { in.Process(0, feed(i)) }, fed)
}

// benchInletStep runs step for i in [0, b.N) with an inlet of compression c, step i handing
// it report i, and reports its CPU a report less fed (ns of CPU spent outside the inlet).
func benchInletStep(b *testing.B, compression string, step func(in *Inlet, i int), fed int64) {
	k := kfaketest.StartTopics(b, 3, 12, "intake.raw")
	cfg := DefaultConfig()
	cfg.Role, cfg.Brokers, cfg.Name, cfg.Compression = RoleInlet, k.Brokers, "bench", compression
	in := NewInlet(cfg, Deps{Workers: 1})
	if err := in.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer in.Stop(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	c0 := benchclock.Process()
	for i := range b.N {
		step(in, i)
		if i%256 == 255 {
			in.Flush(0)
			// The brokers share this machine's two cores: where they fall behind, wait for
			// them (as an inlet waits for brokers elsewhere) rather than drop.
			for in.inflight.Load() > int64(in.cfg.Buffered/2) {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in.flushOlder(time.Now().Add(time.Hour))
	if err := in.cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(benchclock.Process()-c0-fed)/float64(b.N), "cpu-ns/report")
	b.StopTimer()
	if st := in.Status(); st.Produced != uint64(b.N) || st.Dropped+st.Failed != 0 {
		b.Fatalf("produced %d of %d (%d dropped, %d failed)", st.Produced, b.N, st.Dropped, st.Failed)
	}
}

func BenchmarkBareProducer(b *testing.B) { benchBare(b, benchReports()) }

func BenchmarkBareProducerGen(b *testing.B) { benchBare(b, genStream(b)) }

// benchBare produces each of rs's binary form as a record of its own, round and round, with
// the inlet's default compression.
func benchBare(b *testing.B, rs []telemetry.Report) {
	k := kfaketest.StartTopics(b, 3, 12, "intake.raw")
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ProducerBatchCompression(compression[DefaultConfig().Compression]),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
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
	c0 := benchclock.Process()
	for i := range b.N {
		j := i % len(rs)
		cl.Produce(context.Background(), &kgo.Record{Topic: "intake.raw", Partition: parts[j], Key: keys[j], Value: vals[j]}, done)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(benchclock.Process()-c0)/float64(b.N), "cpu-ns/report")
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
	// And one partition's share of BenchmarkInletGen's.
	gs := genStream(b)
	gframe := beginFrame(nil)
	gn := 0
	for i := range gs {
		if k := partition.ReportKey(&kb, &gs[i]); partition.Hash(k)%12 == 0 && len(gframe) < frameMaxBytes {
			gframe = appendEntry(gframe, k, &gs[i])
			gn++
		}
	}
	endFrame(gframe, gn)
	for _, c := range []struct {
		name string
		c    kgo.Compressor
	}{{"lz4", mustCompressor(kgo.Lz4Compression())}, {"snappy", mustCompressor(kgo.SnappyCompression())}, {"zstd", mustCompressor(kgo.ZstdCompression())}} {
		for _, f := range []struct {
			name  string
			frame []byte
			n     int
		}{{"", frame, n}, {"/gen", gframe, gn}} {
			b.Run(c.name+f.name, func(b *testing.B) {
				var dst bytes.Buffer
				var out []byte
				for range b.N {
					dst.Reset()
					out, _ = c.c.Compress(&dst, f.frame)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*f.n), "ns/report")
				b.ReportMetric(float64(len(out))/float64(f.n), "B/report")
				b.ReportMetric(float64(len(f.frame))/float64(f.n), "raw-B/report")
			})
		}
	}
}

func mustCompressor(c kgo.CompressionCodec) kgo.Compressor {
	z, err := kgo.DefaultCompressor(c)
	if err != nil {
		panic(err)
	}
	return z
}
