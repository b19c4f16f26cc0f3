// Package export owns the sinks intake pushes events and periodic snapshots to (InfluxDB,
// Prometheus remote write, Redis, Kafka): built by issues 5 and 6.
package export

// Config is the `export` section of the configuration file.
type Config struct{}

// DefaultConfig returns the documented defaults: no sink configured.
func DefaultConfig() Config { return Config{} }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error { return nil }
