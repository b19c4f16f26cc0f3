package main

import (
	"net/http"
	"strconv"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/label"
	"github.com/intake-int/intake/metrics"
)

// The INT-label controller in the pipeline (label.Controller): the newest state per
// (device, port), coverage per telemetry interval, Algorithm 3's feedback to the control
// endpoint, and GET /api/v1/label/ports and /api/v1/label/coverage.

func init() {
	serveProcessors = append(serveProcessors, newLabelProcessor)
}

// newLabelProcessor builds the controller from the `label` section; nil when disabled.
func newLabelProcessor(env *procEnv) (ingest.Processor, error) {
	cfg := env.Cfg.Label
	if !cfg.Enabled {
		return nil, nil
	}
	var setter label.ShiftSetter
	var hc *label.HTTPControl
	if cfg.Control != "" {
		hc = label.NewHTTPControl(cfg.Control)
		setter = hc
	}
	c := label.New(cfg, setter, nil)
	if env.Metrics != nil {
		registerLabelMetrics(env.Metrics, c, hc)
	}
	if env.API != nil {
		registerLabelAPI(env.API, c)
	}
	return c, nil
}

func registerLabelMetrics(reg *metrics.Registry, c *label.Controller, hc *label.HTTPControl) {
	cnt := func(name, help string, fn func(label.Counters) uint64) {
		reg.Counter(name, help).Func(func() float64 { return float64(fn(c.Counters())) })
	}
	cnt("intake_label_reports_total", "INT-label exports installed", func(k label.Counters) uint64 { return k.Reports })
	cnt("intake_label_items_total", "INT-label items received", func(k label.Counters) uint64 { return k.Items })
	cnt("intake_label_updates_total", "items that updated a port (newer label time, Algorithm 4)", func(k label.Counters) uint64 { return k.Updates })
	cnt("intake_label_stale_total", "items discarded as not newer than the port's state", func(k label.Counters) uint64 { return k.Stale })
	cnt("intake_label_shift_raises_total", "Algorithm 3 shift increases", func(k label.Counters) uint64 { return k.ShiftsUp })
	cnt("intake_label_shift_lowers_total", "Algorithm 3 shift decreases", func(k label.Counters) uint64 { return k.ShiftsDown })
	reg.Gauge("intake_label_ports", "(switch, port) entries in the INT-label database").Func(func() float64 { return float64(c.Counters().Ports) })
	reg.Gauge("intake_label_coverage", "coverage of the last complete telemetry interval").Func(func() float64 {
		r := c.Coverage(c.Now(), 1)
		if len(r.Windows) == 0 {
			return 0
		}
		return r.Windows[0].Coverage
	})
	if hc != nil {
		reg.Counter("intake_label_control_sent_total", "shift updates sent to the control endpoint").Func(func() float64 { return float64(hc.Sent.Load()) })
		reg.Counter("intake_label_control_errors_total", "shift updates the control endpoint refused or did not answer").Func(func() float64 { return float64(hc.Errors.Load()) })
		reg.Counter("intake_label_control_drops_total", "shift updates dropped because the send queue was full").Func(func() float64 { return float64(hc.Drops.Load()) })
	}
}

// registerLabelAPI adds GET /api/v1/label/ports (?switch_id=N) and GET
// /api/v1/label/coverage (?windows=N, default 10).
func registerLabelAPI(srv *api.Server, c *label.Controller) {
	srv.Handle("GET /api/v1/label/ports", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "switch_id") {
			return
		}
		sw := -1
		if v := r.URL.Query().Get("switch_id"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 255 {
				api.BadParam(w, "switch_id", v, "an integer in [0, 255]")
				return
			}
			sw = n
		}
		ps := c.Ports(c.Now(), sw)
		api.JSON(w, http.StatusOK, label.PortsResponse{Count: len(ps), Ports: ps})
	}))
	srv.Handle("GET /api/v1/label/coverage", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "windows") {
			return
		}
		n := 10
		if v := r.URL.Query().Get("windows"); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 || k > 1000 {
				api.BadParam(w, "windows", v, "an integer in [1, 1000]")
				return
			}
			n = k
		}
		api.JSON(w, http.StatusOK, c.Coverage(c.Now(), n))
	}))
}
