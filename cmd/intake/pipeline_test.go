package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// BenchmarkPipeline is a worker's cost per report without the socket: decode of the
// generator's default stream (TR v2.0, one INT-MD report of 5 hops x 8 fields per datagram,
// 64 flows) and the processors serve builds, each alone and all together, flushed every 64
// datagrams as a recvmmsg batch would be. The ratio of "all" to "decode" is what processing
// adds to decoding; bench ingest puts the socket around it. vary=1 draws every value anew
// (a change event nearly everywhere), vary=0.05 changes a flow hop's values in one report of
// twenty.
func BenchmarkPipeline(b *testing.B) {
	for _, vary := range []float64{1, 0.05} {
		b.Run(fmt.Sprintf("vary=%g", vary), func(b *testing.B) { benchPipeline(b, vary) })
	}
}

func benchPipeline(b *testing.B, vary float64) {
	gcfg := gen.DefaultConfig()
	gcfg.Vary = vary
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
	for _, only := range []string{"decode", "detect", "flowcache", "dta", "label", "all"} {
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
			cfg.Listeners = []ingest.Listener{{Format: "report", Address: "127.0.0.1", Sockets: 1}}
			c, err := collector.New(cfg, collector.Options{})
			if err != nil {
				b.Fatal(err)
			}
			procs := c.Receiver.Processors()
			if only != "decode" && len(procs) == 0 {
				b.Skipf("no %s processor", only)
			}
			var flushers []ingest.Flusher
			for _, p := range procs {
				if f, ok := p.(ingest.Flusher); ok {
					flushers = append(flushers, f)
				}
			}
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer c.Stop(context.Background())
			var rd wire.Reader
			var r telemetry.Report
			reports := 0
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				rd.Reset(dec, wire.InputReport, dgrams[i%len(dgrams)])
				for rd.Next(&r) == nil {
					r.RecvTime = int64(i)
					for _, p := range procs {
						p.Process(0, &r)
					}
					reports++
				}
				if i++; i%64 == 0 {
					for _, f := range flushers {
						f.Flush(0)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reports), "ns/report")
		})
	}
}
