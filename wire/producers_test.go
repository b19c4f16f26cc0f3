package wire

import (
	"fmt"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// Byte vectors of real producers, assembled field by field from each producer's published
// format (the file named in each test), with the values the producer's documentation or
// its own tests give. None is built by intake's encoder: these are what intake must read,
// deviations included (docs/wire-formats.md, "Producers and their quirks").

// quirked returns a decoder with the default configuration and the named quirks.
func quirked(t *testing.T, names ...string) *Decoder {
	t.Helper()
	cfg := DefaultConfig()
	for _, n := range names {
		if err := cfg.Quirks.Set(n); err != nil {
			t.Fatal(err)
		}
	}
	return mustDecoder(t, cfg)
}

// decodeInner decodes an input holding one report and returns it with its inner error.
func decodeInner(t *testing.T, d *Decoder, in Input, b []byte) (telemetry.Report, *Error) {
	t.Helper()
	var rd Reader
	var r telemetry.Report
	rd.Reset(d, in, b)
	if err := rd.Next(&r); err != nil {
		t.Fatalf("decode: %v", err)
	}
	var ie *Error
	if e := rd.InnerErr(); e != nil {
		c := *e
		ie = &c
	}
	var next telemetry.Report
	if err := rd.Next(&next); err != Done {
		t.Fatalf("a second report: %v", err)
	}
	return r, ie
}

// decodeErr decodes an input that must fail with exactly want.
func decodeErr(t *testing.T, d *Decoder, in Input, b []byte, want Error) {
	t.Helper()
	rs, errs := d.DecodeAll(in, b)
	if len(rs) != 0 || len(errs) != 1 || errs[0] != want {
		t.Fatalf("got %d reports, errors %+v; want %+v", len(rs), errs, want)
	}
}

func wantInner(t *testing.T, got *Error, want Error) {
	t.Helper()
	if got == nil || *got != want {
		t.Fatalf("inner error %+v, want %+v", got, want)
	}
}

func noInner(t *testing.T, got *Error) {
	t.Helper()
	if got != nil {
		t.Fatalf("inner error %v", got)
	}
}

// Intel host-int (Host_INT_fmt.md in github.com/intel/host-int): an INT/IPv4 report (TR
// v0.5 fixed header with NProto 4, the sink node id, the data packet from its IPv4 header
// with only 20 bytes of TCP) whose INT uses host-int's shim Type 3: after the stack a
// 4-byte flow sequence number, and the tail the sink removed. Length 12 = shim + header + 2
// hops of 4 words + sequence number, as the document's sink figure shows (03 .. 0c ..).
// Source and sink fill the "NA" egress (source) and ingress (sink) fields with the values
// of the other.
const hostINTReport = "04200000 00000007 11223344" + // Ver 0, NProto 4, F, hw_id 0; seq 7; timestamp
	"0000000b" + // sink node id 11
	"455c0058 00004000 40060000 0a000001 0a000002" + // IPv4, DSCP 0x17 (the configured mark), 88 bytes, TCP
	"9c401451 00000001 00000000 5010ffff 00000000" + // TCP 40000 > 5201, the first 20 bytes
	"03000c00" + // shim: Type 3, Length 12
	"00040202 cc000000" + // Ver 0, InsCnt 4, MaxHopCnt 2, TotalHopCnt 2; bitmap 0xCC00
	"0000000b 00030003 001e8480 001e8480" + // sink: node 11, port 3 (NA = egress), ts 2000000 (NA = egress)
	"0000000a 00020002 000f4240 000f4240" + // source: node 10, port 2, ts 1000000
	"00000064" // flow sequence number 100

func TestProducerHostINT(t *testing.T) {
	b := hx(t, hostINTReport)
	r, ie := decodeInner(t, quirked(t, "host_int"), InputReport, b)
	noInner(t, ie)
	if r.Format != telemetry.FormatTR05 || r.TR.NProto != 4 || r.TR.SinkNodeID != 11 || r.Seq != 7 || r.IngressTS != 0x11223344 || r.Flags != telemetry.FlagFlow {
		t.Errorf("report %+v %+v", r.TR, r)
	}
	if want := flow4("10.0.0.1", "10.0.0.2", 40000, 5201, protoTCP); r.Flow != want {
		t.Errorf("flow %+v", r.Flow)
	}
	in := r.INT
	if in.Version != telemetry.INT05 || in.ShimType != 3 || in.Bitmap != 0xcc00 || in.MaxHops != 2 || !in.HasSourceSeq || in.SourceSeq != 100 || in.OrigPort != 0 {
		t.Errorf("int %+v", in)
	}
	all := telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FIngressTS | telemetry.FEgressTS
	checkHops(t, &r,
		hop(all, telemetry.Hop{NodeID: 11, IngressPort: 3, EgressPort: 3, IngressTS: 2000000, EgressTS: 2000000}),
		hop(all, telemetry.Hop{NodeID: 10, IngressPort: 2, EgressPort: 2, IngressTS: 1000000, EgressTS: 1000000}))

	// Without the quirk the report stays (its header is valid), without INT, and the inner
	// error names the deviation.
	r, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, b)
	wantInner(t, ie, Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 56, Value: 3, Setting: "quirks.host_int"})
	if r.TR.SinkNodeID != 11 || r.NHops != 0 || r.INT.Version != telemetry.INTNone || r.Flow.DstPort != 5201 {
		t.Errorf("without the quirk: %+v", r)
	}

	// The source's packet (INT_05_OVER_TCP_UDP over UDP): one hop, then the sequence number
	// and the tail keeping the original protocol and port. Length 9.
	frame := hx(t, "020000000002 020000000001 0800"+
		"455c0044 00004000 40110000 0a000001 0a000002"+ // IPv4 68 bytes, UDP
		"9c401451 00300000"+ // UDP 40000 > 5201, 48 bytes
		"03000900 00040201 cc000000"+ // shim Type 3, Length 9; InsCnt 4, MaxHop 2, TotalHop 1
		"0000000a 00020002 000f4240 000f4240"+ // source hop
		"00000001"+ // flow sequence number 1
		"11145100"+ // tail: protocol 17, destination port 5201, reserved
		"61626364")
	r, ie = decodeInner(t, quirked(t, "host_int"), InputINTMD, frame)
	noInner(t, ie)
	if r.INT.SourceSeq != 1 || r.INT.OrigProto != 17 || r.INT.OrigPort != 5201 || r.NHops != 1 || r.Hops[0].NodeID != 10 || r.Inner.Trailer != 4 {
		t.Errorf("source packet: int %+v hops %d inner %+v", r.INT, r.NHops, r.Inner)
	}
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, frame,
		Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 42, Value: 3, Setting: "quirks.host_int"})
}

