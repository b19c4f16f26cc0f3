package config

import (
	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
)

// Budget sums what every component will take at the sizes configured (docs/config.md,
// "Budget"): each component's own Budget.
func (c *Config) Budget() budget.Budget {
	in := c.Ingest()
	b := in.Budget()
	// The bus consumers that will read detect.ring events: the event log (with the API),
	// the export pipeline (which feeds every event sink, Redis's too), the DTA event list.
	consumers := 0
	if c.Detect.Enabled {
		consumers++ // export pipeline
		if c.HTTP.Address != "" {
			consumers++ // event log
		}
	}
	b = append(b, c.Detect.Budget(consumers)...)
	b = append(b, c.FlowCache.Budget(in.Workers())...)
	b = append(b, c.DTA.Budget(in.Workers())...)
	b = append(b, c.Export.Budget(export.Records{Enabled: c.FlowCache.Enabled, MaxHops: c.FlowCache.MaxHops,
		HistogramBins: c.FlowCache.Histograms.Bins}, in.Workers())...)
	b = append(b, c.Label.Budget()...)
	if c.Detect.Enabled || c.FlowCache.Enabled {
		b = append(b, c.History.Budget()...)
	}
	b = append(b, c.HTTP.Budget()...)
	return append(b, budget.Process(b)...)
}

// CheckBudget refuses a configuration that needs more memory or disk than m has, with the
// breakdown (a *budget.Error).
func (c *Config) CheckBudget(m budget.Machine) error {
	return c.Budget().Check(m)
}
