package main

import (
	"context"
	"net/http"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/detect"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/metrics"
)

// The event detector (detect) with its event bus, event log, export pipeline (export) and
// HTTP endpoints: /api/v1/events, /api/v1/events/stream, /api/v1/flow, /api/v1/thresholds,
// /api/v1/detect/status.

func init() {
	serveProcessors = append(serveProcessors, func(env *procEnv) (ingest.Processor, error) {
		if !env.Cfg.Detect.Enabled {
			return nil, nil
		}
		return newDetectProc(env)
	})
}

// detectProc is the detector as ingest sees it, starting and stopping what runs beside it.
type detectProc struct {
	*detect.Detector
	log  *detect.Log
	pipe *export.Pipeline
}

func newDetectProc(env *procEnv) (*detectProc, error) {
	cfg := env.Cfg.Detect
	d := detect.New(cfg, env.Bus)
	p := &detectProc{Detector: d}
	reg := env.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	d.RegisterMetrics(reg)
	var gauges *metrics.Registry
	if env.API != nil { // the gauges are for /metrics: without HTTP nobody scrapes them
		gauges = reg
	}
	expireTick := time.Duration(0)
	if cfg.Expire > 0 {
		expireTick = max(cfg.Expire/2, 10*time.Millisecond)
	}
	pipe, err := export.New(env.Cfg.Export, env.Bus, d, reg, gauges, func() uint64 { return d.Stats().Values }, expireTick)
	if err != nil {
		return nil, err
	}
	p.pipe = pipe
	if env.API != nil {
		p.log = detect.NewLog(env.Bus, cfg.EventLog, cfg.Ring)
		d.Register(env.API, p.log)
		env.API.Handle("GET /api/v1/detect/status", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if api.CheckParams(w, r) {
				api.JSON(w, http.StatusOK, p.Status())
			}
		}))
	}
	ov := reg.Counter("intake_event_ring_overflow_total", "Events dropped because a bus consumer's ring was full, by consumer.", "consumer")
	ov.Func(func() float64 {
		if c := pipe.Consumer(); c != nil {
			return float64(c.Overflow())
		}
		return 0
	}, "export")
	if p.log != nil {
		ov.Func(func() float64 { return float64(p.log.Consumer().Overflow()) }, "log")
	}
	return p, nil
}

// DetectStatus is GET /api/v1/detect/status: the detector's counters (values seen: M_all)
// and the export pipeline's (values exported by source, the reduction factor, every sink's
// sent, retried and dropped points).
type DetectStatus struct {
	Detect detect.Stats  `json:"detect"`
	Export export.Status `json:"export"`
}

// Status returns the counters now.
func (p *detectProc) Status() DetectStatus {
	return DetectStatus{Detect: p.Detector.Stats(), Export: p.pipe.Status()}
}

func (p *detectProc) Start(workers int) error {
	if err := p.Detector.Start(workers); err != nil {
		return err
	}
	if p.log != nil {
		p.log.Start()
	}
	return p.pipe.Start(p.Detector.Config().Ring)
}

func (p *detectProc) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.pipe.Stop(ctx)
	if p.log != nil {
		p.log.Stop()
	}
	return err
}
