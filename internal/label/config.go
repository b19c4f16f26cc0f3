// Package label owns INT-label's controller (INT-label §2 "Telemetry data collection", §3.2,
// §3.4; in the authors' prototype, a Redis-backed controller): the database that keeps the
// newest state per (device, egress port) by label time (Algorithm 4), the coverage rate per
// telemetry interval (§6.2: ports updated over ports carrying traffic), the age of every
// port, and the adaptive feedback of Algorithm 3 that raises and lowers each port's shift S
// (labeling interval T/2^S) over a control channel (docs/label.md). It also holds Base B's
// probability functions F1-F3 (§3.1), which the emulated fabric's switches evaluate; the
// labeling-times analysis of §4.3 and the reproduction of §6.2's figures are package
// sim/labelsim's.
//
// The controller is an ingest.Processor: Process runs on the receive workers, allocates
// nothing per report, and locks one stripe (one switch's port table) per item.
package label

import (
	"fmt"
	"net/url"
	"time"
)

// Config is the `label` section of the configuration file.
type Config struct {
	// Enabled turns the INT-label database on (the default).
	Enabled bool `yaml:"enabled"`
	// TelemetryInterval is T_i, the coverage window (the prototype's TIME_OUT, 100 ms; the
	// paper's default telemetry resolution of 10/s).
	TelemetryInterval time.Duration `yaml:"telemetry_interval"`
	// LabelingInterval is T, the switches' labeling interval; Algorithm 3 compares ages
	// against K·T.
	LabelingInterval time.Duration `yaml:"labeling_interval"`
	// K is Algorithm 3's k: a port not updated for K·T gets its shift raised.
	K float64 `yaml:"k"`
	// Clock says which clock places an update in a coverage window: "receive" (the
	// collector's receive time: what the paper's controller sees, export delay included) or
	// "label" (the item's label time, the switch clock: independent of delivery jitter).
	Clock string `yaml:"clock"`
	// ActiveWindows is how many telemetry intervals a port stays "carrying traffic" after
	// its last update; the collector cannot see idle ports, so a port not labeled for this
	// long counts as idle (out of the coverage denominator, its shift reset to 0).
	ActiveWindows int `yaml:"active_windows"`
	// Control is the fabric (or switch agent) control endpoint Algorithm 3 sends shift
	// updates to, e.g. http://127.0.0.1:8050 (docs/label.md); empty: feedback off.
	Control string `yaml:"control"`
	// FeedbackPeriod is how often Algorithm 3's loop runs.
	FeedbackPeriod time.Duration `yaml:"feedback_period"`
	// MaxShift bounds S (T/2^S).
	MaxShift int `yaml:"max_shift"`
}

// Clock names.
const (
	ClockReceive = "receive"
	ClockLabel   = "label"
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:           true,
		TelemetryInterval: 100 * time.Millisecond,
		LabelingInterval:  50 * time.Millisecond,
		K:                 2,
		Clock:             ClockReceive,
		ActiveWindows:     10,
		FeedbackPeriod:    10 * time.Millisecond,
		MaxShift:          5,
	}
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	switch {
	case c.TelemetryInterval < time.Millisecond || c.TelemetryInterval > time.Hour:
		return fmt.Errorf("telemetry_interval: %s: must be between 1ms and 1h", c.TelemetryInterval)
	case c.LabelingInterval < time.Microsecond || c.LabelingInterval > time.Hour:
		return fmt.Errorf("labeling_interval: %s: must be between 1us and 1h", c.LabelingInterval)
	case !(c.K > 0 && c.K <= 1000):
		return fmt.Errorf("k: %g: must be in (0, 1000]", c.K)
	case c.Clock != ClockReceive && c.Clock != ClockLabel:
		return fmt.Errorf("clock: %q: must be one of receive, label", c.Clock)
	case c.ActiveWindows < 1 || c.ActiveWindows > 60:
		return fmt.Errorf("active_windows: %d: must be between 1 and 60", c.ActiveWindows)
	case c.FeedbackPeriod < time.Millisecond || c.FeedbackPeriod > time.Minute:
		return fmt.Errorf("feedback_period: %s: must be between 1ms and 1m", c.FeedbackPeriod)
	case c.MaxShift < 0 || c.MaxShift > 16:
		return fmt.Errorf("max_shift: %d: must be between 0 and 16", c.MaxShift)
	}
	if c.Control != "" {
		u, err := url.Parse(c.Control)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("control: %q: must be empty or an http:// URL with a host", c.Control)
		}
	}
	return nil
}
