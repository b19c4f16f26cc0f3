package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/ingest"
	"go.uber.org/goleak"
)

func testConfig(t *testing.T) config.Config {
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners = []ingest.Listener{{Format: "report", Address: "127.0.0.1", Sockets: 1}}
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.DTA.DataDir = t.TempDir()
	return cfg
}

// Start brings every component up (sinks, processors, receiver, API); Stop brings them
// down in reverse and leaves no goroutine; a failed Start (the API's port taken) stops what
// it had started, so the receive path is not left running.
func TestLifecycle(t *testing.T) {
	before := goleak.IgnoreCurrent()
	a, err := New(testConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range a.all() {
		names = append(names, c.Name())
	}
	// The sinks first (here the Prometheus gauges, a component of its own), then the
	// pipeline that feeds them, then the history, which samples the processors.
	if got, want := strings.Join(names, " "), "prometheus export detect dta flowcache label history ingest http"; got != want {
		t.Errorf("start order %q, want %q", got, want)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err == nil {
		t.Error("second Start succeeded")
	}

	cfg := testConfig(t)
	cfg.HTTP.Address = a.API.Addr()
	b, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start(ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "http: http.address "+cfg.HTTP.Address) {
		t.Errorf("Start with the API's port taken: %v", err)
	}
	if b.Receiver.Running() {
		t.Error("the receive path runs after a failed Start")
	}
	if err := b.Stop(ctx); err != nil {
		t.Errorf("Stop after a failed Start: %v", err)
	}

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if a.Receiver.Running() {
		t.Error("the receive path runs after Stop")
	}
	goleak.VerifyNone(t, before) // retries until the goroutines are gone, and names those left
}

// A configuration with every processor off still runs the receive path and the API.
func TestNothingOn(t *testing.T) {
	cfg := testConfig(t)
	cfg.Detect.Enabled, cfg.FlowCache.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = false, false, false, false
	c, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.API != nil || len(c.Receiver.Processors()) != 0 || len(c.all()) != 1 {
		t.Errorf("api %v, %d processors, %d components", c.API, len(c.Receiver.Processors()), len(c.all()))
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A Redis sink configured by URL alone (no address) is built, started before the export
// pipeline and the flow cache, and wired to both: it takes the pipeline's events and the
// flow cache's records, latest values and histograms.
func TestRedisByURL(t *testing.T) {
	cfg := testConfig(t)
	cfg.Export.Redis.URL = "redis://127.0.0.1:1/0"
	c, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range c.all() {
		names = append(names, x.Name())
	}
	if c.Redis == nil || !strings.Contains(strings.Join(names, " "), "redis export detect dta flowcache") {
		t.Fatalf("redis %v, components %v", c.Redis, names)
	}
	in := c.sinkIn
	if len(in.events) != 1 || in.events[0] != c.Redis || len(in.records) != 1 || in.latest != c.Redis || in.histograms != c.Redis {
		t.Errorf("the sink's inputs: events %v, records %d, latest %v, histograms %v", in.events, len(in.records), in.latest, in.histograms)
	}
}
