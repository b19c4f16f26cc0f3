package config

import (
	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/export/redis"
)

// Export is the `export` section, assembled from its owners' parts: the pipeline's keys
// (period, queue, flush, backoff_min, backoff_max: export.Config, inline) and each sink's
// section, its package's Config. The keys are those of docs/config.md.
type Export struct {
	export.Config `yaml:",inline"`
	// InfluxDB is the InfluxDB line-protocol sinks (1.x /write or 2.x /api/v2/write).
	InfluxDB influx.Config `yaml:"influxdb"`
	// Prometheus is the /metrics gauges and the remote-write sink.
	Prometheus prom.Config `yaml:"prometheus"`
	// Redis is the flow cache's Redis export (SmartNIC sink §III-D): events and evicted flow
	// records to streams, the latest per-flow aggregates as hashes.
	Redis redis.Config `yaml:"redis"`
	// Kafka is the Kafka output (docs/kafka.md): decoded reports, events, periodic
	// snapshots and evicted flow records, each to its own topic.
	Kafka kafka.Config `yaml:"kafka"`
}

// DefaultExport returns the documented defaults: no network sink configured, gauges on.
func DefaultExport() Export {
	return Export{Config: export.DefaultConfig(), InfluxDB: influx.DefaultConfig(), Prometheus: prom.DefaultConfig(),
		Redis: redis.DefaultConfig(), Kafka: kafka.DefaultConfig()}
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the export section.
func (e *Export) Validate() error {
	for _, v := range []interface{ Validate() error }{&e.Config, &e.InfluxDB, &e.Prometheus, &e.Redis, &e.Kafka} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Budget is what the sinks' queues hold when full (docs/config.md, "Budget"), each sink's
// own: fc is the flow cache's record shape (its records reach the sinks when it is on),
// workers the number of ingest workers (Kafka's report rings).
func (e *Export) Budget(fc export.Records, workers int) budget.Budget {
	q := e.Batching()
	b := e.InfluxDB.Budget(q, fc)
	b = append(b, e.Prometheus.Budget(q)...)
	b = append(b, e.Kafka.Budget(fc, workers)...)
	return append(b, e.Redis.Budget(fc)...)
}
