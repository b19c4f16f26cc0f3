package export_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/influx"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/record"
)

// evicted is a flow record as the cache evicts it: two hops, the second without queue
// samples, and a third whose reports carried none of the metrics (no line for it).
func evicted() *record.Record {
	r := &record.Record{Reason: record.ReasonIdle, Packets: 4, First: base, Last: base + 3*int64(time.Second),
		LatLatest: 300, LatSum: 1000, LatCount: 4}
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 5000, 80, 6
	r.Hops = []record.HopRecord{
		{NodeID: 7, Latest: [3]uint64{100, 12, 50}, Count: [3]uint64{4, 4, 4}, Sum: [3]uint64{410, 50, 200}},
		{NodeID: 9, Latest: [3]uint64{200, 0, 0}, Count: [3]uint64{4, 0, 0}, Sum: [3]uint64{590, 0, 0}},
		{NodeID: 11},
	}
	return r
}

func TestRecordLines(t *testing.T) {
	b, n := influx.AppendRecordLines(nil, evicted())
	want := "flow_record,dport=80,dst=10.0.0.2,proto=6,reason=idle,sport=5000,src=10.0.0.1 packets=4i,latency_latest=300i,latency_mean=250,path=\"7:9:11\",first=" + sec(0) + "i,last=" + sec(3) + "i,duration_ns=3000000000i " + sec(3) + "\n" +
		"flow_record_hop,dport=80,dst=10.0.0.2,hop=1,proto=6,reason=idle,sport=5000,src=10.0.0.1,switch_id=7 hop_latency_latest=100i,hop_latency_mean=102.5,queue_occupancy_latest=12i,queue_occupancy_mean=12.5,tx_util_latest=50i,tx_util_mean=50 " + sec(3) + "\n" +
		"flow_record_hop,dport=80,dst=10.0.0.2,hop=2,proto=6,reason=idle,sport=5000,src=10.0.0.1,switch_id=9 hop_latency_latest=200i,hop_latency_mean=147.5 " + sec(3) + "\n"
	if string(b) != want || n != 3 {
		t.Errorf("%d lines:\n%s\nwant 3:\n%s", n, b, want)
	}
}

// TestInfluxRecords writes an evicted record into a real influxd and reads every field back.
func TestInfluxRecords(t *testing.T) {
	s := startInflux(t)
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = s.url, "records"
	reg := metrics.NewRegistry()
	sink := influx.NewRecords(cfg.InfluxDB, cfg.Batching(), export.SinkDeps{Metrics: reg})
	if err := sink.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sink.OfferRecord(evicted())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sink.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sink.SinkStatus(); st.Sent != 3 || sink.Dropped() != 0 {
		t.Fatalf("sent %d, dropped %d; want 3, 0", st.Sent, sink.Dropped())
	}
	got := influxQuery(t, s, "records", "SELECT * FROM flow_record; SELECT * FROM flow_record_hop")
	want := "flow_record [time dport dst duration_ns first last latency_latest latency_mean packets path proto reason sport src]\n" +
		"  [" + sec(3) + " 80 10.0.0.2 3000000000 " + sec(0) + " " + sec(3) + " 300 250 4 7:9:11 6 idle 5000 10.0.0.1]\n" +
		"flow_record_hop [time dport dst hop hop_latency_latest hop_latency_mean proto queue_occupancy_latest queue_occupancy_mean reason sport src switch_id tx_util_latest tx_util_mean]\n" +
		"  [" + sec(3) + " 80 10.0.0.2 1 100 102.5 6 12 12.5 idle 5000 10.0.0.1 7 50 50]\n" +
		"  [" + sec(3) + " 80 10.0.0.2 2 200 147.5 6 <nil> <nil> idle 5000 10.0.0.1 9 <nil> <nil>]\n"
	if got != want {
		t.Errorf("stored:\n%s\nwant:\n%s", got, want)
	}
}

// TestInfluxRecordsRestart: the sink can be started again after Stop, as a restarted
// collector does, and counts both runs' points.
func TestInfluxRecordsRestart(t *testing.T) {
	s := startInflux(t)
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = s.url, "restart"
	sink := influx.NewRecords(cfg.InfluxDB, cfg.Batching(), export.SinkDeps{})
	for i := 0; i < 2; i++ {
		if err := sink.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := evicted()
		r.Last += int64(i) // a second point, not an overwrite
		sink.OfferRecord(r)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := sink.Stop(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := sink.SinkStatus(); st.Sent != 6 {
		t.Fatalf("sent %d, want 6", st.Sent)
	}
	if got := influxQuery(t, s, "restart", "SELECT count(packets) FROM flow_record"); got != "flow_record [time count]\n  [0 2]\n" {
		t.Errorf("stored: %q", got)
	}
}

// TestInfluxRecordsSameTime: two records of one flow with one last-report time (the flow
// evicted between two reports of one datagram) are both stored, the second a nanosecond
// after the first with its hop lines.
func TestInfluxRecordsSameTime(t *testing.T) {
	s := startInflux(t)
	cfg := exportConfig()
	cfg.InfluxDB.URL, cfg.InfluxDB.Database = s.url, "records_same"
	sink := influx.NewRecords(cfg.InfluxDB, cfg.Batching(), export.SinkDeps{Metrics: metrics.NewRegistry()})
	if err := sink.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := evicted()
	again.Packets = 1
	sink.OfferRecord(evicted())
	sink.OfferRecord(again)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sink.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sink.SinkStatus(); st.Sent != 6 || sink.Dropped() != 0 {
		t.Fatalf("sent %d, dropped %d; want 6, 0", st.Sent, sink.Dropped())
	}
	next := fmt.Sprint(base + 3*int64(time.Second) + 1)
	got := influxQuery(t, s, "records_same", "SELECT packets FROM flow_record; SELECT count(hop_latency_latest) FROM flow_record_hop WHERE time = "+next)
	want := "flow_record [time packets]\n  [" + sec(3) + " 4]\n  [" + next + " 1]\n" +
		"flow_record_hop [time count]\n  [" + next + " 2]\n"
	if got != want {
		t.Errorf("stored:\n%s\nwant:\n%s", got, want)
	}
}
