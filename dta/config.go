// Package dta owns the DTA translator and its write-only stores in shared memory (DTA §3-4,
// DART §3-5): built by issue 7.
package dta

// Config is the `dta` section of the configuration file.
type Config struct {
	// Enabled turns the DTA stores on (the default).
	Enabled bool `yaml:"enabled"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error { return nil }