// Intel host-int over TCP with options: the shim follows the first 20 bytes of TCP, the
// options follow INT (Host_INT_fmt.md). Data offset 8 (12 bytes of options, which the
// sink's report drops with everything after INT). Without the quirk the decoder looked for
// INT after the options, inside the stack, and named no quirk; the hint now finds the
// host-int shim before the options, in a report and in the source's packet alike.
func TestProducerHostINTTCPOptions(t *testing.T) {
	report := hx(t, strings.Replace(hostINTReport, "9c401451 00000001 00000000 5010ffff 00000000", "9c401451 00000001 00000000 8010ffff 00000000", 1))
	r, ie := decodeInner(t, quirked(t, "host_int"), InputReport, report)
	noInner(t, ie)
	if r.INT.ShimType != 3 || r.INT.SourceSeq != 100 || r.NHops != 2 || r.Inner.TCPOpts != 12 || r.Flow.DstPort != 5201 {
		t.Errorf("with the quirk: int %+v hops %d inner %+v", r.INT, r.NHops, r.Inner)
	}
	r, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, report)
	wantInner(t, ie, Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 56, Value: 3, Setting: "quirks.host_int"})
	if r.NHops != 0 || r.INT.Version != telemetry.INTNone || r.TR.SinkNodeID != 11 {
		t.Errorf("without the quirk: %+v", r)
	}
	// Unmarked (DSCP 0): the decoder only probes, and host-int's signature is still named.
	unmarked := strings.Replace(hostINTReport, "455c0058", "45000058", 1)
	unmarked = strings.Replace(unmarked, "5010ffff", "8010ffff", 1)
	_, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, hx(t, unmarked))
	wantInner(t, ie, Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 56, Value: 3, Setting: "quirks.host_int"})

	// The source's packet: TCP with a timestamp option after INT, then the payload.
	frame := hx(t, "020000000002 020000000001 0800"+
		"455c005c 00004000 40060000 0a000001 0a000002"+ // IPv4 92 bytes, TCP
		"9c401451 00000001 00000000 8018ffff 00000000"+ // TCP 40000 > 5201, data offset 8
		"03000900 00040201 cc000000 0000000a 00020002 000f4240 000f4240 00000001 06145100"+ // host-int INT, tail
		"0101080a 00000001 00000002"+ // options: NOP, NOP, timestamps
		"61626364")
	r, ie = decodeInner(t, quirked(t, "host_int"), InputINTMD, frame)
	noInner(t, ie)
	if r.INT.SourceSeq != 1 || r.NHops != 1 || r.Hops[0].NodeID != 10 || r.INT.OrigProto != 6 {
		t.Errorf("source packet: int %+v hops %d", r.INT, r.NHops)
	}
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, frame,
		Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 54, Value: 3, Setting: "quirks.host_int"})
}

