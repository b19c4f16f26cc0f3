package bench

import (
	"context"
	"net/netip"
	"runtime"
	"testing"

	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/telemetry"
)

// BenchmarkStateBytes measures INTCollector §V-B3's memory cost on intake: the heap the
// detector and the flow cache hold for a million flows (the detector's flow table sized for
// 1,000,000 flows and filled with that many 6-hop flows; a flow cache of 2^17 rows of 8
// buckets, 6 hops each, filled likewise: its table is mapped outside the Go heap and counted
// at its size), in bytes per flow and per key (a 6-hop flow is 8
// of the paper's keys: its path, its latency and 6 hop latencies). The paper's figure is
// 21 bytes per flow-latency key (13-byte 5-tuple, 8-byte value). Run alone: it holds about
// a gigabyte.
//
//	go test ./internal/bench -run XXX -bench StateBytes -benchtime 1x
func BenchmarkStateBytes(b *testing.B) {
	const flows = 1_000_000
	var r telemetry.Report
	r.Format, r.Has, r.NHops, r.RecvTime = telemetry.FormatTR20, telemetry.HasFlow, 6, 1
	r.Flow.DstPort, r.Flow.SrcPort, r.Flow.Proto = 80, 1000, 17
	for h := range 6 {
		r.Hops[h].NodeID, r.Hops[h].HopLatency = uint32(h+1), 100
		r.Hops[h].Fields = telemetry.FNodeID | telemetry.FHopLatency
	}
	flow := func(i int) *telemetry.Report { // flow i: 10.x.y.z > 10.0.0.1
		r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), netip.AddrFrom4([4]byte{10, 0, 0, 1}))
		return &r
	}
	// offHeap is memory the component maps outside the Go heap (the flow cache's table).
	measure := func(name string, keys, offHeap int, build func() func(*telemetry.Report)) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				before := heap()
				process := build()
				for i := range flows {
					process(flow(i))
				}
				used := float64(heap()-before) + float64(offHeap)
				b.ReportMetric(used/flows, "B/flow")
				b.ReportMetric(used/flows/float64(keys), "B/key")
				b.ReportMetric(used/1e6, "MB/1M-flows")
				runtime.KeepAlive(process)
			}
		})
	}
	measure("detect", 8, 0, func() func(*telemetry.Report) {
		cfg := detect.DefaultConfig()
		cfg.MaxFlows, cfg.MaxKeys = flows, 64
		d := detect.New(cfg, detect.Deps{Workers: 1})
		d.Start(context.Background())
		return func(r *telemetry.Report) { d.Process(0, r) }
	})
	fc := flowcache.DefaultConfig()
	fc.Rows, fc.Buckets, fc.MaxHops = 1<<17, 8, 6
	measure("flowcache", 8, fc.Bytes(), func() func(*telemetry.Report) {
		f := flowcache.New(fc, flowcache.Deps{Workers: 1})
		f.Start(context.Background())
		return func(r *telemetry.Report) { f.Process(0, r) }
	})
}

// heap is the heap in use after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
