// Command goldenpcap writes intake's golden captures, testdata/golden/<format>.pcap: one
// capture per wire format, written by intake's own encoders from the hand-built reports
// below. cmd/intake's decode test compares `intake decode --json` of each capture with the
// reviewed testdata/golden/<format>.jsonl, so every decoded field is pinned; main_test.go
// checks that the committed captures are what this program writes.
//
//	go generate ./internal/tools/goldenpcap
package main

//go:generate go run . -dir ../../../testdata/golden

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// A datagram is one UDP payload to a port, or (port 0) a raw Ethernet frame.
type datagram struct {
	port    uint16
	payload []byte
}

func flow(src, dst string, sport, dport uint16, proto uint8) telemetry.FlowKey {
	var k telemetry.FlowKey
	k.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr(dst))
	k.SrcPort, k.DstPort, k.Proto = sport, dport, proto
	return k
}

// intHops appends an INT stack of n hops (newest first: node ids n..1) to r.
func intHops(r *telemetry.Report, n int, fields telemetry.Field, wideTS bool) {
	for i := 0; i < n; i++ {
		node := uint32(n - i)
		h := r.AddHop()
		*h = telemetry.Hop{Fields: fields, NodeID: node, IngressPort: node, EgressPort: node + 10,
			HopLatency: 1000 * node, QueueID: uint16(node % 8), QueueOccupancy: 100 * node,
			IngressTS: 1_000_000 + uint64(node), EgressTS: 1_001_000 + uint64(node),
			L2IngressPort: 20 + node, L2EgressPort: 30 + node, TxUtil: 50 + node, QueueCongestion: 7,
			BufferID: 1, BufferOccupancy: 4096 * node}
		if !wideTS {
			h.IngressTS, h.EgressTS = h.IngressTS&0xffffffff, h.EgressTS&0xffffffff
		}
	}
}