// A specification shim before the TCP options (INT v1.0 and later allow either place) in a
// packet whose DSCP committed the decoder is named by the setting that reads it there,
// tcp_shim_before_options; unmarked, the payload is simply no INT.
func TestTCPShimBeforeOptionsHint(t *testing.T) {
	pkt := func(dscp string) []byte {
		return hx(t, "020000000002 020000000001 0800"+
			"45"+dscp+"0058 00004000 40060000 0a000001 0a000002"+ // IPv4 88 bytes, TCP
			"9c401451 00000001 00000000 8018ffff 00000000"+ // TCP, data offset 8
			"10070000 20000206 90000000 00000000 00000002 01000020 00000001 01000010"+ // v2.1 MD, 2 hops
			"0101080a 00000001 00000002"+ // options
			"61626364")
	}
	cfg := DefaultConfig()
	cfg.TCPShimBeforeOptions = true
	r, ie := decodeInner(t, mustDecoder(t, cfg), InputINTMD, pkt("5c"))
	noInner(t, ie)
	if r.NHops != 2 || r.INT.Version != telemetry.INT2x || r.Inner.TCPOpts != 12 {
		t.Errorf("with the setting: int %+v hops %d", r.INT, r.NHops)
	}
	// After the options the decoder meets the INT header's last word, no shim type.
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, pkt("5c"),
		Error{Reason: BadValue, Header: "int shim", Field: "type", Offset: 66, Setting: "tcp_shim_before_options: true"})
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, pkt("00"), Error{Reason: NotTelemetry, Header: "int-md"})
}

// GEANT int-platforms, p4src/int_v1.0/include/headers.p4 and int_transit.p4: a TR v1.0
// report (Ver 1, Len 4, NProt 0, F; §5.6 of the spec digest) carrying a UDP packet marked
// with DSCP 0x20, whose INT v1.0 header has instruction bits 0-7 in the mask's low byte
// (the transit tests mask & 0x00F0 for bits 0-3 and & 0x000F for 4-7), 8-byte timestamps
// (int_ingress_tstamp_t, int_egress_tstamp_t: bit<64>), level-2 ports as 16+16 bits
// (int_level2_port_ids_t) and its per-source sequence number in the last 16 bits.
func geantReport(t testing.TB, mask string) []byte {
	return hx(t, "14000040 00000002 00000005 5ad88132"+ // Ver 1, Len 4, F; switch 2, seq 5, ingress ts
		"020000000002 020000000001 0800"+
		"45800050 00004000 40110000 0a000001 0a000002"+ // IPv4, DSCP 0x20, 80 bytes
		"13881388 003c0000"+ // UDP 5000 > 5000
		"01000d00"+ // shim: type 1, Length 13 (shim, header, one hop of 10 words), DSCP 0
		"10000a07"+mask+"0009"+ // Ver 1, HopML 10, RemHop 7; mask; source sequence number 9
		"00000002 00010002 000005dc 0000000c"+ // switch 2; ports 1/2; hop latency 1500; queue 0, occupancy 12
		"0000000000989680 0000000000989e50"+ // ingress ts 10000000, egress ts 10002000 (8 bytes each)
		"00030004 00000064") // level-2 ports 3/4; tx utilization 100
}

func TestProducerGEANT(t *testing.T) {
	all := telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency | telemetry.FQueueID |
		telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FL2IngressPort | telemetry.FL2EgressPort | telemetry.FTxUtil
	want := hop(all, telemetry.Hop{NodeID: 2, IngressPort: 1, EgressPort: 2, HopLatency: 1500, QueueOccupancy: 12,
		IngressTS: 10000000, EgressTS: 10002000, L2IngressPort: 3, L2EgressPort: 4, TxUtil: 100})
	// GEANT's own order (0x00FF), and the specification's order (0xFF00) that a GEANT
	// switch with 8-byte timestamps could be configured with: both mean bits 0-7.
	for _, mask := range []string{"00ff", "ff00"} {
		b := geantReport(t, mask)
		r, ie := decodeInner(t, quirked(t, "geant"), InputReport, b)
		noInner(t, ie)
		if r.Format != telemetry.FormatTR10 || r.NodeID != 2 || r.Seq != 5 || r.INT.Version != telemetry.INT10 || r.INT.HopML != 10 || !r.INT.HasSourceSeq || r.INT.SourceSeq != 9 {
			t.Errorf("mask %s: report %+v int %+v", mask, r, r.INT)
		}
		checkHops(t, &r, want)
		// Without the quirk: HopML 10 does not fit the bitmap in v1.0's sizes; never
		// decoded into timestamp halves, an inner error naming the quirk.
		r, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, b)
		wantInner(t, ie, Error{Reason: BadValue, Header: "int md header", Field: "hop_ml", Offset: 64, Value: 10, Setting: "quirks.geant"})
		if r.NHops != 0 || r.NodeID != 2 {
			t.Errorf("mask %s without the quirk: %d hops", mask, r.NHops)
		}
	}
	// A mask with bits in both bytes is neither order: an error where DSCP 0x20 (GEANT's
	// mark, configured) commits the decoder, not INT where it is only probed for.
	cfg := DefaultConfig()
	cfg.Quirks.GEANT = true
	cfg.DSCP = []DSCPMatch{{Value: 0x20, Mask: 0x3f}}
	r, ie := decodeInner(t, mustDecoder(t, cfg), InputReport, geantReport(t, "ff01"))
	wantInner(t, ie, Error{Reason: BadValue, Header: "int md header", Field: "instruction_bitmap", Offset: 66, Value: 0xff01})
	if r.NHops != 0 {
		t.Errorf("bad mask: %d hops", r.NHops)
	}
	r, ie = decodeInner(t, quirked(t, "geant"), InputReport, geantReport(t, "ff01"))
	noInner(t, ie)
	if r.NHops != 0 || r.INT.Version != telemetry.INTNone {
		t.Errorf("bad mask, probed: %+v", r.INT)
	}
}

