package label

import (
	"net/http"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/metrics"
)

// RegisterAPI adds GET /api/v1/label/ports (?switch_id=N) and GET /api/v1/label/coverage
// (?windows=N, default 10).
func (c *Controller) RegisterAPI(s *api.Server) {
	s.HandleFunc("GET /api/v1/label/ports", c.handlePorts)
	s.HandleFunc("GET /api/v1/label/coverage", c.handleCoverage)
}

func (c *Controller) handlePorts(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "switch_id") {
		return
	}
	sw, ok := api.IntParam(w, r, "switch_id", -1, 0, 255, "an integer in [0, 255]")
	if !ok {
		return
	}
	ps := c.Ports(c.Now(), sw)
	api.JSON(w, http.StatusOK, PortsResponse{Count: len(ps), Ports: ps})
}

func (c *Controller) handleCoverage(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "windows") {
		return
	}
	n, ok := api.IntParam(w, r, "windows", 10, 1, 1000, "an integer in [1, 1000]")
	if ok {
		api.JSON(w, http.StatusOK, c.Coverage(c.Now(), n))
	}
}

// registerMetrics puts the controller's counters on reg (and the control channel's, when
// the shift setter is an HTTPControl).
func (c *Controller) registerMetrics(reg *metrics.Registry) {
	cnt := func(name, help string, fn func(Counters) uint64) {
		reg.Counter(name, help).Func(func() float64 { return float64(fn(c.Counters())) })
	}
	cnt("intake_label_reports_total", "INT-label exports installed", func(k Counters) uint64 { return k.Reports })
	cnt("intake_label_items_total", "INT-label items received", func(k Counters) uint64 { return k.Items })
	cnt("intake_label_updates_total", "items that updated a port (newer label time, Algorithm 4)", func(k Counters) uint64 { return k.Updates })
	cnt("intake_label_stale_total", "items discarded as not newer than the port's state", func(k Counters) uint64 { return k.Stale })
	cnt("intake_label_shift_raises_total", "Algorithm 3 shift increases", func(k Counters) uint64 { return k.ShiftsUp })
	cnt("intake_label_shift_lowers_total", "Algorithm 3 shift decreases", func(k Counters) uint64 { return k.ShiftsDown })
	reg.Gauge("intake_label_ports", "(switch, port) entries in the INT-label database").Func(func() float64 { return float64(c.Counters().Ports) })
	reg.Gauge("intake_label_coverage", "coverage of the last complete telemetry interval").Func(func() float64 {
		r := c.Coverage(c.Now(), 1)
		if len(r.Windows) == 0 {
			return 0
		}
		return r.Windows[0].Coverage
	})
}