func reports() (map[string][]telemetry.Report, error) {
	out := map[string][]telemetry.Report{}
	const v05Fields = telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy
	const v2Fields = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency |
		telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FTxUtil

	// TR v0.5: an INT sink report (NProto 0, INT v0.5 over TCP, DSCP 0x17), a fabric-tna style
	// flow+queue postcard (NProto 2), and a drop report (NProto 1).
	var sink telemetry.Report
	sink.Format, sink.Flags, sink.HWID, sink.Seq, sink.IngressTS = telemetry.FormatTR05, telemetry.FlagFlow, 1, 100, 5000
	sink.Has = telemetry.HasSeq | telemetry.HasIngressTS | telemetry.HasFlow
	sink.Flow = flow("10.0.1.1", "10.0.2.3", 40000, 80, 6)
	sink.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapTCP, Trailer: 4}
	sink.INT = telemetry.INTHeader{Version: telemetry.INT05, Bitmap: 0xb000, MaxHops: 8, ShimType: 1, OrigProto: 6, OrigPort: 80, ShimExtra: 0}
	intHops(&sink, 3, v05Fields, false)

	var post telemetry.Report
	post.Format, post.Flags, post.HWID, post.Seq, post.IngressTS = telemetry.FormatTR05, telemetry.FlagFlow|telemetry.FlagQueue, 0, 1, 0x11223344
	post.TR.NProto = 2
	post.NodeID, post.ReporterHop = 7, true
	post.Has = telemetry.HasSeq | telemetry.HasIngressTS | telemetry.HasNodeID | telemetry.HasFlow
	h := post.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressTS | telemetry.FIngressPort | telemetry.FEgressPort |
		telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FEgressTS | telemetry.FHopLatency,
		NodeID: 7, IngressTS: 0x11223344, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100, EgressTS: 0x11223400, HopLatency: 0xbc}
	post.Flow = flow("10.0.1.1", "10.0.2.3", 40000, 80, 6)
	post.Inner = telemetry.Inner{Link: telemetry.LinkEthernet}

	var drop telemetry.Report
	drop.Format, drop.Flags, drop.Seq, drop.IngressTS = telemetry.FormatTR05, telemetry.FlagDrop, 2, 0x11223344
	drop.TR.NProto = 1
	drop.NodeID, drop.ReporterHop, drop.DropReason = 7, true, 71
	drop.Has = telemetry.HasSeq | telemetry.HasIngressTS | telemetry.HasNodeID | telemetry.HasDropReason | telemetry.HasFlow
	h = drop.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressTS | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FQueueID,
		NodeID: 7, IngressTS: 0x11223344, IngressPort: 3, EgressPort: 0, QueueID: 0}
	drop.Flow = flow("10.0.1.1", "10.0.2.3", 40001, 53, 17)
	drop.Inner = telemetry.Inner{Link: telemetry.LinkEthernet}
	out["tr0.5"] = []telemetry.Report{sink, post, drop}

	// TR v1.0 as INTCollector and GEANT send it: RepMdBits 0, INT v1.0 over UDP (DSCP 0x17),
	// and one with the reporter's own ports, hop latency and queue words.
	var r10 telemetry.Report
	r10.Format, r10.TR.Ver, r10.Flags, r10.NodeID, r10.Seq, r10.IngressTS = telemetry.FormatTR10, 1, telemetry.FlagFlow, 9, 55, 777
	r10.Has = telemetry.HasSeq | telemetry.HasIngressTS | telemetry.HasNodeID | telemetry.HasFlow
	r10.Flow = flow("192.168.0.1", "192.168.0.2", 5000, 6000, 17)
	r10.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapUDP}
	r10.INT = telemetry.INTHeader{Version: telemetry.INT10, Bitmap: 0xf000, HopML: 4, RemHops: 5, ShimType: 1, ShimExtra: 0x5c}
	intHops(&r10, 4, telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FHopLatency|telemetry.FQueueID|telemetry.FQueueOccupancy, false)
	r10b := r10
	r10b.Seq, r10b.TR.MDBits, r10b.ReporterHop, r10b.NHops = 56, 0b111000, true, 0
	h = r10b.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressTS | telemetry.FIngressPort | telemetry.FEgressPort |
		telemetry.FHopLatency | telemetry.FQueueID | telemetry.FQueueOccupancy, NodeID: 9, IngressTS: 777,
		IngressPort: 1, EgressPort: 2, HopLatency: 450, QueueID: 0, QueueOccupancy: 12}
	intHops(&r10b, 2, telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FHopLatency|telemetry.FQueueID|telemetry.FQueueOccupancy, false)
	r10b.INT.RemHops = 7
	out["tr1.0"] = []telemetry.Report{r10, r10b}

	// TR v2.0: one packet coalescing an INT-MD sink report (5 hops, 8-byte timestamps) and
	// an INT-XD per-hop report with RepMdBits; then an IPv6 drop report on its own.
	var md telemetry.Report
	md.Format, md.TR.Ver, md.TR.RepType, md.TR.NProto = telemetry.FormatTR20, 2, 1, 3
	md.NodeID, md.Seq, md.HWID, md.Flags = 5, 1000, 2, telemetry.FlagFlow
	md.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	md.Flow = flow("10.1.0.1", "10.1.0.2", 33000, 443, 6)
	md.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapTCP}
	md.INT = telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xfd00, HopML: 10, RemHops: 3, ShimType: 1, ShimExtra: 0}
	intHops(&md, 5, v2Fields, true)
	var xd telemetry.Report
	xd.Format, xd.TR.Ver, xd.TR.RepType, xd.TR.NProto = telemetry.FormatTR20, 2, 1, 4
	xd.NodeID, xd.Seq, xd.HWID, xd.Flags = 5, 1000, 2, telemetry.FlagFlow
	xd.TR.MDBits = 0x7c80 // ports, hop latency, queue, ingress ts, egress ts, buffer
	xd.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	xd.ReporterHop = true
	h = xd.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency |
		telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FBufferID | telemetry.FBufferOccupancy,
		NodeID: 5, IngressPort: 1, EgressPort: 9, HopLatency: 2500, QueueID: 3, QueueOccupancy: 800,
		IngressTS: 1_700_000_000_000_000_000, EgressTS: 1_700_000_000_000_002_500, BufferID: 0, BufferOccupancy: 65536}
	xd.Flow = flow("10.1.0.1", "10.1.0.2", 33001, 443, 6)
	xd.Inner = telemetry.Inner{Link: telemetry.LinkIPv4}
	var d6 telemetry.Report
	d6.Format, d6.TR.Ver, d6.TR.RepType, d6.TR.NProto = telemetry.FormatTR20, 2, 1, 5
	d6.NodeID, d6.Seq, d6.Flags = 6, 7, telemetry.FlagDrop
	d6.TR.MDBits = 0x4001 // ports, drop reason
	d6.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow | telemetry.HasDropReason
	d6.DropReason, d6.ReporterHop = 29, true
	h = d6.AddHop()
	*h = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FQueueID,
		NodeID: 6, IngressPort: 4, EgressPort: 0xfffe, QueueID: 0}
	d6.Flow = flow("2001:db8::1", "2001:db8::2", 1111, 2222, 17)
	d6.Inner = telemetry.Inner{Link: telemetry.LinkIPv6}
	out["tr2.0"] = []telemetry.Report{md, xd, d6}

	// Raw INT-MD data packets: v2.x over UDP with the INT port (NPT 1) and over VXLAN-GPE.
	var raw telemetry.Report
	raw.Format = telemetry.FormatINTMD
	raw.Has = telemetry.HasFlow
	raw.Flow = flow("10.2.0.1", "10.2.0.2", 7000, 8000, 17)
	raw.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, NVLANs: 1, VLANs: [2]uint16{100}, DSCP: 0x17, Encap: telemetry.EncapUDP, Trailer: 16}
	raw.INT = telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xcc00, HopML: 6, RemHops: 4, ShimType: 1, ShimExtra: 0}
	intHops(&raw, 2, telemetry.FNodeID|telemetry.FIngressPort|telemetry.FEgressPort|telemetry.FIngressTS|telemetry.FEgressTS, true)
	var gpe telemetry.Report
	gpe.Format = telemetry.FormatINTMD
	gpe.Has = telemetry.HasFlow
	gpe.Flow = flow("172.16.0.1", "172.16.0.2", 1234, 80, 6)
	gpe.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, Encap: telemetry.EncapGPE, EncapArg: 0x82, Nested: telemetry.LinkEthernet,
		Tunnel: flow("10.3.0.1", "10.3.0.2", 49152, 4790, 17)}
	gpe.INT = telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xb000, HopML: 3, RemHops: 2, ShimType: 1}
	intHops(&gpe, 3, telemetry.FNodeID|telemetry.FHopLatency|telemetry.FQueueID|telemetry.FQueueOccupancy, true)
	out["int-md"] = []telemetry.Report{raw, gpe}

	// DTA: one of each primitive, and an Append batch.
	dta := func(op telemetry.DTAOp) telemetry.Report {
		var r telemetry.Report
		r.Format = telemetry.FormatDTA
		r.DTA = telemetry.DTA{Op: op, HeaderLen: 2}
		return r
	}
	kw := dta(telemetry.DTAKeyWrite)
	kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = 2, 4, 4
	copy(kw.DTA.Key[:], []byte{0, 0, 0, 0x7b})
	copy(kw.DTA.Data[:], []byte{0xde, 0xad, 0xbe, 0xef})
	ki := dta(telemetry.DTAKeyIncrement)
	ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 4, 4, 1500
	copy(ki.DTA.Key[:], []byte{0, 0, 0, 1})
	pc := dta(telemetry.DTAPostcard)
	pc.DTA.Hop, pc.DTA.KeyLen, pc.DTA.DataLen = 3, 4, 4
	copy(pc.DTA.Key[:], []byte{0xc0, 0xa8, 0, 1})
	copy(pc.DTA.Data[:], []byte{0, 0, 0, 42})
	out["dta"] = []telemetry.Report{kw, ki, pc}
	var batch []telemetry.Report
	for i := 0; i < 4; i++ {
		a := dta(telemetry.DTAAppend)
		a.DTA.ListID, a.DTA.DataLen = 3, 4
		copy(a.DTA.Data[:], []byte{0, 0, 1, byte(i)})
		batch = append(batch, a)
	}
	out["dta-batch"] = batch

	// INT-label: an ordinary export with three items, and a specific-flow one.
	var lab telemetry.Report
	lab.Format = telemetry.FormatLabel
	for i := 0; i < 3; i++ {
		lab.Labels[i] = telemetry.LabelItem{SwitchID: uint8(3 - i), IngressPort: 1, EgressPort: uint8(2 + i),
			IngressTS: 1_000_000 + uint64(i), EgressTS: 1_000_500 + uint64(i), EnqTS: 900, EnqQDepth: uint32(10 * i),
			DeqTimedelta: 300, DeqQDepth: uint32(5 * i)}
	}
	lab.NLabels = 3
	spec := lab
	spec.LabelSpecific, spec.NLabels = true, 2
	out["int-label"] = []telemetry.Report{lab, spec}
	return out, nil
}