// INTCollector's generator, tu-nv/INTCollector benchmark/INTReport.py as test_e2e.py sends
// it (packet p0): TelemetryReport with Ver defaulting to 1 on the TR v0.5 layout, and the
// INT v0.5 class whose shim Length (None) is sent as 0; inner IP and UDP as scapy builds
// them (tos 0, id 1, TTL 64). The expected values are those test_e2e.py asserts in InfluxDB.
const intcollectorP0 = "10200000 00000000 5ad88132" + // Ver 1, NProto 0, F; seq 0; ingress ts 1524138290
	"ffffffffffff 000000000000 0800" +
	"4500008c 00010000 40110000 0a000001 0a000002" + // IPv4 140 bytes, UDP
	"13881388 00780000" + // UDP 5000 > 5000
	"01000000" + // shim: type 1, Length 0 (scapy's None)
	"00080803 ff000000" + // Ver 0, InsCnt 8, MaxHopCnt 8, TotalHopCnt 3; bitmap 0xFF00
	"00000004 00020003 00000190 00050258 000002bc 5ad9f940 000503e8 00000001" + // sw 4
	"00000005 00020003 00000004 00050006 00000007 5ad9f941 0005000a 00000001" + // sw 5
	"00000006 00020003 00000004 00050006 00000007 5ad9f942 0005000a 00000001" + // sw 6
	"0000000e" // tail: proto and port None (0), originDSCP 14

func TestProducerINTCollectorGenerator(t *testing.T) {
	b := hx(t, intcollectorP0)
	r, ie := decodeInner(t, quirked(t, "intcollector_gen"), InputReport, b)
	noInner(t, ie)
	if r.Format != telemetry.FormatTR05 || r.TR.Ver != 1 || r.IngressTS != 1524138290 || r.INT.Version != telemetry.INT05 || r.INT.ShimExtra != 14 {
		t.Errorf("report %+v int %+v", r, r.INT)
	}
	if want := flow4("10.0.0.1", "10.0.0.2", 5000, 5000, protoUDP); r.Flow != want {
		t.Errorf("flow %+v", r.Flow)
	}
	// test_e2e.py: flow_hop_latency 400/4/4 for sw_id 4/5/6 at their egress timestamps,
	// port_tx_utilize 1 on port 3, queue_occupancy 600/6/6 and queue_congestion 1000/10/10
	// on queue 5, flow_stat path 6:5:4 with flow_latency 408.
	all := telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency | telemetry.FQueueID |
		telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FQueueCongestion | telemetry.FTxUtil
	h := func(sw, lat, occ, its, ets, cong uint32) telemetry.Hop {
		return hop(all, telemetry.Hop{NodeID: sw, IngressPort: 2, EgressPort: 3, HopLatency: lat, QueueID: 5, QueueOccupancy: occ,
			IngressTS: uint64(its), EgressTS: uint64(ets), QueueCongestion: cong, TxUtil: 1})
	}
	checkHops(t, &r, h(4, 400, 600, 700, 1524234560, 1000), h(5, 4, 6, 7, 1524234561, 10), h(6, 4, 6, 7, 1524234562, 10))

	// No quirk: Ver 1 with a second nibble of 0 is no v1.0 Length.
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputReport, b,
		Error{Reason: BadLength, Header: "tr1.0 header", Field: "length", Offset: 0, Value: 0, Setting: "quirks.tr05_ver1"})
	// tr05_ver1 alone reads the report, but the INT's shim Length 0 is named, not dropped.
	r, ie = decodeInner(t, quirked(t, "tr05_ver1"), InputReport, b)
	wantInner(t, ie, Error{Reason: BadLength, Header: "int shim", Field: "length", Offset: 56, Setting: "quirks.intcollector_gen"})
	if r.Format != telemetry.FormatTR05 || r.NHops != 0 || r.Flow.DstPort != 5000 {
		t.Errorf("tr05_ver1: %+v", r)
	}
}

// A raw packet whose payload merely looks like the generators' deviation (a WireGuard
// handshake initiation: type 1, three zero bytes, then a sender index that here reads as a
// consistent v0.5 header) is no INT; the same bytes inside a tracked-flow report are named.
func TestGeneratorDeviationOnlyInReports(t *testing.T) {
	wg := "01000000 00010002 80000000" + strings.Repeat("ab", 136)
	b := frame(t, protoUDP, 0, 51820, wg)
	if _, errs := mustDecoder(t, DefaultConfig()).DecodeAll(InputINTMD, b); len(errs) != 1 || errs[0].Reason != NotTelemetry {
		t.Errorf("raw packet: %+v", errs)
	}
	_, ie := decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, append(hx(t, "00200000 00000000 00000000"), b...))
	wantInner(t, ie, Error{Reason: BadLength, Header: "int shim", Field: "length", Offset: 56, Setting: "quirks.intcollector_gen"})
}

