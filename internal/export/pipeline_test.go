package export_test

import (
	"context"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/metrics"
)

// sinkComponent is an event sink with a lifecycle (those of export/influx and export/prom).
type sinkComponent interface {
	export.EventSink
	Start(context.Context) error
	Stop(context.Context) error
}

// testPipeline is a pipeline with the event sinks cfg turns on, built as the collector builds
// them (collector.buildSinks), then deps.Sinks; Start starts its sinks before it, and Stop
// stops them after it (each flushing until ctx ends), as the collector does.
type testPipeline struct {
	*export.Pipeline
	own []sinkComponent
}

// newPipeline builds a testPipeline; gauges, when set, gets the gauges of
// export.prometheus.gauges.
func newPipeline(cfg config.Export, gauges *metrics.Registry, deps export.Deps) (*testPipeline, error) {
	sd := export.SinkDeps{Metrics: deps.Metrics}
	var own []sinkComponent
	if cfg.Prometheus.Gauges && gauges != nil {
		own = append(own, prom.NewGauges(gauges, cfg.Prometheus.SeriesLimit, deps.Metrics))
	}
	if cfg.InfluxDB.URL != "" {
		own = append(own, influx.New(cfg.InfluxDB, cfg.Batching(), sd))
	}
	if cfg.Prometheus.RemoteWrite != "" {
		own = append(own, prom.NewRemoteWrite(cfg.Prometheus, cfg.Batching(), sd))
	}
	var sinks []export.EventSink
	for _, s := range own {
		sinks = append(sinks, s)
	}
	deps.Sinks = append(sinks, deps.Sinks...)
	p, err := export.New(cfg.Config, deps)
	if err != nil {
		return nil, err
	}
	return &testPipeline{Pipeline: p, own: own}, nil
}

func (p *testPipeline) Start(ctx context.Context) error {
	for _, s := range p.own {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	return p.Pipeline.Start(ctx)
}

func (p *testPipeline) Stop(ctx context.Context) error {
	err := p.Pipeline.Stop(ctx)
	for _, s := range p.own {
		if e := s.Stop(ctx); e != nil && err == nil {
			err = e
		}
	}
	return err
}
