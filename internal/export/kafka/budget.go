package kafka

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/kafkapb"
)

// kafkaMsgBytes bounds a message the Kafka client holds in flight (an event, a snapshot or
// a report, encoded, and the client's record around it). It is an estimate, not measured:
// that takes a broker that accepts connections and never answers.
const kafkaMsgBytes = 1024

// Budget is what the sink's queues and the client hold when full (docs/config.md,
// "Budget"): each queue at kafka.queue items of the largest size the sink makes them (flow
// records from the flow cache fc), the reports rings of workers ingest workers, and
// kafka.buffered messages in flight per topic. TestBudgetReal fills the queues and
// measures them.
func (k *Config) Budget(fc export.Records, workers int) budget.Budget {
	if !k.Enabled() {
		return nil
	}
	kq := int64(k.Queue)
	ev := int64(unsafe.Sizeof(event.Event{}))
	b := budget.Budget{{Component: "export", Part: "kafka queues", Memory: budget.Add(export.SinkBase, budget.Mul(2, kq, ev)),
		Note: fmt.Sprintf("events and snapshots: 2 × %d × %d B (kafka.queue)", kq, ev)}}
	msg := int64(kafkaMsgBytes)
	if fc.Enabled && k.Topics.Flows != "" {
		m := &kafkapb.Message{SchemaVersion: kafkapb.SchemaVersion, Body: &kafkapb.Message_Flow{Flow: RecordMessage(export.WorstRecord(fc))}}
		v, _ := (&Sink{json: k.Encoding == "json"}).encode(nil, m)
		per := int64(unsafe.Sizeof(kafkaBytes{})) + export.AllocBytes(FlowKeyLen) + export.AllocBytes(cap(v))
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
	return append(b, budget.Item{Component: "export", Part: "kafka in flight", Memory: budget.Mul(topics, int64(k.Buffered), msg),
		Note: fmt.Sprintf("%d topics × %d messages × %d B (kafka.buffered, the client's records)", topics, k.Buffered, msg)})
}