// ports of the golden captures: the defaults of `intake decode`.
var ports = map[string]uint16{"tr0.5": 32766, "tr1.0": 54321, "tr2.0": 32766, "dta": 40040, "int-label": 40050}

// captures encodes the reports: one datagram per report, except the TR v2.0 capture's first
// two reports (one coalesced packet) and the DTA batch.
func captures() (map[string][]datagram, error) {
	rs, err := reports()
	if err != nil {
		return nil, err
	}
	cfg := wire.DefaultConfig()
	enc, err := wire.NewEncoder(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string][]datagram{}
	add := func(name string, port uint16, group []telemetry.Report) error {
		b, err := enc.AppendBatch(nil, group)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = append(out[name], datagram{port, b})
		return nil
	}
	for _, name := range []string{"tr0.5", "tr1.0", "int-md", "dta", "int-label"} {
		for i := range rs[name] {
			if err := add(name, ports[name], rs[name][i:i+1]); err != nil {
				return nil, err
			}
		}
	}
	if err := add("dta", ports["dta"], rs["dta-batch"]); err != nil {
		return nil, err
	}
	if err := add("tr2.0", ports["tr2.0"], rs["tr2.0"][:2]); err != nil {
		return nil, err
	}
	if err := add("tr2.0", ports["tr2.0"], rs["tr2.0"][2:]); err != nil {
		return nil, err
	}
	return out, nil
}

