// Package flowcache owns the SmartNIC INT sink's flow cache, per-switch histograms and
// eviction rings (SmartNIC sink §III-B to III-D): built by issue 6.
package flowcache

// Config is the `flowcache` section of the configuration file.
type Config struct {
	// Enabled turns the flow cache on (the default).
	Enabled bool `yaml:"enabled"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error { return nil }
