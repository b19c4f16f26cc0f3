package collector

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// BenchmarkPipeline is a worker's cost per report without the socket: decode of the
// generator's stream (TR v2.0, one INT-MD report of 5 hops x 8 fields per datagram) and the
// processors serve builds, each alone and all together, through the workers' own dispatch
// (ingest.Dispatcher), ended as a batch every 64 datagrams as a recvmmsg batch is. The ratio
// of "all" to "decode" is what processing adds to decoding; bench ingest puts the socket
// around it. vary=1 draws every value anew (a change event nearly everywhere), vary=0.01
// changes a flow hop's values in one report of a hundred (the steady state of
// docs/performance.md). cpu-ns/report is the worker thread's CPU time, the figure to compare on a shared machine.
func BenchmarkPipeline(b *testing.B) {
	for _, flows := range []int{64, 4096} {
		for _, vary := range []float64{1, 0.01} {
			b.Run(fmt.Sprintf("flows=%d/vary=%g", flows, vary), func(b *testing.B) {
				benchPipeline(b, pipelineCase{flows: flows, vary: vary}, []string{"decode", "detect", "flowcache", "dta", "label", "all"})
			})
		}
	}
}

// BenchmarkPipelineMillion is BenchmarkPipeline with a million flows resident: the flow
// cache at the SmartNIC paper's geometry (2^19 rows x 12 buckets), the detector sized to
// hold them (max_flows 2^20), every report of another flow in turn (keys in order, rows and
// shards at random), after the untimed lap has put all of them in. A processor ahead of the
// others sets each report's key (rekey).
func BenchmarkPipelineMillion(b *testing.B) {
	benchPipeline(b, pipelineCase{flows: 4096, vary: 0.01, keys: 1 << 20}, []string{"decode", "detect", "flowcache", "all"})
}

type pipelineCase struct {
	flows int
	vary  float64
	keys  int // > 0: each report's flow key is replaced by key i mod keys (a power of two)
}

func benchPipeline(b *testing.B, pc pipelineCase, stages []string) {
	gcfg := gen.DefaultConfig()
	gcfg.Model, gcfg.Vary, gcfg.Flows = gen.ModelDraw, pc.vary, pc.flows // values drawn anew for a fraction vary of the hops
	g, err := gen.New(gcfg)
	if err != nil {
		b.Fatal(err)
	}
	var dgrams [][]byte
	if err := g.Walk(4096, func(_ uint64, d []byte, _ []telemetry.Report) error {
		dgrams = append(dgrams, append([]byte(nil), d...))
		return nil
	}, nil); err != nil {
		b.Fatal(err)
	}
	dec, err := wire.NewDecoder(g.WireConfig())
	if err != nil {
		b.Fatal(err)
	}
	var keys []telemetry.FlowKey
	if pc.keys > 0 {
		keys = make([]telemetry.FlowKey, pc.keys)
		for i := range keys {
			keys[i] = pipelineKey(i)
		}
	}
	for _, only := range stages {
		b.Run(only, func(b *testing.B) {
			cfg := config.Default()
			cfg.HTTP.Address = ""
			cfg.DTA.DataDir = b.TempDir()
			if only != "all" {
				cfg.Detect.Enabled = only == "detect"
				cfg.FlowCache.Enabled = only == "flowcache"
				cfg.DTA.Enabled = only == "dta"
				cfg.Label.Enabled = only == "label"
			}
			if pc.keys > 0 {
				cfg.FlowCache.Rows = 1 << 19
				cfg.Detect.MaxFlows = 1 << 20
			}
			cfg.Listeners = []ingest.Listener{{Format: "report", Address: "127.0.0.1", Sockets: 1}}
			// Warnings only: the listener's notices would break the benchmark's result lines.
			quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			c, err := New(cfg, Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			procs := c.Receiver.Processors()
			if only != "decode" && len(procs) == 0 {
				b.Skipf("no %s processor", only)
			}
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer c.Stop(context.Background())
			if keys != nil {
				procs = append([]ingest.Processor{&rekey{keys: keys}}, procs...)
			}
			d := ingest.NewDispatcher(0, dec, wire.InputReport, procs)
			run := func(i int) {
				// One receive time per batch of 64, as recvmmsg gives a batch, 200 µs
				// apart: 320,000 reports/s, about what a worker of the 2-core development VM
				// drains (an LRU list moves a key once a tick of about 1 ms: detect).
				d.Datagram(dgrams[i%len(dgrams)], int64(i/64+1)*200_000)
				if (i+1)%64 == 0 {
					d.EndBatch()
				}
			}
			// An untimed lap of the stream (of every key, with keys) first: the first
			// reports of a flow make new keys and fault in the tables' pages, which the
			// steady state does not.
			i := 0
			for ; i < max(len(dgrams), pc.keys); i++ {
				run(i)
			}
			d.EndBatch()
			before := d.Counters().Reports
			b.ReportAllocs()
			clk := benchclock.Start(b)
			for b.Loop() {
				run(i)
				i++
			}
			d.EndBatch()
			reports := int(d.Counters().Reports - before)
			clk.Stop("report", reports)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reports), "ns/report")
		})
	}
}

// pipelineKey is flow key i of BenchmarkPipelineMillion: IPv4, addresses and ports spread
// over i.
func pipelineKey(i int) telemetry.FlowKey {
	var k telemetry.FlowKey
	var s, d [4]byte
	binary.BigEndian.PutUint32(s[:], 0x0a000000|uint32(i>>4))
	binary.BigEndian.PutUint32(d[:], 0x0b000000|uint32(i*7919)&0xffffff)
	k.SetIPv4(s[:], d[:])
	k.SrcPort, k.DstPort, k.Proto = uint16(1024+i&15), 443, 6
	return k
}

// rekey gives each report flow key i mod len(keys) in turn (len(keys) a power of two). It has
// no batch path, so the dispatch calls it as each report is decoded, before any processor
// sees the report.
type rekey struct {
	keys []telemetry.FlowKey
	n    int
}

func (p *rekey) Name() string { return "rekey" }
func (p *rekey) Process(_ int, r *telemetry.Report) {
	r.Flow = p.keys[p.n&(len(p.keys)-1)]
	p.n++
}
