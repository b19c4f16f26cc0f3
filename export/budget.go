package export

import (
	"fmt"
	"math"
	"net/netip"
	"unsafe"

	"github.com/intake-int/intake/budget"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export/kafkapb"
	"github.com/intake-int/intake/record"
)

// Records is what the sinks' budgets need of the flow cache: whether it is on (its records
// reach the sinks), and the shape of its largest record and histogram.
type Records struct {
	Enabled       bool
	MaxHops       int // flowcache.max_hops
	HistogramBins int // flowcache.histograms.bins
}

// Budget is what the sinks' queues hold when full (docs/config.md, "Budget"): each queue at
// its configured size, of items of the largest size the sink makes them, computed by the
// sinks' own encoders from the largest record of the flow cache fc and the largest event.
// workers is the number of ingest workers (Kafka's report rings). TestBudgetReal fills the
// queues and measures them.
func (c *Config) Budget(fc Records, workers int) budget.Budget {
	var b budget.Budget
	q := int64(c.Queue)
	ev := int64(unsafe.Sizeof(event.Event{}))
	rec := worstRecord(fc)
	if c.InfluxDB.URL != "" {
		b = append(b, budget.Item{Component: "export", Part: "influxdb queue", Memory: budget.Add(sinkBase, budget.Mul(q, ev)),
			Note: fmt.Sprintf("%d events × %d B (queue)", q, ev)})
		if fc.Enabled {
			lines, _ := AppendRecordLines(nil, rec)
			per := int64(unsafe.Sizeof(lineBatch{})) + allocBytes(cap(lines))
			b = append(b, budget.Item{Component: "export", Part: "influxdb records queue", Memory: budget.Add(sinkBase, budget.Mul(q, per)),
				Note: fmt.Sprintf("%d records of %d hops × %d B (queue)", q, fc.MaxHops, per)})
		}
	}
	if c.Prometheus.RemoteWrite != "" {
		b = append(b, budget.Item{Component: "export", Part: "remote write queue", Memory: budget.Add(sinkBase, budget.Mul(q, ev)),
			Note: fmt.Sprintf("%d events × %d B (queue)", q, ev)})
	}
	if k := &c.Kafka; k.Enabled() {
		kq := int64(k.Queue)
		b = append(b, budget.Item{Component: "export", Part: "kafka queues", Memory: budget.Add(sinkBase, budget.Mul(2, kq, ev)),
			Note: fmt.Sprintf("events and snapshots: 2 × %d × %d B (kafka.queue)", kq, ev)})
		msg := int64(kafkaMsgBytes)
		if fc.Enabled && k.Topics.Flows != "" {
			m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Flow{Flow: RecordMessage(rec)}}
			v, _ := (&KafkaSink{json: k.Encoding == "json"}).encode(nil, m)
			per := int64(unsafe.Sizeof(kafkaBytes{})) + allocBytes(FlowKeyLen) + allocBytes(cap(v))
			msg = max(msg, per)
			b = append(b, budget.Item{Component: "export", Part: "kafka flows queue", Memory: budget.Mul(kq, per),
				Note: fmt.Sprintf("%d records of %d hops × %d B (kafka.queue)", kq, fc.MaxHops, per)})
		}
		if k.Topics.Reports != "" && k.Reports != "off" {
			w := max(workers, 1)
			n := int64(2)
			for n < int64(max(k.Queue/w, 1)) {
				n <<= 1
			}
			item := int64(unsafe.Sizeof(kafkaReportItem{}))
			b = append(b, budget.Item{Component: "export", Part: "kafka report rings", Memory: budget.Mul(int64(w), n, item),
				Note: fmt.Sprintf("%d workers × %d reports × %d B", w, n, item)})
		}
		topics := int64(0)
		for i, t := range []string{k.Topics.Reports, k.Topics.Events, k.Topics.Snapshots, k.Topics.Flows} {
			if t != "" && (i > 0 || k.Reports != "off") && (i < 3 || fc.Enabled) {
				topics++
			}
		}
		b = append(b, budget.Item{Component: "export", Part: "kafka in flight", Memory: budget.Mul(topics, int64(k.Buffered), msg),
			Note: fmt.Sprintf("%d topics × %d messages × %d B (kafka.buffered, the client's records)", topics, k.Buffered, msg)})
	}
	if r := &c.Redis; r.Enabled() && fc.Enabled { // the sink is the flow cache's (collector.buildFlowCache)
		e := worstEvent()
		per := redisItemBytes(AppendRedisEvent(make([]string, 0, redisEventFields), &e))
		what := "events"
		{
			if n := redisItemBytes(AppendRedisRecord(make([]string, 0, redisRecordFields(rec)), rec, true)); n > per {
				per, what = n, fmt.Sprintf("records of %d hops", fc.MaxHops)
			}
			h := record.Histogram{Scale: "log", Bins: fc.HistogramBins, Total: math.MaxUint64, Counts: make([]record.Bin, fc.HistogramBins)}
			for i := range h.Counts {
				h.Counts[i] = record.Bin{Lo: math.MaxUint64, Count: math.MaxUint64}
			}
			if n := redisItemBytes(appendRedisHist(make([]string, 0, 6+2*len(h.Counts)), &h)); n > per {
				per, what = n, fmt.Sprintf("histograms of %d bins", fc.HistogramBins)
			}
		}
		b = append(b, budget.Item{Component: "export", Part: "redis queue", Memory: budget.Add(sinkBase, budget.Mul(int64(r.Queue), per)),
			Note: fmt.Sprintf("%d %s × %d B (redis.queue)", r.Queue, what, per)})
	}
	return b
}