// The generator of INTCollector's GEANT fork, GEANT-DataPlaneProgramming/int-collector
// benchmark/modules/headers.py and generators.py with one hop of int_metadata.py's defaults:
// TelemetryReport_v10 (Len defaulting to 1), INT_v10 (Ver defaulting to 0, hopMLen 8 for
// bits 0-7, Length hops·8+3), items as INTCollector reads them (queue id 16 | occupancy 16,
// level-2 ports one word).
const geantGenerator = "11000040 00000000 00000000 5ad88132" + // Ver 1, Len 1, F; swid, seq 0
	"ffffffffffff 000000000000 0800" +
	"45000048 00010000 40110000 0a000001 0a000002" +
	"13881388 00340000" +
	"01000b00" + // shim: type 1, Length 11
	"00000803 ff000000" + // Ver 0, hopMLen 8, remainHopCnt 3; ins 0xFF00
	"00000001 00010002 0000000a 00050258 000002bc 00003b8a 000283e8 00000001"

func TestProducerGEANTINTCollectorGenerator(t *testing.T) {
	b := hx(t, geantGenerator)
	r, ie := decodeInner(t, quirked(t, "intcollector_gen"), InputReport, b)
	noInner(t, ie)
	if r.Format != telemetry.FormatTR10 || r.TR.Ver != 1 || r.IngressTS != 1524138290 || r.INT.Version != telemetry.INT10 || r.INT.HopML != 8 || r.INT.RemHops != 3 {
		t.Errorf("report %+v int %+v", r, r.INT)
	}
	all := telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency | telemetry.FQueueID |
		telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FL2IngressPort | telemetry.FL2EgressPort | telemetry.FTxUtil
	// int_metadata.py: switch 1, ports 1/2, hop latency 10, queue 5 with 600, timestamps
	// 700 and 15242, lv2_in_e_port 5<<15|1000 (one word: 2 | 33768), tx 1.
	checkHops(t, &r, hop(all, telemetry.Hop{NodeID: 1, IngressPort: 1, EgressPort: 2, HopLatency: 10, QueueID: 5, QueueOccupancy: 600,
		IngressTS: 700, EgressTS: 15242, L2IngressPort: 2, L2EgressPort: 33768, TxUtil: 1}))

	for _, d := range []*Decoder{mustDecoder(t, DefaultConfig()), quirked(t, "tr05_ver1")} {
		// tr05_ver1 once read this as a v0.5 drop report whose switch id was the ingress
		// timestamp: F sits in a bit v0.5 reserves, so it is not the v0.5 layout.
		decodeErr(t, d, InputReport, b, Error{Reason: BadLength, Header: "tr1.0 header", Field: "length", Offset: 0, Value: 1, Setting: "quirks.intcollector_gen"})
	}
	// With the header fixed (Len 4) but no quirk, the Ver 0 INT header is named.
	fixed := append([]byte{0x14}, b[1:]...)
	_, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, fixed)
	wantInner(t, ie, Error{Reason: BadValue, Header: "int md header", Field: "ver", Offset: 62, Setting: "quirks.intcollector_gen"})
}

// intcollectorReport is a report as tu-nv/INTCollector's parser reads it (BPFCollector.c):
// TR v1.0 (Ver 1, Len 4, NProt 0, F) from switch 5, an Ethernet/IPv4/UDP packet marked by
// DSCP 0x17 with an INT v1.0 stack of two hops, bitmap 0xF000 (switch id, ports, hop
// latency, queue word). Switch 4's queue word is queue id 16 | occupancy 16, the split
// INTCollector keeps (queue_id_t.q_id is a u16).
func intcollectorReport(t testing.TB, seq int, qid uint16, occ uint16) []byte {
	return hx(t, fmt.Sprintf("14000040 00000005 %08x 5ad88132", seq)+ // TR v1.0; switch 5, seq, ingress ts
		"020000000002 020000000001 0800"+
		"455c0048 00010000 40110000 0a000001 0a000002"+ // IPv4, DSCP 0x17, 72 bytes, UDP
		"13881388 00340000"+ // UDP 5000 > 5000, 52 bytes
		"01000b5c"+ // shim: type 1, Length 11 (shim, header, 2 hops of 4 words), DSCP 0x17
		"10000403 f0000000"+ // Ver 1, HopML 4, RemHop 3; bitmap 0xF000
		"00000005 00010002 00000190 00010258"+ // switch 5: ports 1/2, hop latency 400, queue 1 | 600
		fmt.Sprintf("00000004 00020003 000000c8 %04x%04x", qid, occ)) // switch 4: 2/3, 200, queue word
}

