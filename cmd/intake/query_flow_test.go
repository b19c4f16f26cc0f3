package main

import (
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// serveTR is a serve configuration with one report listener, the HTTP API and no periodic
// push: the detector and the flow cache at their defaults.
const serveTR = `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 1}
http: {address: '127.0.0.1:0'}
export: {period: 0s}
`

// agreeReport is a TR v2.0 INT-MD report of flow 10.0.0.1:40000 > 10.0.1.2:443 udp over
// switches 11 > 12 > 13; lat, qocc and tx are per hop, source first, and a latency of 0 is
// one the hop did not carry (the wire's "unavailable").
func agreeReport(seq uint32, lat, qocc, tx [3]uint32) telemetry.Report {
	r := collectortest.TRReport()
	r.Seq = seq
	r.NHops = 0
	for i := 2; i >= 0; i-- { // the normal form: newest (sink side) first
		h := r.AddHop()
		*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FTxUtil,
			NodeID: uint32(11 + i), HopLatency: lat[i], QueueID: 3, QueueOccupancy: qocc[i], TxUtil: tx[i]}
		if lat[i] == 0 {
			h.Fields &^= telemetry.FHopLatency
		}
	}
	// Instructions: node id, hop latency, queue id and occupancy, tx utilization: 4 words a hop.
	r.INT.Bitmap, r.INT.HopML = 0x8000|0x2000|0x1000|0x0100, 4
	return r
}

