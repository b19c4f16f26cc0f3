package export

import (
	"fmt"
	"time"
)

// Config is the export pipeline's part of the `export` section of the configuration file:
// its period, and the queue, flush and retry settings the sinks share. Each sink's own
// section (influxdb, prometheus, redis, kafka) is its package's Config; package config
// assembles the whole section (config.Export).
type Config struct {
	// Period is the periodic push (INTCollector §III-E1): every Period the latest value of
	// every live key goes to the sinks, so that a silent key is known to be alive. 0 turns
	// it off (events only).
	Period time.Duration `yaml:"period"`
	// Queue is the number of events (and periodic values) each sink buffers; when a sink is
	// slower than that, new ones are dropped and counted, ingest never waits.
	Queue int `yaml:"queue"`
	// Flush is the longest a point waits in a sink's queue for a fuller batch.
	Flush time.Duration `yaml:"flush"`
	// BackoffMin and BackoffMax bound the exponential backoff between retries of a failed
	// batch.
	BackoffMin time.Duration `yaml:"backoff_min"`
	BackoffMax time.Duration `yaml:"backoff_max"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Period:     10 * time.Second,
		Queue:      20000,
		Flush:      time.Second,
		BackoffMin: 100 * time.Millisecond,
		BackoffMax: 10 * time.Second,
	}
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if c.Period < 0 {
		return fmt.Errorf("period: %s: must be 0 (off) or positive", c.Period)
	}
	if c.Period > 0 && c.Period < 10*time.Millisecond {
		return fmt.Errorf("period: %s: must be at least 10ms (or 0: off)", c.Period)
	}
	if c.Queue < 1 || c.Queue > 1<<22 {
		return fmt.Errorf("queue: %d: must be 1-%d", c.Queue, 1<<22)
	}
	if c.Flush < time.Millisecond {
		return fmt.Errorf("flush: %s: must be at least 1ms", c.Flush)
	}
	if c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin {
		return fmt.Errorf("backoff_max: %s: must be positive and at least backoff_min (%s)", c.BackoffMax, c.BackoffMin)
	}
	return nil
}

// Retry bounds the exponential backoff between retries of a failed batch or connection:
// every network sink takes it beside its own section.
type Retry struct {
	BackoffMin, BackoffMax time.Duration
}

// Batching is what the queued sinks (Queued: InfluxDB, remote write) take beside their own
// section: the shared queue size and flush time, and Retry.
type Batching struct {
	Queue int
	Flush time.Duration
	Retry
}

// Retry returns the sinks' backoff settings.
func (c Config) Retry() Retry { return Retry{BackoffMin: c.BackoffMin, BackoffMax: c.BackoffMax} }

// Batching returns the queued sinks' shared settings.
func (c Config) Batching() Batching {
	return Batching{Queue: c.Queue, Flush: c.Flush, Retry: c.Retry()}
}