// quirks.intcollector keeps INTCollector's 16-bit queue ids whole: switch 4's queues 1, 257
// and 513 are three queues, not one queue 1 (an 8-bit queue id merged them).
func TestProducerINTCollectorQueueIDs(t *testing.T) {
	d := quirked(t, "intcollector")
	for i, qid := range []uint16{1, 257, 513, 0xfffe} {
		r, ie := decodeInner(t, d, InputReport, intcollectorReport(t, i, qid, 100+uint16(i)))
		noInner(t, ie)
		if r.NHops != 2 || r.Hops[1].NodeID != 4 {
			t.Fatalf("queue %d: hops %+v", qid, r.HopList())
		}
		got, ok := r.Hops[1].Value(telemetry.FQueueID)
		occ, _ := r.Hops[1].Value(telemetry.FQueueOccupancy)
		if !ok || got != uint64(qid) || occ != uint64(100+i) {
			t.Errorf("queue word %04x|%04x: queue id %d (present %v), occupancy %d", qid, 100+i, got, ok, occ)
		}
		if q, _ := r.Hops[0].Value(telemetry.FQueueID); q != 1 {
			t.Errorf("switch 5's queue id %d, want 1", q)
		}
	}
	// All ones in the queue id half is absent, as every queue id field's all ones is.
	r, _ := decodeInner(t, d, InputReport, intcollectorReport(t, 9, 0xffff, 7))
	if _, ok := r.Hops[1].Value(telemetry.FQueueID); ok || r.Hops[1].QueueOccupancy != 7 {
		t.Errorf("queue id 0xffff: %+v", r.Hops[1])
	}
}

// Every format writes a hop's ingress and egress ports as one 16|16 word: a wider port is
// refused, not cut (a sink's own hop carries the interface index, which may exceed 16 bits).
func TestEncodePortWidth(t *testing.T) {
	enc, _ := NewEncoder(DefaultConfig())
	var r telemetry.Report
	r.Format, r.INT = telemetry.FormatTR20, telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xc000, HopML: 2}
	r.TR = telemetry.TRHeader{Ver: 2, NProto: 3, RepType: 1}
	r.Flow.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
	r.Flow.Proto, r.Has = 17, telemetry.HasFlow
	r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, Encap: telemetry.EncapUDP, DSCP: 0x17}
	h := r.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort, NodeID: 1, IngressPort: 65535, EgressPort: 2}
	if _, err := enc.Append(nil, &r); err != nil {
		t.Fatalf("ports 65535 and 2: %v", err)
	}
	h.IngressPort = 70000
	if _, err := enc.Append(nil, &r); err == nil || !strings.Contains(err.Error(), "hop 0: ingress port 70000 does not fit a 16-bit port field") {
		t.Errorf("ingress port 70000: %v", err)
	}
	h.IngressPort, h.EgressPort = 1, 1<<20
	if _, err := enc.AppendBatch(nil, []telemetry.Report{r}); err == nil || !strings.Contains(err.Error(), "hop 0: egress port 1048576 does not fit a 16-bit port field") {
		t.Errorf("egress port 1<<20: %v", err)
	}
}

// The encoders write a 16-bit queue id only where the format has room for it (the INT v1.0
// stack under quirks.intcollector) and refuse it elsewhere rather than cut it to 8 bits.
func TestEncodeQueueIDWidth(t *testing.T) {
	r, _ := decodeInner(t, quirked(t, "intcollector"), InputReport, intcollectorReport(t, 1, 513, 7))
	cfg := DefaultConfig()
	cfg.Quirks.INTCollector = true
	enc, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := enc.Append(nil, &r)
	if err != nil {
		t.Fatalf("intcollector stack, queue 513: %v", err)
	}
	if back, _ := decodeInner(t, quirked(t, "intcollector"), InputReport, b); !back.Equal(&r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back.HopList(), r.HopList())
	}
	plain, _ := NewEncoder(DefaultConfig())
	if _, err := plain.Append(nil, &r); err == nil || !strings.Contains(err.Error(), "hop 1: queue id 513 does not fit an 8-bit queue id field") {
		t.Errorf("spec layout, queue 513: %v", err)
	}
	// The report's own hop (TR v1.0 RepMdBits queue word) is 8 bits under the quirk too.
	r.TR.MDBits, r.ReporterHop = 0x08, true
	r.Hops[1].QueueID = 1
	r.Hops[0].QueueID, r.Hops[0].Fields = 300, r.Hops[0].Fields|telemetry.FQueueID
	if _, err := enc.Append(nil, &r); err == nil || !strings.Contains(err.Error(), "hop 0: queue id 300") {
		t.Errorf("reporter hop, queue 300: %v", err)
	}
	var batch [2]telemetry.Report
	batch[0], batch[1] = benchReport(), benchReport()
	batch[1].Hops[2].QueueID = 256
	if _, err := plain.AppendBatch(nil, batch[:]); err == nil || !strings.Contains(err.Error(), "hop 2: queue id 256") {
		t.Errorf("TR v2.0 batch, queue 256: %v", err)
	}
}