var captureTime = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// files returns each capture's pcap bytes, by file name.
func files() (map[string][]byte, error) {
	cs, err := captures()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for name, ds := range cs {
		var buf bytes.Buffer
		w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Microsecond)
		if err != nil {
			return nil, err
		}
		for i, d := range ds {
			frame := d.payload
			if d.port != 0 {
				f := pcap.UDPFrame{SrcMAC: [6]byte{2, 0, 0, 0, 0, 0x10}, DstMAC: [6]byte{2, 0, 0, 0, 0, 0x20},
					Src: netip.MustParseAddrPort("192.0.2.10:0"), Dst: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), d.port)}
				frame = pcap.AppendUDPFrame(nil, &f, d.payload)
			}
			if err := w.WritePacket(captureTime.Add(time.Duration(i)*time.Millisecond), frame); err != nil {
				return nil, err
			}
		}
		out[name+".pcap"] = buf.Bytes()
	}
	return out, nil
}

func main() {
	dir := flag.String("dir", "testdata/golden", "output directory")
	flag.Parse()
	fs, err := files()
	if err == nil {
		err = os.MkdirAll(*dir, 0o755)
	}
	for name, b := range fs {
		if err != nil {
			break
		}
		err = os.WriteFile(filepath.Join(*dir, name), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goldenpcap:", err)
		os.Exit(1)
	}
}
