// Package label owns INT-label's controller database: the newest state per (device, port),
// coverage and adaptive labeling feedback (INT-label §3-4): built by issue 8.
package label

// Config is the `label` section of the configuration file.
type Config struct {
	// Enabled turns the INT-label database on (the default).
	Enabled bool `yaml:"enabled"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error { return nil }
