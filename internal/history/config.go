package history

import (
	"fmt"
	"time"
)

// Config is the `history` section of the configuration file (docs/config.md).
type Config struct {
	// Enabled keeps the history (the default).
	Enabled bool `yaml:"enabled"`
	// Period is how often the history samples the flow cache and the detector: one point
	// per switch and per flow each period, at multiples of the period (so that the members
	// of a cluster sample at the same instants).
	Period time.Duration `yaml:"period"`
	// Retention is how far back the history goes: Retention/Period points are kept, the
	// oldest dropped first.
	Retention time.Duration `yaml:"retention"`
	// MaxFlows is how many flows a period keeps: those with the most reports in the period.
	MaxFlows int `yaml:"max_flows"`
	// MaxSwitches is how many switches a period keeps (the first met; the others are
	// counted in drops.history.switches).
	MaxSwitches int `yaml:"max_switches"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{Enabled: true, Period: 10 * time.Second, Retention: time.Hour, MaxFlows: 1000, MaxSwitches: 256}
}

// MaxSlots bounds Retention/Period.
const MaxSlots = 100_000

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	switch {
	case !c.Enabled:
		return nil
	case c.Period < 10*time.Millisecond || c.Period > time.Hour:
		return fmt.Errorf("period: %s: must be between 10ms and 1h", c.Period)
	case c.Retention < c.Period || c.Retention > 7*24*time.Hour:
		return fmt.Errorf("retention: %s: must be between the period (%s) and 168h", c.Retention, c.Period)
	case c.Retention/c.Period > MaxSlots:
		return fmt.Errorf("retention: %s: at most %d periods of %s", c.Retention, MaxSlots, c.Period)
	case c.MaxFlows < 0 || c.MaxFlows > 100_000:
		return fmt.Errorf("max_flows: %d: must be 0-100000", c.MaxFlows)
	case c.MaxSwitches < 1 || c.MaxSwitches > 65536:
		return fmt.Errorf("max_switches: %d: must be 1-65536", c.MaxSwitches)
	}
	return nil
}

// slots is the number of periods kept.
func (c *Config) slots() int { return int(c.Retention / c.Period) }
