package export_test

import (
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget/budgettest"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/export/prom"
	"github.com/intake-int/intake/internal/export/redis"
)

// TestBudgetReal: the sinks' queues filled to their configured sizes with the largest items
// (records of max_hops hops with every metric, IPv6 flows, the largest values; a flow's
// event at a switch) hold no more than their budget lines, and not more than twice less.
// Nothing is started: the queues fill as with a server down. (kafka in flight, the
// client's records, needs a broker and is not measured here.)
func TestBudgetReal(t *testing.T) {
	cfg := config.DefaultExport()
	cfg.Queue, cfg.Kafka.Queue, cfg.Redis.Queue = 4096, 4096, 4096
	cfg.InfluxDB.URL, cfg.Prometheus.RemoteWrite = "http://127.0.0.1:1", "http://127.0.0.1:1/api/v1/write"
	cfg.Kafka.Brokers, cfg.Kafka.Reports = []string{"127.0.0.1:1"}, "full"
	cfg.Redis.Address = "127.0.0.1:1"
	fc := export.Records{Enabled: true, MaxHops: 8, HistogramBins: 64} // flowcache.histograms.bins' default
	const workers = 2
	rec, ev := export.WorstRecord(fc), export.WorstEvent()
	snap := ev
	snap.Kind = event.KindPeriodic
	b := cfg.Budget(fc, workers)
	for _, c := range []struct {
		parts []string
		fill  func() any
	}{
		{[]string{"influxdb queue"}, func() any {
			s := influx.New(cfg.InfluxDB, cfg.Batching(), export.SinkDeps{})
			for range cfg.Queue {
				s.Offer(&ev)
			}
			return s
		}},
		{[]string{"influxdb records queue"}, func() any {
			s := influx.NewRecords(cfg.InfluxDB, cfg.Batching(), export.SinkDeps{})
			for range cfg.Queue {
				s.OfferRecord(rec)
			}
			return s
		}},
		{[]string{"remote write queue"}, func() any {
			s := prom.NewRemoteWrite(cfg.Prometheus, cfg.Batching(), export.SinkDeps{})
			for range cfg.Queue {
				s.Offer(&ev)
			}
			return s
		}},
		{[]string{"kafka queues", "kafka flows queue", "kafka report rings"}, func() any {
			s, err := kafka.New(cfg.Kafka, kafka.Deps{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			for range cfg.Kafka.Queue {
				s.Offer(&ev)
				s.Offer(&snap)
				s.OfferRecord(rec)
			}
			return s
		}},
		{[]string{"redis queue"}, func() any {
			s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
			for range cfg.Redis.Queue {
				s.OfferRecord(rec)
			}
			return s
		}},
	} {
		real := budgettest.Heap(c.fill)
		budgettest.Within(t, c.parts[0], real, budgettest.Memory(t, b, c.parts...), 2)
	}
}
