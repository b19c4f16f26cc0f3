package flowcache_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
)

// TestAccuracy is the paper's §IV-E: a synthetic trace whose per-hop metrics are drawn from
// exponential distributions (5 hops; 4 fields: node id, hop latency, queue occupancy, tx
// utilization) is replayed through the collector's workers at full speed (a capture run:
// the highest rate the collector sustains, without a socket in between), and the exported
// histograms (the API's JSON form) are compared bin by bin with the ground truth computed
// from the trace. The loss rate 1 − observed/true occurrences must stay below 0.04%, per
// metric: the end-to-end latency (the sum over the hops, Fig. 6a) and the first switch's
// queue occupancy and tx utilization (Fig. 6b, 6c), and every other switch's histograms too.
func TestAccuracy(t *testing.T) {
	gc := gen.DefaultConfig()
	gc.Format, gc.Mode, gc.Hops, gc.Bitmap = "tr2.0", "md", 5, 0xb100 // bits 0, 2, 3, 7
	gc.Flows, gc.Switches = 4096, 16
	gc.Latency = gen.Dist{Kind: gen.DistExp, A: 50}
	gc.Queue = gen.Dist{Kind: gen.DistExp, A: 30}
	gc.Util = gen.Dist{Kind: gen.DistExp, A: 20}
	g, err := gen.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(200000)
	if testing.Short() {
		n = 20000
	}

	// The trace as a capture, and the ground truth from the reports it carries.
	type key struct {
		sw uint32
		m  flowcache.Metric
	}
	const bins = 4096
	truth := map[key][]uint64{}
	e2e := make([]uint64, bins)
	bin := func(v uint64) int { return int(min(v, bins-1)) }
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	frame := pcap.UDPFrame{SrcMAC: [6]byte{2, 0, 0, 0, 0, 1}, DstMAC: [6]byte{2, 0, 0, 0, 0, 100},
		Src: netip.MustParseAddrPort("10.0.3.1:4000"), Dst: netip.MustParseAddrPort("10.0.0.100:32766")}
	var fb []byte
	var reports uint64
	err = g.Walk(n, func(i uint64, b []byte, rs []telemetry.Report) error {
		for ri := range rs {
			reports++
			var lat uint64
			for _, h := range rs[ri].HopList() {
				for _, mv := range []struct {
					f telemetry.Field
					m flowcache.Metric
					v uint32
				}{{telemetry.FHopLatency, flowcache.HopLatency, h.HopLatency}, {telemetry.FQueueOccupancy, flowcache.QueueOccupancy, h.QueueOccupancy}, {telemetry.FTxUtil, flowcache.TxUtil, h.TxUtil}} {
					if h.Fields&mv.f == 0 {
						t.Fatalf("report %d: hop without %v", i, mv.m)
					}
					k := key{h.NodeID, mv.m}
					if truth[k] == nil {
						truth[k] = make([]uint64, bins)
					}
					truth[k][bin(uint64(mv.v))]++
				}
				lat += uint64(h.HopLatency)
			}
			e2e[bin(lat)]++
		}
		fb = pcap.AppendUDPFrame(fb[:0], &frame, b)
		return w.WritePacket(testTime(i), fb)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	fcfg := cfg.FlowCache
	fcfg.Rows, fcfg.Buckets = 1024, 12
	fcfg.Histograms = flowcache.HistConfig{Scale: "linear", Bins: bins, MaxSwitches: 64,
		Width: flowcache.Widths{HopLatency: 1, QueueOccupancy: 1, TxUtil: 1, Latency: 1}}
	if err := fcfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fc := flowcache.New(fcfg)
	coll, err := ingest.New(cfg, metrics.NewRegistry(), fc)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := coll.RunCapture(rd)
	if err != nil {
		t.Fatal(err)
	}
	st := coll.Status()
	if st.ReportsDecoded != reports {
		t.Fatalf("decoded %d reports of %d (%+v)", st.ReportsDecoded, reports, st.DecodeErrors)
	}

	// Compare bin by bin: an observed count above the truth would be an error, not a loss.
	loss := func(name string, want []uint64, got flowcache.HistJSON) float64 {
		obs := make([]uint64, bins)
		for _, b := range got.Counts {
			obs[b.Lo] = b.Count
		}
		var tw, to uint64
		for i := range want {
			if obs[i] > want[i] {
				t.Errorf("%s bin %d: observed %d > true %d", name, i, obs[i], want[i])
			}
			tw += want[i]
			to += min(obs[i], want[i])
		}
		if tw == 0 {
			t.Fatalf("%s: empty ground truth", name)
		}
		return 1 - float64(to)/float64(tw)
	}
	h := fc.Histograms()
	worst := 0.0
	e := loss("e2e latency", e2e, h.E2E())
	worst = max(worst, e)
	_, path := g.Flow(0) // flow 0's path, source first: its first switch
	var firstQ, firstU float64
	for k, want := range truth {
		got, ok := h.Histogram(k.sw, k.m)
		if !ok {
			t.Fatalf("switch %d has no histogram", k.sw)
		}
		l := loss("switch "+itoa(k.sw)+" "+k.m.String(), want, got)
		worst = max(worst, l)
		if k.sw == path[0] && k.m == flowcache.QueueOccupancy {
			firstQ = l
		}
		if k.sw == path[0] && k.m == flowcache.TxUtil {
			firstU = l
		}
	}
	rate := float64(reports) / sum.Elapsed.Seconds()
	t.Logf("%d reports (5 hops, 4 fields) in %s: %.0f reports/s; loss rate: e2e latency %.6f%%, first switch (%d) queue occupancy %.6f%%, tx util %.6f%%, worst of %d histograms %.6f%%",
		reports, sum.Elapsed, rate, 100*e, path[0], 100*firstQ, 100*firstU, len(truth)+1, 100*worst)
	if worst >= 0.0004 {
		t.Errorf("loss rate %.6f%%: want below 0.04%%", 100*worst)
	}
}

func itoa(v uint32) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + v%10)}, b...)
		v /= 10
		if v == 0 {
			return string(b)
		}
	}
}

func testTime(i uint64) time.Time { return time.Unix(1_700_000_000, int64(i)*1000) }