// opennetworkinglab/int-host-reporter, pkg/packet/int_report.go: a flow ("trace") report,
// TR v0.5 with NProto 2 and F, the local header with queue id and occupancy 0, and, when
// the datapath gave no payload, the frame constructPayloadFromFiveTuple synthesizes
// (ff:ff:ff:ff:ff:ff < 01:02:03:04:05:06, IPv4 TTL 64, six bytes 01..06), whose L4 header
// is swapped: a UDP header for protocol 6, a TCP header for 17. Checksums (which gopacket
// computes and intake does not check) are written 0.
func TestProducerINTHostReporter(t *testing.T) {
	const head = "02200001 00000001 0bebc200" + // Ver 0, NProto 2, F, hw_id 1; seq 1; ingress ts 200000000
		"00000005 00020007 00000000 0bebc5e8" + // switch 5; ports 2/7; queue 0, occupancy 0; egress ts 200001000
		"ffffffffffff 010203040506 0800"
	tcpFlow := hx(t, head+"45000022 00000000 40060000 c0a80001 c0a80002"+ // IPv4 34 bytes, protocol 6
		"8f6c0050 000e0000"+ // ... but a UDP header: 36716 > 80, length 14
		"010203040506")
	r, ie := decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, tcpFlow)
	wantInner(t, ie, Error{Reason: Truncated, Header: "tcp", Field: "header", Offset: 62})
	if r.Format != telemetry.FormatTR05 || r.NodeID != 5 || r.Seq != 1 || r.HWID != 1 || r.Flags != telemetry.FlagFlow {
		t.Errorf("report %+v", r)
	}
	// The report and its ports stay: the first four bytes of either header are the ports.
	if want := flow4("192.168.0.1", "192.168.0.2", 36716, 80, protoTCP); r.Flow != want || r.Has&telemetry.HasFlow == 0 {
		t.Errorf("flow %+v", r.Flow)
	}
	checkHops(t, &r, hop(telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FQueueID|telemetry.FQueueOccupancy|
		telemetry.FIngressTS|telemetry.FEgressTS|telemetry.FHopLatency,
		telemetry.Hop{NodeID: 5, IngressPort: 2, EgressPort: 7, IngressTS: 200000000, EgressTS: 200001000, HopLatency: 1000}))

	udpFlow := hx(t, head+"4500002e 00000000 40110000 c0a80001 c0a80002"+ // protocol 17
		"8f6c0035 00000000 00000000 50000000 00000000"+ // ... and a TCP header
		"010203040506")
	r, ie = decodeInner(t, mustDecoder(t, DefaultConfig()), InputReport, udpFlow)
	noInner(t, ie)
	if want := flow4("192.168.0.1", "192.168.0.2", 36716, 53, protoUDP); r.Flow != want {
		t.Errorf("udp flow %+v", r.Flow)
	}
}

// DTA's traffic generators send the base header with NACK tracking (opcode, sequence
// number, immediate | retransmittable flags: /work/shared/specs, DTA §1, from
// jonlanglet/DTA), 4-byte keys and data.
func TestProducerDTAGenerators(t *testing.T) {
	d3, _ := dtaCodec(t, 3, 4, 4)
	d2 := mustDecoder(t, DefaultConfig())
	for _, tc := range []struct {
		name, hex string
		check     func(*telemetry.DTA) bool
		err2      Error
	}{
		{"key-write", "01 05 00 | 02 | 0000007b | deadbeef", func(d *telemetry.DTA) bool {
			return d.Op == telemetry.DTAKeyWrite && d.Seq == 5 && d.Redundancy == 2 && string(d.KeyBytes()) == "\x00\x00\x00\x7b" && string(d.DataBytes()) == "\xde\xad\xbe\xef"
		}, Error{Reason: BadLength, Header: "dta", Field: "length", Offset: 11, Value: 12, Setting: "dta.header_len: 3"}},
		{"append", "02 06 80 | 00000003 | 0000002a", func(d *telemetry.DTA) bool {
			return d.Op == telemetry.DTAAppend && d.Seq == 6 && d.Immediate && d.ListID == 3 && string(d.DataBytes()) == "\x00\x00\x00\x2a"
		}, Error{Reason: BadLength, Header: "dta", Field: "length", Offset: 10, Value: 11, Setting: "dta.header_len: 3"}},
		{"key-increment", "03 07 40 | 01 | 00000001 | 0000000000000005", func(d *telemetry.DTA) bool {
			return d.Op == telemetry.DTAKeyIncrement && d.Seq == 7 && d.Retransmit && d.Redundancy == 1 && d.Counter == 5
		}, Error{Reason: BadLength, Header: "dta", Field: "length", Offset: 15, Value: 16, Setting: "dta.header_len: 3"}},
		{"postcard", "04 08 00 | 0a000001 | 02 | 00000063", func(d *telemetry.DTA) bool {
			return d.Op == telemetry.DTAPostcard && d.Seq == 8 && d.Hop == 2 && string(d.DataBytes()) == "\x00\x00\x00\x63"
		}, Error{Reason: BadLength, Header: "dta", Field: "length", Offset: 11, Value: 12, Setting: "dta.header_len: 3"}},
	} {
		b := dtaHex(t, tc.hex)
		r := decodeOne(t, d3, InputDTA, b)
		if r.DTA.HeaderLen != 3 || !tc.check(&r.DTA) {
			t.Errorf("%s: %+v", tc.name, r.DTA)
		}
		decodeErr(t, d2, InputDTA, b, tc.err2)
		// And the other way: a 2-byte datagram under header_len 3 is truncated, named (not
		// for key-increment, whose redundancy 1 then reads as intake's batch flag).
		if tc.name == "key-increment" {
			continue
		}
		short := append(b[:1:1], b[2:]...)
		_, errs := d3.DecodeAll(InputDTA, short)
		if len(errs) != 1 || errs[0].Reason != Truncated || errs[0].Setting != "dta.header_len: 2" {
			t.Errorf("%s: 2-byte layout under header_len 3: %+v", tc.name, errs)
		}
	}
}

