package wire

import (
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// Hand-checked byte vectors: the worked examples of the P4.org specs, as they
// give them, with every decoded field asserted.

// frame wraps an L4 payload in Ethernet / IPv4 (DSCP dscp) / TCP or UDP.
func frame(t *testing.T, proto uint8, dscp uint8, dport uint16, payload string) []byte {
	t.Helper()
	var w packetWriter
	w.ethernet(etherIPv4, nil)
	var k telemetry.FlowKey
	k.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
	k.Proto, k.SrcPort, k.DstPort = proto, 1000, dport
	w.ip(&k, proto, dscp, 0)
	w.l4(&k, 0)
	w.b = append(w.b, hx(t, payload)...)
	w.finish()
	return w.b
}

func hop(fields telemetry.Field, h telemetry.Hop) telemetry.Hop { h.Fields = fields; return h }

func checkHops(t *testing.T, r *telemetry.Report, want ...telemetry.Hop) {
	t.Helper()
	if int(r.NHops) != len(want) {
		t.Fatalf("%d hops, want %d: %+v", r.NHops, len(want), r.HopList())
	}
	for i := range want {
		if r.Hops[i] != want[i] {
			t.Errorf("hop %d:\n got %+v\nwant %+v", i, r.Hops[i], want[i])
		}
	}
}

func TestSpecTR05(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	const local = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FQueueID |
		telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FHopLatency
	for _, tc := range []struct {
		name  string
		hex   string
		flags telemetry.Flags
		seq   uint32
		hop   telemetry.Hop
		drop  bool
	}{
		{"flow report, local header", "02200001 0000000a 11223344 | 00000001 00030004 02000100 11223400", telemetry.FlagFlow, 10,
			hop(local, telemetry.Hop{NodeID: 1, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100,
				IngressTS: 0x11223344, EgressTS: 0x11223400, HopLatency: 0xbc}), false},
		{"drop report", "01800001 0000000b 11223344 | 00000001 00030000 001d0000", telemetry.FlagDrop, 11,
			hop(telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FQueueID|telemetry.FIngressTS,
				telemetry.Hop{NodeID: 1, IngressPort: 3, EgressPort: 0, QueueID: 0, IngressTS: 0x11223344}), true},
		{"queue report", "02400001 0000000c 11223344 | 00000001 00030004 02000100 11223400", telemetry.FlagQueue, 12,
			hop(local, telemetry.Hop{NodeID: 1, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100,
				IngressTS: 0x11223344, EgressTS: 0x11223400, HopLatency: 0xbc}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOne(t, d, InputReport, hx(t, tc.hex))
			if r.Format != telemetry.FormatTR05 || r.Flags != tc.flags || r.HWID != 1 || r.Seq != tc.seq ||
				r.IngressTS != 0x11223344 || r.NodeID != 1 || !r.ReporterHop {
				t.Errorf("header: format %v flags %v hw %d seq %d ts %#x node %d", r.Format, r.Flags, r.HWID, r.Seq, r.IngressTS, r.NodeID)
			}
			if tc.drop != (r.Has&telemetry.HasDropReason != 0) || tc.drop && r.DropReason != 29 {
				t.Errorf("drop reason %d (has %v)", r.DropReason, r.Has&telemetry.HasDropReason != 0)
			}
			checkHops(t, &r, tc.hop)
		})
	}
}

func TestSpecTR10(t *testing.T) {
	r := decodeOne(t, mustDecoder(t, DefaultConfig()), InputReport, hx(t, "16140040 00000001 0000000a 11223344 00030004 02000100"))
	if r.Format != telemetry.FormatTR10 || r.TR.MDBits != 0b101000 || r.TR.NProto != 0 || r.Flags != telemetry.FlagFlow ||
		r.NodeID != 1 || r.Seq != 10 || r.IngressTS != 0x11223344 || r.HWID != 0 {
		t.Errorf("header %+v flags %v node %d seq %d", r.TR, r.Flags, r.NodeID, r.Seq)
	}
	checkHops(t, &r, hop(telemetry.FNodeID|telemetry.FIngressTS|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FQueueID|telemetry.FQueueOccupancy,
		telemetry.Hop{NodeID: 1, IngressTS: 0x11223344, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100}))
}

func TestSpecTR20Example1(t *testing.T) {
	// RepType 1, InType 4, RepLen 14, MDLen 2, F; RepMdBits 0x5000 (ports, queue); then the
	// truncated IPv4+TCP packet: 14 - 2 - 2 = 10 words.
	ip := "45000028 00000000 40060000 0a000001 0a000002 | 04d20050 00000000 00000000 50020000 00000000"
	b := hx(t, "20000001 0a0b0c0d | 140e0220 | 50000000 00000000 | 00030004 02000100 |"+ip)
	r := decodeOne(t, mustDecoder(t, DefaultConfig()), InputReport, b)
	if r.Format != telemetry.FormatTR20 || r.NodeID != 0x0a0b0c0d || r.Seq != 1 || r.HWID != 0 ||
		r.Flags != telemetry.FlagFlow || r.TR.RepType != 1 || r.TR.NProto != 4 || r.TR.MDBits != 0x5000 {
		t.Errorf("header: node %#x seq %d flags %v tr %+v", r.NodeID, r.Seq, r.Flags, r.TR)
	}
	checkHops(t, &r, hop(telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FQueueID|telemetry.FQueueOccupancy,
		telemetry.Hop{NodeID: 0x0a0b0c0d, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100}))
	if want := flow4("10.0.0.1", "10.0.0.2", 1234, 80, 6); r.Flow != want || r.Inner.Link != telemetry.LinkIPv4 {
		t.Errorf("flow %+v link %v", r.Flow, r.Inner.Link)
	}
}

func TestSpecINTOverTCPAndUDP(t *testing.T) {
	qh := func(node uint32, occ uint32) telemetry.Hop {
		return hop(telemetry.FNodeID|telemetry.FQueueID|telemetry.FQueueOccupancy, telemetry.Hop{NodeID: node, QueueID: 1, QueueOccupancy: occ})
	}
	cfg := DefaultConfig()
	cfg.INTPort = 4444
	d := mustDecoder(t, cfg)
	t.Run("v2.1 MD over TCP", func(t *testing.T) {
		r := decodeOne(t, d, InputINTMD, frame(t, protoTCP, 0x17, 80,
			"10070000 | 20000206 90000000 00000000 | 00000002 01000020 | 00000001 01000010"))
		if r.INT.Version != telemetry.INT2x || r.INT.HopML != 2 || r.INT.RemHops != 6 || r.INT.Bitmap != 0x9000 ||
			r.Inner.Encap != telemetry.EncapTCP || r.Format != telemetry.FormatINTMD {
			t.Errorf("int %+v encap %v", r.INT, r.Inner.Encap)
		}
		checkHops(t, &r, qh(2, 0x20), qh(1, 0x10))
	})
	t.Run("v2.1 MX, NPT 2, on the INT port", func(t *testing.T) {
		r := decodeOne(t, d, InputINTMD, frame(t, protoUDP, 0, 4444,
			"38030006 | 20000000 90000000 00000000 | 04d20050 00000000 00000000 50020000 00000000"))
		if !r.INT.MX || r.INT.Bitmap != 0x9000 || r.INT.OrigProto != 6 || r.Inner.EncapArg != 2 || r.NHops != 0 {
			t.Errorf("int %+v inner %+v", r.INT, r.Inner)
		}
		if want := flow4("10.0.0.1", "10.0.0.2", 1234, 80, 6); r.Flow != want {
			t.Errorf("flow %+v: the original TCP header after INT names the flow", r.Flow)
		}
	})
	t.Run("v1.0 over UDP", func(t *testing.T) {
		r := decodeOne(t, d, InputINTMD, frame(t, protoUDP, 0x17, 53,
			"0100075c | 10000206 90000000 | 00000002 01000020 | 00000001 01000010"))
		if r.INT.Version != telemetry.INT10 || r.INT.ShimExtra != 0x5c || r.INT.HopML != 2 || r.INT.Erratum {
			t.Errorf("int %+v", r.INT)
		}
		checkHops(t, &r, qh(2, 0x20), qh(1, 0x10))
	})
	t.Run("v1.0 spec example erratum: Length one word too large", func(t *testing.T) {
		r := decodeOne(t, d, InputINTMD, frame(t, protoTCP, 0x17, 80,
			"0100085c | 10000206 90000000 | 00000002 01000020 | 00000001 01000010 | 00000000"))
		if !r.INT.Erratum {
			t.Errorf("erratum not noted: %+v", r.INT)
		}
		checkHops(t, &r, qh(2, 0x20), qh(1, 0x10))
	})
	t.Run("v0.5 over TCP with tail", func(t *testing.T) {
		r := decodeOne(t, d, InputINTMD, frame(t, protoTCP, 0x17, 80,
			"01000800 | 00021002 90000000 | 00000002 01000020 | 00000001 01000010 | 06001600"))
		if r.INT.Version != telemetry.INT05 || r.INT.MaxHops != 0x10 || r.INT.OrigProto != 6 || r.INT.OrigPort != 0x16 {
			t.Errorf("int %+v", r.INT)
		}
		checkHops(t, &r, qh(2, 0x20), qh(1, 0x10))
	})
}

func TestSpecTunnelShims(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GREProtocol = 0x88b5
	d := mustDecoder(t, cfg)
	stack := "00000002 01000020 | 00000001 01000010"
	innerEth := "020000000002 020000000001 0800 | 45000028 00000000 40060000 0b000001 0b000002 | 1f900050 00000000 00000000 50020000 00000000"
	t.Run("VXLAN-GPE v2.x shim", func(t *testing.T) {
		// GPE header: flags I|P, next protocol 0x82; shim 10090003: type 1, length 9 (3 md + 6),
		// next protocol 3 (Ethernet). Stack: three hops.
		b := frame(t, protoUDP, 0, 4790, "0c000082 00000100 | 10090003 | 20000206 90000000 00000000 | 00000003 01000030 | "+stack+" | "+innerEth)
		r := decodeOne(t, d, InputINTMD, b)
		if r.Inner.Encap != telemetry.EncapGPE || r.Inner.EncapArg != 0x82 || r.Inner.Nested != telemetry.LinkEthernet {
			t.Errorf("inner %+v", r.Inner)
		}
		if want := flow4("11.0.0.1", "11.0.0.2", 8080, 80, 6); r.Flow != want {
			t.Errorf("flow %+v, want the tunnelled packet's", r.Flow)
		}
		if r.Inner.Tunnel.DstPort != 4790 {
			t.Errorf("tunnel %+v", r.Inner.Tunnel)
		}
		if got := nodeIDs(&r); len(got) != 3 || got[0] != 3 || got[2] != 1 {
			t.Errorf("hops %v", got)
		}
	})
	t.Run("VXLAN-GPE v0.5/v1.0 shim", func(t *testing.T) {
		b := frame(t, protoUDP, 0, 4790, "0c000005 00000100 | 01000703 | 10000206 90000000 | "+stack+" | "+innerEth)
		r := decodeOne(t, d, InputINTMD, b)
		if r.INT.Version != telemetry.INT10 || r.Inner.EncapArg != 5 || r.NHops != 2 {
			t.Errorf("int %+v hops %d", r.INT, r.NHops)
		}
	})
	t.Run("GRE v2.x shim", func(t *testing.T) {
		var w packetWriter
		w.ethernet(etherIPv4, nil)
		var k telemetry.FlowKey
		k.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
		w.ip(&k, protoGRE, 0, 0)
		// GRE protocol 0x88b5 (configured); shim 18070800: type 1, G, length 7, next IPv4.
		w.b = append(w.b, hx(t, "000088b5 | 18070800 | 20000206 90000000 00000000 | "+stack+" | 45000028 00000000 40060000 0b000001 0b000002 1f900050 00000000 00000000 50020000 00000000")...)
		w.finish()
		r := decodeOne(t, d, InputINTMD, w.b)
		if r.Inner.Encap != telemetry.EncapGRE || r.INT.ShimExtra != 1 || r.Inner.Nested != telemetry.LinkIPv4 || r.NHops != 2 {
			t.Errorf("inner %+v int %+v", r.Inner, r.INT)
		}
		if r.Flow.DstPort != 80 || r.Inner.Tunnel.Proto != protoGRE {
			t.Errorf("flow %+v tunnel %+v", r.Flow, r.Inner.Tunnel)
		}
	})
	t.Run("Geneve option class 0x0103", func(t *testing.T) {
		// Geneve: option length 6 words (1 option header + 5 data), protocol TEB; option
		// class 0x0103, type 1, length 5 words: a v1.0 md header and a one-hop stack.
		b := frame(t, protoUDP, 0, 6081, "06006558 00000100 | 01030105 | 10000206 90000000 | 00000002 01000020 | 00000000 | "+innerEth)
		r := decodeOne(t, d, InputINTMD, b)
		if r.Inner.Encap != telemetry.EncapGeneve || r.Inner.EncapArg != 0x0103 || r.INT.Version != telemetry.INT10 {
			t.Errorf("inner %+v int %+v", r.Inner, r.INT)
		}
	})
}

// An INTCollector producer: 16/16 queue split and one-word level-2 ports, under its quirk.
func TestQuirkINTCollector(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Quirks.INTCollector = true
	d := mustDecoder(t, cfg)
	// v1.0, bitmap bits 0, 3, 6 (node, queue, L2 ports): three words per hop.
	r := decodeOne(t, d, InputINTMD, frame(t, protoUDP, 0x17, 53, "01000617 | 10000303 92000000 | 00000007 00050123 | 00090002"))
	checkHops(t, &r, hop(telemetry.FNodeID|telemetry.FQueueID|telemetry.FQueueOccupancy|telemetry.FL2IngressPort|telemetry.FL2EgressPort,
		telemetry.Hop{NodeID: 7, QueueID: 5, QueueOccupancy: 0x123, L2IngressPort: 9, L2EgressPort: 2}))
	// Without the quirk the same packet is malformed: HopML 3 cannot hold 8-byte L2 ports.
	_, errs := mustDecoder(t, DefaultConfig()).DecodeAll(InputINTMD, frame(t, protoUDP, 0x17, 53, "01000617 | 10000303 92000000 | 00000007 00050123 | 00090002"))
	if len(errs) != 1 || errs[0].Reason != BadValue || errs[0].Field != "hop_ml" || errs[0].Setting != "quirks.intcollector" {
		t.Errorf("without the quirk: %v", errs)
	}
}

// INTCollector's test generator sends the TR v0.5 layout with Ver=1.
func TestQuirkTR05Ver1(t *testing.T) {
	b := hx(t, "12200001 0000000a 11223344 | 00000001 00030004 02000100 11223400")
	cfg := DefaultConfig()
	cfg.Quirks.TR05Ver1 = true
	r := decodeOne(t, mustDecoder(t, cfg), InputReport, b)
	if r.Format != telemetry.FormatTR05 || r.TR.Ver != 1 || r.NodeID != 1 || r.Seq != 10 {
		t.Errorf("format %v ver %d node %d seq %d", r.Format, r.TR.Ver, r.NodeID, r.Seq)
	}
	_, errs := mustDecoder(t, DefaultConfig()).DecodeAll(InputReport, b)
	if len(errs) != 1 || errs[0].Reason != BadLength || errs[0].Header != "tr1.0 header" {
		t.Errorf("without the quirk, a v1.0 header with Length 2: %v", errs)
	}
}

// A DSCP match commits the decoder: INT that then fails to parse is an error. Without the
// mark, a payload that is not a valid shim is simply a packet without INT.
func TestDSCPCommits(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	payload := "01000900 | 00021002 90000000" // Length 9 words, far past the payload
	_, errs := d.DecodeAll(InputINTMD, frame(t, protoTCP, 0x17, 80, payload))
	if len(errs) != 1 || errs[0] != (Error{Reason: Truncated, Header: "int shim", Field: "length", Offset: 56, Value: 9}) {
		t.Errorf("marked packet: %+v", errs)
	}
	_, errs = d.DecodeAll(InputINTMD, frame(t, protoTCP, 0x02, 80, payload))
	if len(errs) != 1 || errs[0].Reason != NotTelemetry {
		t.Errorf("unmarked packet: %+v", errs)
	}
	// In a report, the unmarked packet is a flow report without INT, not an error.
	rep := append(hx(t, "00200001 00000001 00000002"), frame(t, protoTCP, 0x02, 80, payload)...)
	r := decodeOne(t, d, InputReport, rep)
	if r.INT.Version != telemetry.INTNone || r.NHops != 0 || r.Has&telemetry.HasFlow == 0 {
		t.Errorf("report: int %+v hops %d", r.INT, r.NHops)
	}
}

func TestMalformed(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	for _, tc := range []struct {
		name string
		in   Input
		hex  string
		want Error
	}{
		{"empty", InputReport, "", Error{Reason: Truncated, Header: "report", Field: "ver", Offset: 0}},
		{"unknown version", InputReport, "30000000", Error{Reason: UnknownVersion, Header: "report", Field: "ver", Offset: 0, Value: 3}},
		{"tr0.5 short fixed header", InputReport, "00200001 00000000", Error{Reason: Truncated, Header: "tr0.5 fixed header", Field: "ingress_ts", Offset: 8}},
		{"tr0.5 short local header", InputReport, "02200001 00000000 00000000 00000001", Error{Reason: Truncated, Header: "tr0.5 local header", Field: "egress_ts", Offset: 16}},
		{"tr0.5 nproto 3", InputReport, "03800001 00000000 00000000", Error{Reason: Unsupported, Header: "tr0.5 fixed header", Field: "nproto", Offset: 0, Value: 3}},
		{"tr1.0 length mismatch", InputReport, "15140040 00000001 0000000a 11223344 00030004", Error{Reason: BadLength, Header: "tr1.0 header", Field: "length", Offset: 0, Value: 5}},
		{"tr1.0 bad nprot", InputReport, "1480 0040 00000001 0000000a 11223344", Error{Reason: BadValue, Header: "tr1.0 header", Field: "nprot", Offset: 1, Value: 4}},
		{"tr2.0 short group", InputReport, "20000001 0a0b", Error{Reason: Truncated, Header: "tr2.0 group header", Field: "node_id", Offset: 6}},
		{"tr2.0 report past the end", InputReport, "20000001 0a0b0c0d | 1405 0020 | 00000000", Error{Reason: Truncated, Header: "tr2.0 individual report", Field: "report_length", Offset: 9, Value: 5}},
		{"tr2.0 md length past report", InputReport, "20000001 0a0b0c0d | 10010520 | 00000000", Error{Reason: BadLength, Header: "tr2.0 individual report", Field: "md_length", Offset: 10, Value: 5}},
		{"tr2.0 rep type 2", InputReport, "20000001 0a0b0c0d | 20000020", Error{Reason: Unsupported, Header: "tr2.0 individual report", Field: "rep_type", Offset: 8, Value: 2}},
		{"ipv4 ihl", InputINTMD, "020000000002 020000000001 0800 44000014 00000000 40060000 0a000001 0a000002", Error{Reason: BadLength, Header: "ipv4", Field: "ihl", Offset: 14, Value: 4}},
		{"tcp truncated", InputINTMD, "020000000002 020000000001 0800 45000014 00000000 40060000 0a000001 0a000002 0001", Error{Reason: Truncated, Header: "tcp", Field: "header", Offset: 34}},
		{"ethernet truncated", InputINTMD, "0200000000", Error{Reason: Truncated, Header: "ethernet", Field: "ethertype", Offset: 5}},
		{"three vlan tags", InputINTMD, "020000000002 020000000001 8100 0001 8100 0002 8100 0003 0800", Error{Reason: TooMany, Header: "vlan", Field: "tci", Offset: 22, Value: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := d.DecodeAll(tc.in, hx(t, tc.hex))
			if len(rs) != 0 || len(errs) != 1 || errs[0] != tc.want {
				t.Fatalf("got %d reports, errors %+v; want %+v", len(rs), errs, tc.want)
			}
		})
	}
}

// A report whose inner packet is broken is kept, with its own metadata; the inner packet's
// error is the Reader's InnerErr, with the offset it always had.
func TestInnerErrorKeepsReport(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	var rd Reader
	var r telemetry.Report
	rd.Reset(d, InputReport, hx(t, "20000001 0a0b0c0d | 04050020 | 55000014 00000000 40060000 0a000001 0a000002"))
	if err := rd.Next(&r); err != nil {
		t.Fatalf("report with a broken inner packet: %v", err)
	}
	if r.Format != telemetry.FormatTR20 || r.NodeID != 0x0a0b0c0d || r.Seq != 1 || r.Flags != telemetry.FlagFlow || r.Has&telemetry.HasFlow != 0 {
		t.Errorf("report %+v", r)
	}
	if e := rd.InnerErr(); e == nil || *e != (Error{Reason: BadValue, Header: "ipv4", Field: "version", Offset: 12, Value: 5}) {
		t.Errorf("inner error %+v", e)
	}
	if err := rd.Next(&r); err != Done || rd.InnerErr() != nil {
		t.Errorf("after the report: %v, inner %v", err, rd.InnerErr())
	}
}

// After a malformed TR v2.0 report whose length is readable, the next report still decodes.
func TestTR20ContinuesAfterBadReport(t *testing.T) {
	d := mustDecoder(t, DefaultConfig())
	b := hx(t, "20000001 0a0b0c0d | 20000020 | 10030120 40000000 00000000 00030004")
	rs, errs := d.DecodeAll(InputReport, b)
	if len(errs) != 1 || errs[0].Field != "rep_type" || len(rs) != 1 || rs[0].Hops[0].IngressPort != 3 {
		t.Fatalf("reports %d errors %+v", len(rs), errs)
	}
}
