package main

import (
	"context"
	"testing"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/ingest"
)

// startCollector starts the collector serve runs, on the defaults changed by mod, with one
// loopback listener per input a test sends to (report, dta, int-label, on ports the kernel
// picks), the HTTP API on a free port and the DTA stores in a temporary directory. It is
// stopped when the test ends.
func startCollector(t testing.TB, mod func(*config.Config)) *collector.Collector {
	t.Helper()
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners = []ingest.Listener{
		{Format: "report", Address: "127.0.0.1", Sockets: 1},
		{Format: "dta", Address: "127.0.0.1", Sockets: 1},
		{Format: "int-label", Address: "127.0.0.1", Sockets: 1},
	}
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.DTA.DataDir = t.TempDir()
	if mod != nil {
		mod(&cfg)
	}
	return runCollector(t, cfg)
}

// runCollector starts a collector on cfg as it is, stopped when the test ends.
func runCollector(t testing.TB, cfg config.Config) *collector.Collector {
	t.Helper()
	c, err := collector.New(cfg, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}