// A v2.x packet found by the probe (no DSCP mark, no INT port) gets its flow restored as
// the INT-port path does: NPT 1 keeps the original UDP port in the shim, NPT 2 puts the
// original L4 header after INT.
func TestProbeRestoresNPT(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	// NPT 1: shim 0x14 (type 1, NPT 1), Length 3 (header only), original port 9028.
	b := frame(t, protoUDP, 0, 17768, "14032344 | 20000000 00000000 00000000")
	r := decodeOne(t, d, InputINTMD, b)
	if r.Flow.DstPort != 9028 || r.Inner.Encap != telemetry.EncapUDP || r.Inner.EncapArg != 1 || r.INT.Version != telemetry.INT2x {
		t.Errorf("npt 1: flow %+v inner %+v", r.Flow, r.Inner)
	}
	// NPT 2: shim 0x18, original protocol 6; then the original TCP header 1000 > 443.
	b = frame(t, protoUDP, 0, 17768, "18030006 | 20000000 00000000 00000000 | 03e801bb 00000000 00000000 50000000 00000000")
	r = decodeOne(t, d, InputINTMD, b)
	if r.Flow.Proto != protoTCP || r.Flow.SrcPort != 1000 || r.Flow.DstPort != 443 {
		t.Errorf("npt 2: flow %+v", r.Flow)
	}
	// NPT over TCP means nothing: a probe does not take it for INT.
	b = frame(t, protoTCP, 0, 80, "14032344 | 20000000 00000000 00000000")
	if _, errs := d.DecodeAll(InputINTMD, b); len(errs) != 1 || errs[0].Reason != NotTelemetry {
		t.Errorf("npt 1 over tcp: %+v", errs)
	}
}

// GEANT's captures (testdata/third-party, see its README): the testbed's INT-MD packet
// with the 2-bit-Ver header, and the DPDK pipeline's v1.0 input. Expected values are read
// from the bytes as GEANT's headers define them: switch ids 1 and 2, 8-byte timestamps of
// 2021-01-26 (1611664130347497840 ns is 12:28:50.347 UTC), the tail's UDP port 17000.
func TestProducerGEANTCaptures(t *testing.T) {
	b := pcapFrame(t, "geant-2601-double-header.pcap")
	r, ie := decodeInner(t, quirked(t, "geant"), InputINTMD, b)
	noInner(t, ie)
	if want := flow4("150.254.169.196", "195.113.172.46", 4607, 17000, protoUDP); r.Flow != want {
		t.Errorf("flow %+v", r.Flow)
	}
	in := r.INT
	if in.Version != telemetry.INT05 || in.Bitmap != 0x00cc || in.MaxHops != 4 || in.OrigProto != 17 || in.OrigPort != 17000 || r.Inner.DSCP != 0x20 || r.Inner.Trailer != 6 {
		t.Errorf("int %+v inner %+v", in, r.Inner)
	}
	f := telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FIngressTS | telemetry.FEgressTS
	checkHops(t, &r,
		hop(f, telemetry.Hop{NodeID: 2, IngressPort: 2, EgressPort: 0, IngressTS: 0x165dc7fcd299f970, EgressTS: 0x165dc7fcd299f971}),
		hop(f, telemetry.Hop{NodeID: 1, IngressPort: 1, EgressPort: 0, IngressTS: 0x165dc7fcbc2f5f68, EgressTS: 0x165dc7fcbc2f5f69}))
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, b,
		Error{Reason: UnknownVersion, Header: "int md header", Field: "ver", Offset: 46, Value: 4, Setting: "quirks.geant"})

	b = pcapFrame(t, "geant-dpdk-int.pcap")
	r, ie = decodeInner(t, quirked(t, "geant"), InputINTMD, b)
	noInner(t, ie)
	if r.INT.Version != telemetry.INT10 || r.INT.HopML != 6 || r.INT.Bitmap != 0x00cc || !r.INT.HasSourceSeq || r.INT.SourceSeq != 0 {
		t.Errorf("dpdk int %+v", r.INT)
	}
	checkHops(t, &r, hop(f, telemetry.Hop{NodeID: 0, IngressPort: 1, EgressPort: 0}))
	decodeErr(t, mustDecoder(t, DefaultConfig()), InputINTMD, b,
		Error{Reason: BadValue, Header: "int md header", Field: "hop_ml", Offset: 48, Value: 6, Setting: "quirks.geant"})
}
