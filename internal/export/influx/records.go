package influx

import (
	"strconv"
	"sync"

	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/record"
)

// Records writes the flow cache's evicted flow records (SmartNIC sink §III-C: a flow's
// final aggregates when it leaves the cache) to the InfluxDB of export.influxdb, in the
// measurements flow_record (one point per flow) and flow_record_hop (one per hop, source
// first), through the same bounded, batching, retrying queue as the event sink. Its counters
// are those of every sink, labelled sink="influxdb_records".
type Records struct {
	*export.Queued[lineBatch]
	mu    sync.Mutex // OfferRecord may be called from more than one goroutine
	clock *export.SeriesClock
}

// lineBatch is one record already in line protocol, and how many points (lines) it holds:
// records are encoded when offered, by the goroutine that drains the eviction rings, so the
// queue keeps no reference to the cache's memory.
type lineBatch struct {
	b []byte
	n int
}

type lineBatchEncoder struct{}

func (lineBatchEncoder) Points(l *lineBatch) int { return l.n }

func (lineBatchEncoder) Encode(dst []byte, batch []lineBatch) []byte {
	for i := range batch {
		dst = append(dst, batch[i].b...)
	}
	return dst
}

// NewRecords builds the records sink for cfg (its URL set), with the export section's queue,
// flush and retry settings q.
func NewRecords(cfg Config, q export.Batching, deps export.SinkDeps) *Records {
	return &Records{Queued: export.NewQueued[lineBatch]("influxdb_records", q, cfg.Batch, lineBatchEncoder{},
		newInfluxWriter(cfg).write, deps), clock: export.NewSeriesClock(1)}
}

// OfferRecord queues r's points (a RecordSink). Two records of one flow and one time (a flow evicted between two reports of one datagram) are written a
// nanosecond apart (SeriesClock).
func (s *Records) OfferRecord(r *record.Record) {
	s.mu.Lock()
	b, n := appendRecordLines(nil, r, s.clock)
	s.mu.Unlock()
	s.Offer(&lineBatch{b, n})
}

// Drops returns the points dropped by "export.influxdb_records.<reason>" (the export
// section of GET /api/v1/status's drops), zero counts included.
func (s *Records) Drops() map[string]uint64 {
	d := map[string]uint64{}
	s.SinkStatus().AddDrops(d)
	return d
}

// AppendRecordLines appends r as line protocol and returns the number of lines: flow_record
// with tags src, dst, sport, dport, proto, reason and fields packets, latency_latest,
// latency_mean (when the reports carried hop latencies), path (string "1:2:3", source first),
// first and last (receive times, Unix ns), duration_ns; and per hop flow_record_hop with the
// flow's tags plus hop (1 = source) and switch_id, and fields <metric>_latest and
// <metric>_mean for each of hop_latency, queue_occupancy and tx_util the reports carried.
// The timestamp is the flow's last report.
func AppendRecordLines(b []byte, r *record.Record) ([]byte, int) {
	return appendRecordLines(b, r, nil)
}

// appendRecordLines is AppendRecordLines with the record's time taken from clock (nil: its
// last report's): the hop lines' series are the flow_record series' with a hop added, so one
// time a record keeps them all apart.
func appendRecordLines(b []byte, r *record.Record, clock *export.SeriesClock) ([]byte, int) {
	k := &r.Flow
	var tb [8]export.Tag
	tags := append(tb[:0], export.Tag{K: "dport", V: strconv.Itoa(int(k.DstPort))}, export.Tag{K: "dst", V: k.DstAddr().String()},
		export.Tag{K: "proto", V: strconv.Itoa(int(k.Proto))}, export.Tag{K: "reason", V: r.Reason.String()},
		export.Tag{K: "sport", V: strconv.Itoa(int(k.SrcPort))}, export.Tag{K: "src", V: k.SrcAddr().String()})
	start := len(b)
	b = append(b, "flow_record"...)
	b = appendTags(b, tags)
	ts := r.Last
	if clock != nil {
		ts = clock.At(b[start:], ts)
	}
	b = appendIntField(b, ' ', "packets", r.Packets)
	if r.LatCount > 0 {
		b = appendIntField(b, ',', "latency_latest", r.LatLatest)
		b = appendFloatField(b, "latency_mean", r.LatMean())
	}
	b = append(b, `,path="`...)
	b = append(b, r.PathString()...)
	b = append(b, '"')
	b = appendIntField(b, ',', "first", uint64(r.First))
	b = appendIntField(b, ',', "last", uint64(r.Last))
	b = appendIntField(b, ',', "duration_ns", uint64(max(r.Last-r.First, 0)))
	b = appendTime(b, ts)
	n := 1
	var line []byte
	for i := range r.Hops {
		h := &r.Hops[i]
		ht := append(tags[:len(tags):len(tags)], export.Tag{K: "hop", V: strconv.Itoa(i + 1)}, export.Tag{K: "switch_id", V: strconv.FormatUint(uint64(h.NodeID), 10)})
		export.SortTags(ht)
		line = appendTags(append(line[:0], "flow_record_hop"...), ht)
		sep := byte(' ')
		for m := range record.NumMetrics {
			if h.Count[m] > 0 {
				line = appendIntField(line, sep, m.String()+"_latest", h.Latest[m])
				line = appendFloatField(line, m.String()+"_mean", h.Mean(m))
				sep = ','
			}
		}
		if sep == ' ' { // a line needs a field: this hop's reports carried none of the metrics
			continue
		}
		b = appendTime(append(b, line...), ts)
		n++
	}
	return b, n
}

// appendFloatField appends ",name=v" with v as an InfluxDB float.
func appendFloatField(b []byte, name string, v float64) []byte {
	b = append(b, ',')
	b = append(b, name...)
	b = append(b, '=')
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}
