package influx

import (
	"fmt"
	"net/url"
)

// Config is the export.influxdb section: the line-protocol sinks of events and of flow
// records.
type Config struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8086; empty turns the sink off.
	URL string `yaml:"url"`
	// Database is the 1.x database (created when missing) or the 2.x bucket.
	Database string `yaml:"database"`
	// API is "v1" (POST /write?db=) or "v2" (POST /api/v2/write?bucket=&org=).
	API string `yaml:"api"`
	// Org and Token are for the 2.x API (Token also works as a 1.x password-less token).
	Org   string `yaml:"org"`
	Token string `yaml:"token"`
	// Schema is "intake" (the measurements of docs/export.md) or "intcollector"
	// (INTCollector's flow_stat, flow_hop_latency, port_tx_utilize, queue_occupancy).
	Schema string `yaml:"schema"`
	// Timestamp is "receive" (the collector's receive time) or "int" (the INT data's own
	// timestamp: hop egress time, report ingress time; receive time where there is none).
	Timestamp string `yaml:"timestamp"`
	// Batch is the most lines per request (at most 5000).
	Batch int `yaml:"batch"`
	// Gzip compresses request bodies.
	Gzip bool `yaml:"gzip"`
}

// MaxBatch is the largest line batch (the InfluxDB documentation's recommended 5000).
const MaxBatch = 5000

// DefaultConfig returns the documented defaults: no server (the sinks off).
func DefaultConfig() Config {
	return Config{Database: "intake", API: "v1", Schema: "intake", Timestamp: "receive", Batch: MaxBatch, Gzip: true}
}

// Validate reports the first invalid setting as "influxdb.key: value: what is allowed", the
// key relative to the export section.
func (in *Config) Validate() error {
	if in.URL != "" {
		if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("influxdb.url: %q: must be an http:// or https:// URL", in.URL)
		}
	}
	if in.Database == "" {
		return fmt.Errorf("influxdb.database: \"\": must not be empty")
	}
	if in.API != "v1" && in.API != "v2" {
		return fmt.Errorf("influxdb.api: %q: must be v1 (/write) or v2 (/api/v2/write)", in.API)
	}
	if in.Schema != "intake" && in.Schema != "intcollector" {
		return fmt.Errorf("influxdb.schema: %q: must be intake or intcollector", in.Schema)
	}
	if in.Timestamp != "receive" && in.Timestamp != "int" {
		return fmt.Errorf("influxdb.timestamp: %q: must be receive or int", in.Timestamp)
	}
	if in.Batch < 1 || in.Batch > MaxBatch {
		return fmt.Errorf("influxdb.batch: %d: must be 1-%d lines", in.Batch, MaxBatch)
	}
	return nil
}
