// Package collectortest runs the collector `intake serve` builds inside a test, and gives
// the inputs and requests such tests share: the collector's own tests (package collector)
// and the commands' tests (cmd/intake: a query verb needs a collector to ask). It is
// imported only from _test.go files.
package collectortest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Start starts the collector serve runs, on the defaults changed by mod, with one
// loopback listener per input a test sends to (report, dta, int-label, on ports the kernel
// picks), the HTTP API on a free port and the DTA stores in a temporary directory. It is
// stopped when the test ends.
func Start(t testing.TB, mod func(*config.Config)) *collector.Collector {
	t.Helper()
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners = []ingest.Listener{
		{Format: "report", Address: "127.0.0.1", Sockets: 1},
		{Format: "dta", Address: "127.0.0.1", Sockets: 1},
		{Format: "int-label", Address: "127.0.0.1", Sockets: 1},
	}
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.DTA.DataDir = t.TempDir()
	if mod != nil {
		mod(&cfg)
	}
	return Run(t, cfg)
}

// Run starts a collector on cfg as it is, stopped when the test ends.
func Run(t testing.TB, cfg config.Config) *collector.Collector {
	t.Helper()
	c, err := collector.New(cfg, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}

// ReportSender dials addr over UDP and returns a function that sends reports encoded with
// dc: one report per datagram, or several as one batch (DTA).
func ReportSender(t testing.TB, addr string, dc wire.Config) func(rs ...telemetry.Report) {
	t.Helper()
	enc, err := wire.NewEncoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func(rs ...telemetry.Report) {
		t.Helper()
		b, err := enc.Append(nil, &rs[0])
		if len(rs) > 1 {
			b, err = enc.AppendBatch(nil, rs)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// DTAReport is an empty DTA report of operation op.
func DTAReport(op telemetry.DTAOp) telemetry.Report {
	r := telemetry.Report{Format: telemetry.FormatDTA}
	r.DTA.Op = op
	return r
}

// DTAFixture has tr process DTA reports of every primitive, then flushes them: Key-Write
// 0xdeadbeef = 0x01020304 (redundancy 2), key 9 written 0xbbbbbbbb (redundancy 4) then
// 0xaaaaaaaa (redundancy 2: ambiguous), Key-Increment 123 twice by 5, Append 0 to 5 to list 3,
// and Postcards 101 to 105 for key 42 at hops 1 to 5.
func DTAFixture(tr *dta.Translator) {
	kw := func(key, val uint32, n uint8) {
		r := DTAReport(telemetry.DTAKeyWrite)
		r.DTA.Redundancy, r.DTA.KeyLen, r.DTA.DataLen = n, 4, 4
		binary.BigEndian.PutUint32(r.DTA.Key[:], key)
		binary.BigEndian.PutUint32(r.DTA.Data[:], val)
		tr.Process(0, &r)
	}
	kw(0xdeadbeef, 0x01020304, 2)
	kw(9, 0xbbbbbbbb, 4) // then 0xaaaaaaaa in copies 0-1 only: 2 votes each, ambiguous
	kw(9, 0xaaaaaaaa, 2)
	ki := DTAReport(telemetry.DTAKeyIncrement)
	ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 1, 4, 5
	binary.BigEndian.PutUint32(ki.DTA.Key[:], 123)
	tr.Process(0, &ki)
	tr.Process(0, &ki)
	for i := range 6 {
		a := DTAReport(telemetry.DTAAppend)
		a.DTA.ListID, a.DTA.DataLen = 3, 4
		binary.BigEndian.PutUint32(a.DTA.Data[:], uint32(i))
		tr.Process(0, &a)
	}
	for hop := 1; hop <= 5; hop++ {
		pc := DTAReport(telemetry.DTAPostcard)
		pc.DTA.KeyLen, pc.DTA.DataLen, pc.DTA.Hop = 4, 4, uint8(hop)
		binary.BigEndian.PutUint32(pc.DTA.Key[:], 42)
		binary.BigEndian.PutUint32(pc.DTA.Data[:], uint32(100+hop))
		tr.Process(0, &pc)
	}
	tr.Flush(0)
}

// FlowHop is a hop of FlowReport: switch, hop latency, queue occupancy, tx utilization.
type FlowHop [4]uint32

// FlowReport is a report of flow 10.0.0.1:sport > 10.0.0.2:80 udp received at t, over hops
// given source first, each with a switch id, hop latency, queue occupancy and tx utilization.
func FlowReport(sport uint16, t int64, hops ...FlowHop) *telemetry.Report {
	r := &telemetry.Report{Has: telemetry.HasFlow, RecvTime: t}
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = sport, 80, 17
	for i := len(hops) - 1; i >= 0; i-- {
		h := r.AddHop()
		h.Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueOccupancy | telemetry.FTxUtil
		h.NodeID, h.HopLatency, h.QueueOccupancy, h.TxUtil = hops[i][0], hops[i][1], hops[i][2], hops[i][3]
	}
	return r
}

// StartFlowCache starts a collector with the flow cache alone (a small one: 16 rows of 4
// buckets, linear histograms of 4 bins) and the HTTP API, and returns it and the API's
// address.
func StartFlowCache(t testing.TB, mod func(*config.Config)) (*collector.Collector, string) {
	t.Helper()
	c := Start(t, func(cfg *config.Config) {
		cfg.Detect.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = false, false, false
		cfg.FlowCache.Rows, cfg.FlowCache.Buckets = 16, 4
		cfg.FlowCache.Histograms.Scale, cfg.FlowCache.Histograms.Bins = "linear", 4
		cfg.FlowCache.Histograms.Width.HopLatency = 10
		cfg.FlowCache.Histograms.Width.Latency = 25
		if mod != nil {
			mod(cfg)
		}
	})
	return c, c.API.Addr()
}

// FlowCacheFixture has StartFlowCache's flow cache process three reports, then flushes
// them: two of flow sport 1000 over switches 1 > 2 at times 100 and 200, one of sport 2000
// over 1 > 3 at 300.
func FlowCacheFixture(c *collector.Collector) {
	c.FlowCache.Process(0, FlowReport(1000, 100, FlowHop{1, 10, 5, 7}, FlowHop{2, 20, 0, 8}))
	c.FlowCache.Process(0, FlowReport(1000, 200, FlowHop{1, 11, 6, 7}, FlowHop{2, 25, 3, 9}))
	c.FlowCache.Process(0, FlowReport(2000, 300, FlowHop{1, 40, 1, 1}, FlowHop{3, 50, 1, 1}))
	c.FlowCache.Flush(0)
}

// TRReport is a TR v2.0 report of flow 10.0.0.1:40000 > 10.0.1.2:443 udp from node 5,
// sequence 1, over switches 1, 2 and 3 (source first), every hop with the same values.
func TRReport() telemetry.Report {
	var r telemetry.Report
	r.Format = telemetry.FormatTR20
	r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
	r.NodeID, r.Seq, r.HWID = 5, 1, 1
	r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	r.Flags = telemetry.FlagFlow
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 40000, 443, 17
	r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapUDP, Trailer: 2}
	r.INT = telemetry.INTHeader{Version: telemetry.INT2x, ShimType: 1, Bitmap: 0xff00, HopML: 11, RemHops: 3, ShimExtra: 0x17}
	for i := 0; i < 3; i++ {
		h := r.AddHop()
		*h = telemetry.Hop{Fields: 0x07ff, NodeID: uint32(3 - i), IngressPort: 1, EgressPort: 2,
			HopLatency: 1000, QueueID: 3, QueueOccupancy: 40, IngressTS: 1e9, EgressTS: 1e9 + 1000,
			L2IngressPort: 7, L2EgressPort: 8, TxUtil: 55}
	}
	return r
}

// GetJSON decodes the JSON answer to GET u into v; any status but 200 fails the test.
func GetJSON(t testing.TB, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// StartCluster starts n collectors (Start, changed by mod for member i) as the members of
// one cluster, m0 to m(n-1), each with its API on a loopback port free when it was chosen
// (members must know each other's address before any of them listens).
func StartCluster(t testing.TB, n int, mod func(i int, cfg *config.Config)) []*collector.Collector {
	t.Helper()
	var members []cluster.Member
	for i := range n {
		members = append(members, cluster.Member{Name: fmt.Sprintf("m%d", i), API: testutil.FreeAddr(t)})
	}
	cs := make([]*collector.Collector, n)
	for i := range n {
		cs[i] = Start(t, func(cfg *config.Config) {
			cfg.HTTP.Address = members[i].API
			cfg.Cluster.Self, cfg.Cluster.Members = members[i].Name, members
			if mod != nil {
				mod(i, cfg)
			}
		})
	}
	return cs
}