// sinkBase is what a sink takes beside its queue's items: the sink, its counters and
// encoder state, its goroutine (measured: at most 18 KiB, TestBudgetReal).
const sinkBase = 32 << 10

// kafkaMsgBytes bounds a message the Kafka client holds in flight (an event, a snapshot or
// a report, encoded, and the client's record around it). It is an estimate, not measured:
// that takes a broker that accepts connections and never answers.
const kafkaMsgBytes = 1024

// allocBytes is what an allocation of n bytes takes: n rounded up to 16 (the small size
// classes' step, and the tiny allocator's block).
func allocBytes(n int) int64 { return int64(n+15) &^ 15 }

// redisItemBytes is what a queued Redis item of fields takes: the item, its slice and each
// string (counted whether or not it is a constant).
func redisItemBytes(fields []string) int64 {
	n := int64(unsafe.Sizeof(redisItem{})) + allocBytes(cap(fields)*16)
	for _, f := range fields {
		n += allocBytes(len(f))
	}
	return n
}

// worstRecord is the largest record the flow cache fc evicts: IPv6, every hop of max_hops
// with every metric, the largest values.
func worstRecord(fc Records) *record.Record {
	r := &record.Record{Reason: record.ReasonIdle, Packets: math.MaxUint64, First: math.MinInt64, Last: math.MaxInt64,
		LatLatest: math.MaxUint64, LatSum: math.MaxUint64 / 3, LatCount: 3, Hops: make([]record.HopRecord, max(fc.MaxHops, 0))}
	r.Flow.SetAddrs(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = math.MaxUint16, math.MaxUint16, math.MaxUint8
	for i := range r.Hops {
		h := &r.Hops[i]
		h.NodeID = math.MaxUint32
		for m := range record.NumMetrics {
			h.Latest[m], h.Count[m], h.Sum[m] = math.MaxUint64, 3, math.MaxUint64/3
		}
	}
	return r
}

// worstEvent is the event with the most and longest Redis fields: a flow's at a switch.
func worstEvent() event.Event {
	e := event.Event{Time: math.MinInt64, Kind: event.KindChange, Scope: event.ScopeFlow, Measurement: event.FlowHopLatency,
		Prev: math.MaxUint64, Value: math.MaxUint64, Threshold: math.MaxUint64}
	e.Key.Flow.SetAddrs(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))
	e.Key.Flow.SrcPort, e.Key.Flow.DstPort, e.Key.Flow.Proto = math.MaxUint16, math.MaxUint16, math.MaxUint8
	e.Key.Switch = math.MaxUint32
	return e
}
