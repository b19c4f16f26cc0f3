// Package detect owns intake's metric model and event detection (INTCollector §III-C to
// III-E; SmartNIC sink §III-C): built by issue 5.
package detect

// Config is the `detect` section of the configuration file.
type Config struct {
	// Enabled turns the event detector on (the default).
	Enabled bool `yaml:"enabled"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error { return nil }
