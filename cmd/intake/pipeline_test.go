package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// BenchmarkPipeline is a worker's cost per report without the socket: decode of the
// generator's stream (TR v2.0, one INT-MD report of 5 hops x 8 fields per datagram) and the
// processors serve builds, each alone and all together, handed over and flushed every 64
// datagrams as a recvmmsg batch is (pipeline.dispatch mirrors the ingest worker). The ratio
// of "all" to "decode" is what processing adds to decoding; bench ingest puts the socket
// around it. vary=1 draws every value anew (a change event nearly everywhere), vary=0.01
// changes a flow hop's values in one report of a hundred (the steady state).
// cpu-ns/report is the worker thread's CPU time, the figure to compare on a shared machine.
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
// shards at random), after the untimed lap has put all of them in.
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
			c, err := collector.New(cfg, collector.Options{Logger: quiet})
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
			p := newPipeline(procs)
			run := func(i int) {
				// One receive time per batch of 64, as recvmmsg gives a batch, 200 µs
				// apart: 320,000 reports/s, about what a worker of the 2-core development VM
				// drains (an LRU list moves a key once a tick of about 1 ms: detect).
				p.datagram(dec, dgrams[i%len(dgrams)], int64(i/64+1)*200_000, keys)
				if (i+1)%64 == 0 {
					p.endBatch()
				}
			}
			// An untimed lap of the stream (of every key, with keys) first: the first
			// reports of a flow make new keys and fault in the tables' pages, which the
			// steady state does not.
			i := 0
			for ; i < max(len(dgrams), pc.keys); i++ {
				run(i)
			}
			p.endBatch()
			p.reports = 0
			b.ReportAllocs()
			clk := benchclock.Start(b)
			for b.Loop() {
				run(i)
				i++
			}
			p.endBatch()
			clk.Stop("report", p.reports)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(p.reports), "ns/report")
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

// batchProcessor is ingest.BatchProcessor, declared here so that the benchmark also builds
// against a tree without it (before/after comparisons build both).
type batchProcessor interface {
	ProcessBatch(worker int, rs []telemetry.Report)
}

// pipeline hands reports to processors as an ingest worker does: processors with a batch
// path get the reports of a batch at once (64 at most), the others each report as it is
// decoded; every processor that flushes is flushed at the end of a batch.
type pipeline struct {
	rd       wire.Reader
	plain    []ingest.Processor
	batch    []batchProcessor
	flushers []ingest.Flusher
	rep      telemetry.Report
	rs       []telemetry.Report
	n        int
	reports  int
}

func newPipeline(procs []ingest.Processor) *pipeline {
	p := &pipeline{}
	for _, x := range procs {
		if bp, ok := x.(batchProcessor); ok {
			p.batch = append(p.batch, bp)
		} else {
			p.plain = append(p.plain, x)
		}
		if f, ok := x.(ingest.Flusher); ok {
			p.flushers = append(p.flushers, f)
		}
	}
	if len(p.batch) > 0 {
		p.rs = make([]telemetry.Report, 64)
	}
	return p
}

func (p *pipeline) datagram(dec *wire.Decoder, d []byte, now int64, keys []telemetry.FlowKey) {
	p.rd.Reset(dec, wire.InputReport, d)
	for {
		r := &p.rep
		if p.rs != nil {
			r = &p.rs[p.n]
		}
		if p.rd.Next(r) != nil {
			return
		}
		r.RecvTime = now
		if keys != nil {
			r.Flow = keys[p.reports&(len(keys)-1)]
		}
		p.reports++
		for _, x := range p.plain {
			x.Process(0, r)
		}
		if p.rs != nil {
			if p.n++; p.n == len(p.rs) {
				p.handOver()
			}
		}
	}
}

func (p *pipeline) handOver() {
	if p.n > 0 {
		for _, x := range p.batch {
			x.ProcessBatch(0, p.rs[:p.n])
		}
		p.n = 0
	}
}

func (p *pipeline) endBatch() {
	p.handOver()
	for _, f := range p.flushers {
		f.Flush(0)
	}
}
