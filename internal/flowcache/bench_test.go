package flowcache

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/telemetry"
)

// The target: a cache update for a 5-hop report at the paper's geometry (2^19 rows ×
// 12 buckets) with about a million flows resident, 0 allocations, ≤ 150 ns. The baselines
// are a random read of the table (independent misses, which the CPU overlaps)
// and a dependent read of a resident flow's row (BaselineRowRead: the miss every update pays
// before it can do anything).

const benchFlows = 1 << 20

var (
	benchSink uint64
	benchOnce sync.Once
	benchFC   *FlowCache
	benchKeys []telemetry.FlowKey
)

func benchKey(i int) telemetry.FlowKey {
	var k telemetry.FlowKey
	var a, b [4]byte
	binary.BigEndian.PutUint32(a[:], 0x0a000000|uint32(i>>4))
	binary.BigEndian.PutUint32(b[:], 0x0b000000|uint32(i*7919)&0xffffff)
	k.SetIPv4(a[:], b[:])
	k.SrcPort, k.DstPort, k.Proto = uint16(1024+i&15), 443, 6
	return k
}

func benchCache(b *testing.B) (*FlowCache, []telemetry.FlowKey) {
	benchOnce.Do(func() {
		c := DefaultConfig()
		c.Rows = 1 << 19
		benchFC = New(c, Deps{})
		benchKeys = make([]telemetry.FlowKey, benchFlows)
		r := report(telemetry.FlowKey{}, 1, hop{1, 100, 10, 50}, hop{2, 200, 20, 60}, hop{3, 300, 30, 70}, hop{4, 400, 40, 80}, hop{5, 500, 50, 90})
		for i := range benchKeys {
			benchKeys[i] = benchKey(i)
			r.Flow, r.RecvTime = benchKeys[i], int64(i+1)
			benchFC.Process(0, r)
		}
		benchFC.Flush(0)
	})
	return benchFC, benchKeys
}

// The keys are read in order (a random walk over a 40 MB slice in the Go heap, with 4 KiB
// pages, would measure this VM's TLB instead of the cache); the rows they hash to are random.

func BenchmarkUpdate5Hops(b *testing.B) {
	f, keys := benchCache(b)
	r := report(telemetry.FlowKey{}, 1, hop{1, 100, 10, 50}, hop{2, 200, 20, 60}, hop{3, 300, 30, 70}, hop{4, 400, 40, 80}, hop{5, 500, 50, 90})
	b.ReportAllocs()
	b.ResetTimer()
	clk := benchclock.Start(b)
	for i := 0; i < b.N; i++ {
		r.Flow = keys[i&(benchFlows-1)]
		r.RecvTime = int64(benchFlows + i)
		f.t.update(r, 1500, 5, f.rings)
	}
	clk.Stop("", 0)
	b.StopTimer()
	st := f.Stats()
	b.ReportMetric(float64(st.Flows), "flows")
	b.ReportMetric(st.BytesPerFlow, "B/flow")
	b.ReportMetric(float64(st.Evictions.Collision), "evictions")
}

// BenchmarkProcess5Hops is the whole processor: histograms (15 bins and the end-to-end one)
// and the update.
func BenchmarkProcess5Hops(b *testing.B) {
	f, keys := benchCache(b)
	r := report(telemetry.FlowKey{}, 1, hop{1, 100, 10, 50}, hop{2, 200, 20, 60}, hop{3, 300, 30, 70}, hop{4, 400, 40, 80}, hop{5, 500, 50, 90})
	b.ReportAllocs()
	b.ResetTimer()
	clk := benchclock.Start(b)
	for i := 0; i < b.N; i++ {
		r.Flow = keys[i&(benchFlows-1)]
		r.RecvTime = int64(benchFlows + i)
		f.Process(0, r)
	}
	clk.Stop("", 0)
}

// BenchmarkBaselineRandomWord reads one random word of the table per iteration; the reads
// are independent, so the CPU overlaps their misses: the table's random-access throughput.
// (It only reads: the table stays intact for the benchmarks that follow.)
func BenchmarkBaselineRandomWord(b *testing.B) {
	f, _ := benchCache(b)
	mem := f.t.mem
	n := uint64(len(mem))
	var acc uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		acc += mem[mix(uint64(i), 0x9e3779b97f4a7c15)%n]
	}
	benchSink = acc
}

// BenchmarkBaselineRowRead reads one word of a resident flow's row header, each read's
// address depending on the previous read: the floor of any update (which must read its row
// first), the cache and TLB miss into the table without the update's work.
func BenchmarkBaselineRowRead(b *testing.B) {
	f, keys := benchCache(b)
	var acc uint64
	b.ReportAllocs()
	b.ResetTimer()
	clk := benchclock.Start(b)
	defer clk.Stop("", 0)
	for i := 0; i < b.N; i++ {
		k := keys[i&(benchFlows-1)]
		k.SrcPort += uint16(acc & 1) // a data dependency on the previous read
		h := telemetry.FlowHash(&k)
		acc += f.t.mem[f.t.rowOff(h&f.t.mask)+1]
	}
	benchSink = acc
}

// BenchmarkUpdate5HopsHot updates 256 resident flows over and over at the same geometry:
// their rows stay in the cache, so this is the update's own cost without DRAM.
func BenchmarkUpdate5HopsHot(b *testing.B) {
	f, keys := benchCache(b)
	r := report(telemetry.FlowKey{}, 1, hop{1, 100, 10, 50}, hop{2, 200, 20, 60}, hop{3, 300, 30, 70}, hop{4, 400, 40, 80}, hop{5, 500, 50, 90})
	b.ReportAllocs()
	b.ResetTimer()
	clk := benchclock.Start(b)
	for i := 0; i < b.N; i++ {
		r.Flow = keys[i&255]
		r.RecvTime = int64(benchFlows + i)
		f.t.update(r, 1500, 5, f.rings)
	}
	clk.Stop("", 0)
}

// BenchmarkProcessBatch5Hops is BenchmarkProcess5Hops handed over 64 reports at a time with
// one receive time per batch, as an ingest worker does (ProcessBatch; Process per report
// where there is none, so that the same benchmark measures a tree without it): over the
// million resident flows (flows=1M) and over 256 flows whose rows stay in the cache (hot).
func BenchmarkProcessBatch5Hops(b *testing.B) {
	for _, tc := range []struct {
		name string
		mask int
	}{{"flows=1M", benchFlows - 1}, {"hot", 255}} {
		b.Run(tc.name, func(b *testing.B) {
			f, keys := benchCache(b)
			tmpl := report(telemetry.FlowKey{}, 1, hop{1, 100, 10, 50}, hop{2, 200, 20, 60}, hop{3, 300, 30, 70}, hop{4, 400, 40, 80}, hop{5, 500, 50, 90})
			const batch = 64
			rs := make([]telemetry.Report, batch)
			for j := range rs {
				rs[j] = *tmpl
			}
			bp, _ := any(f).(interface {
				ProcessBatch(int, []telemetry.Report)
			})
			b.ReportAllocs()
			clk := benchclock.Start(b)
			n := 0
			for i := 0; b.Loop(); i += batch {
				for j := range rs {
					rs[j].Flow = keys[(i+j)&tc.mask]
					rs[j].RecvTime = int64(benchFlows + i/batch)
				}
				if bp != nil {
					bp.ProcessBatch(0, rs)
				} else {
					for j := range rs {
						f.Process(0, &rs[j])
					}
				}
				f.Flush(0)
				n += batch
			}
			clk.Stop("report", n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/report")
		})
	}
}
