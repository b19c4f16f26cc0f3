package collector

import (
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/ingest"
)

// Summary is the final counters serve and demo end with (cmd/intake prints them): together
// they account for every datagram and report not taken (decode errors, inner packet errors of
// reports kept, ingest drops, kernel drops, processors' rejections, queue drops), and for
// what each sink sent and dropped.
type Summary struct {
	ingest.Status
	// Rejected is Rejections: reports a processor refused, by "processor reason".
	Rejected map[string]uint64
	// KernelDetect is the XDP program's detection (detect.kernel; nil without it): the
	// reports it detected never reach the counters above.
	KernelDetect *detect.KernelCounts
	// Sinks are the export pipeline's sinks, then the flow records' (InfluxDB), in order.
	Sinks []export.SinkStatus
	// Redis and Kafka are those sinks' counters by kind (nil when off).
	Redis *redis.Counts
	Kafka *kafka.Counts
}

// Summary collects the final counters now (after Stop, nothing else is pending: a sink's
// sent and dropped are everything it was offered).
func (c *Collector) Summary() Summary {
	s := Summary{Status: c.Status(), Rejected: c.Rejections()}
	if c.Detector != nil {
		s.KernelDetect = c.Detector.Stats().Kernel
	}
	if c.Export != nil {
		s.Sinks = append(s.Sinks, c.Export.Status().Sinks...)
	}
	if c.records != nil {
		s.Sinks = append(s.Sinks, c.records.SinkStatus())
	}
	if c.Redis != nil {
		rc := c.Redis.Counts()
		s.Redis = &rc
	}
	if c.Kafka != nil {
		kc := c.Kafka.Counts()
		s.Kafka = &kc
	}
	return s
}
