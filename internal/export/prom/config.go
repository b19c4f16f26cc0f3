package prom

import (
	"fmt"
	"net/url"
)

// Config is the export.prometheus section: the /metrics gauges and the remote-write sink.
type Config struct {
	// Gauges exposes the latest value of every live key as a gauge on /metrics.
	Gauges bool `yaml:"gauges"`
	// SeriesLimit bounds the gauge series; values of further keys are dropped and counted.
	SeriesLimit int `yaml:"series_limit"`
	// RemoteWrite is the remote-write receiver's URL (e.g.
	// http://127.0.0.1:9090/api/v1/write); empty turns remote write off.
	RemoteWrite string `yaml:"remote_write"`
	// Batch is the most samples per remote-write request.
	Batch int `yaml:"batch"`
}

// DefaultConfig returns the documented defaults: gauges on, no remote write.
func DefaultConfig() Config { return Config{Gauges: true, SeriesLimit: 10000, Batch: 2000} }

// Validate reports the first invalid setting as "prometheus.key: value: what is allowed",
// the key relative to the export section.
func (p *Config) Validate() error {
	if p.SeriesLimit < 0 {
		return fmt.Errorf("prometheus.series_limit: %d: must be 0 or more", p.SeriesLimit)
	}
	if p.RemoteWrite != "" {
		if u, err := url.Parse(p.RemoteWrite); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("prometheus.remote_write: %q: must be an http:// or https:// URL", p.RemoteWrite)
		}
	}
	if p.Batch < 1 || p.Batch > 100000 {
		return fmt.Errorf("prometheus.batch: %d: must be 1-100000 samples", p.Batch)
	}
	return nil
}