// TestFlowViewsAgree: one flow's reports into `intake serve` with the detector and the flow
// cache both on, then `intake query flow` (the detector's state) and `intake query
// flowcache-flow` (the flow cache's). Every figure both show is the same, exactly, under one
// hop number counted from the source: the path, the end-to-end latency (latest), each hop's
// switch and latest hop latency, the count of reports and the first and last seen. The
// newest report lacks hop 2's latency: the detector shows hops 1 and 3 (before, its text
// numbered them 1 and 2), the flow cache hop 2's latest from the report before. `intake decode` of the same datagrams numbers the hops as both do.
func TestFlowViewsAgree(t *testing.T) {
	trAddr, httpAddr := serveDetect(t, serveTR)
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	reports := []telemetry.Report{
		agreeReport(1, [3]uint32{100, 200, 300}, [3]uint32{5, 6, 7}, [3]uint32{10, 20, 30}),
		agreeReport(2, [3]uint32{120, 260, 310}, [3]uint32{9, 6, 1}, [3]uint32{10, 22, 30}),
		agreeReport(3, [3]uint32{130, 0, 330}, [3]uint32{9, 8, 3}, [3]uint32{12, 22, 31}),
	}
	conn, err := net.Dial("udp", trAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var datagrams [][]byte
	flow := []string{"--api", httpAddr, "10.0.0.1:40000 > 10.0.1.2:443 udp"}
	var ds detect.FlowState
	var fc flowcache.FlowJSON
	query := func(verb string, v any) string {
		t.Helper()
		code, out, errs := runVerb(append([]string{"query", verb, "--json"}, flow...)...)
		if code != 0 {
			return ""
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("query %s --json: %v\n%s%s", verb, err, out, errs)
		}
		return out
	}
	for i := range reports {
		b, err := enc.Append(nil, &reports[i])
		if err != nil {
			t.Fatal(err)
		}
		datagrams = append(datagrams, b)
		conn.Write(b)
		// Each report in both processors before the next: they are compared at one state.
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("report %d in both processors", i+1), func() bool {
			return query("flow", &ds) != "" && query("flowcache-flow", &fc) != "" && ds.Reports == uint64(i+1) && fc.Packets == uint64(i+1)
		})
	}

	// What each view holds, exactly.
	if want := []detect.HopState{{Hop: 1, SwitchID: 11, HopLatency: 130}, {Hop: 3, SwitchID: 13, HopLatency: 330}}; !reflect.DeepEqual(ds.Hops, want) {
		t.Errorf("query flow: hops %+v, want %+v", ds.Hops, want)
	}
	if ds.FlowLatency == nil || *ds.FlowLatency != 460 || !reflect.DeepEqual(ds.Path, []uint32{11, 12, 13}) {
		t.Errorf("query flow: latency %v, path %v; want 460, [11 12 13]", ds.FlowLatency, ds.Path)
	}
	type fcHop struct {
		hop    int
		node   uint32
		latest uint64
		mean   float64
	}
	var got []fcHop
	for _, h := range fc.Hops {
		got = append(got, fcHop{h.Hop, h.NodeID, *h.Latest.HopLatency, *h.Mean.HopLatency})
	}
	if want := []fcHop{{1, 11, 130, 350.0 / 3}, {2, 12, 260, 230}, {3, 13, 330, 940.0 / 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("query flowcache-flow: hops %+v, want %+v", got, want)
	}

	// Where both show a figure, it is the same.
	if !reflect.DeepEqual(ds.Path, fc.Path) {
		t.Errorf("path: query flow %v, query flowcache-flow %v", ds.Path, fc.Path)
	}
	if ds.FlowLatency == nil || fc.Latency.Latest == nil || *ds.FlowLatency != *fc.Latency.Latest {
		t.Errorf("end-to-end latency, latest: query flow %v, query flowcache-flow %v", ds.FlowLatency, fc.Latency.Latest)
	}
	if ds.Reports != fc.Packets || ds.FirstSeen.Format(time.RFC3339Nano) != fc.FirstSeen || ds.LastSeen.Format(time.RFC3339Nano) != fc.LastSeen {
		t.Errorf("reports %d, first %s, last %s (query flow); packets %d, first %s, last %s (query flowcache-flow)",
			ds.Reports, ds.FirstSeen.Format(time.RFC3339Nano), ds.LastSeen.Format(time.RFC3339Nano), fc.Packets, fc.FirstSeen, fc.LastSeen)
	}
	for _, h := range ds.Hops {
		c := fc.Hops[h.Hop-1]
		if c.Hop != h.Hop || c.NodeID != h.SwitchID || *c.Latest.HopLatency != h.HopLatency {
			t.Errorf("hop %d: query flow switch %d, latency %d; query flowcache-flow hop %d switch %d, latest %d",
				h.Hop, h.SwitchID, h.HopLatency, c.Hop, c.NodeID, *c.Latest.HopLatency)
		}
	}

	// The tables: a hop's row starts with its number, its switch and its latest hop latency,
	// written the same in both.
	rows := func(verb string) map[string]string {
		code, out, errs := runVerb(append([]string{"query", verb}, flow...)...)
		if code != 0 {
			t.Fatalf("query %s: exit %d: %s", verb, code, errs)
		}
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[0] >= "1" && f[0] <= "9" && len(f[0]) == 1 {
				m[f[0]] = strings.Join(f[1:4], " ") // switch, latency, unit
			}
		}
		return m
	}
	dRows, fRows := rows("flow"), rows("flowcache-flow")
	if want := map[string]string{"1": "11 130 ns", "3": "13 330 ns"}; !reflect.DeepEqual(dRows, want) {
		t.Errorf("query flow rows %v, want %v", dRows, want)
	}
	if want := map[string]string{"1": "11 130 ns", "2": "12 260 ns", "3": "13 330 ns"}; !reflect.DeepEqual(fRows, want) {
		t.Errorf("query flowcache-flow rows %v, want %v", fRows, want)
	}

	// decode numbers the same datagrams' hops from the source too.
	var frames [][]byte
	for _, b := range datagrams {
		frames = append(frames, udpFrame("10.0.3.1", 32766, b))
	}
	code, out, errs := runVerb("decode", writeCapture(t, frames...))
	if code != 0 {
		t.Fatalf("decode: exit %d: %s", code, errs)
	}
	last := out[strings.Index(out, "frame 3:"):]
	for _, want := range []string{
		"  hop 1       node_id=11 hop_latency=130 queue_id=3 queue_occupancy=9 tx_util=12\n" +
			"  hop 2       node_id=12 queue_id=3 queue_occupancy=8 tx_util=22\n" +
			"  hop 3       node_id=13 hop_latency=330 queue_id=3 queue_occupancy=3 tx_util=31\n",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("decode, report 3:\n%s\nwant\n%s", last, want)
		}
	}
}
