package telemetry

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
)

// Reports built by hand, one or more per format, with the exact JSON each must give.
func jsonCases() []struct {
	name string
	r    Report
	want string
} {
	var flow FlowKey
	flow.SetAddrs(netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.2.3"))
	flow.SrcPort, flow.DstPort, flow.Proto = 63804, 1234, 6
	var flow6 FlowKey
	flow6.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"))
	flow6.SrcPort, flow6.DstPort, flow6.Proto = 5000, 6000, 17

	// ONOS BMv2 report (testdata/onos-bmv2-int.pcap): TR v0.5, F, hw_id 1, seq 0, INT v0.5, 3 hops.
	onos := Report{Format: FormatTR05, Flags: FlagFlow, Has: HasSeq | HasIngressTS | HasFlow, HWID: 1, Flow: flow}
	onos.INT = INTHeader{Version: INT05, ShimType: 1, Bitmap: 0x8000, MaxHops: 32, OrigProto: 6, OrigPort: 1234}
	onos.Inner = Inner{Link: LinkEthernet, DSCP: 1, Encap: EncapTCP, Trailer: 1}
	for _, id := range []uint32{2, 3, 1} {
		*onos.AddHop() = Hop{Fields: FNodeID, NodeID: id}
	}

	// TR v0.5 drop report: the switch id and drop reason come from the drop header.
	drop := Report{Format: FormatTR05, Flags: FlagDrop, Has: HasNodeID | HasSeq | HasIngressTS | HasDropReason,
		HWID: 1, NodeID: 1, Seq: 11, IngressTS: 0x11223344, DropReason: 29, ReporterHop: true}
	*drop.AddHop() = Hop{Fields: FNodeID | FIngressPort | FEgressPort | FQueueID, NodeID: 1, IngressPort: 3, QueueID: 0}

	// TR v1.0 with ports and queue words, and an INT v1.0 hop with every v1.0 field.
	tr10 := Report{Format: FormatTR10, Flags: FlagQueue | FlagFlow, Has: HasNodeID | HasSeq | HasIngressTS | HasFlow,
		NodeID: 1, Seq: 10, IngressTS: 0x11223344, Flow: flow6, ReporterHop: true}
	tr10.TR = TRHeader{Ver: 1, NProto: 2, MDBits: 0x28}
	tr10.INT = INTHeader{Version: INT10, ShimType: 1, Flags: 3, Bitmap: 0x8e00, HopML: 9, RemHops: 5, ShimExtra: 0x17, Erratum: true}
	tr10.Inner = Inner{Link: LinkIPv6, DSCP: 0x17, IPOptLen: 8, Encap: EncapUDP}
	*tr10.AddHop() = Hop{Fields: FNodeID | FIngressPort | FEgressPort | FQueueID | FQueueOccupancy,
		NodeID: 1, IngressPort: 3, EgressPort: 4, QueueID: 2, QueueOccupancy: 0x100}
	*tr10.AddHop() = Hop{Fields: FNodeID | FHopLatency | FIngressTS | FEgressTS | FL2IngressPort | FL2EgressPort | FTxUtil,
		NodeID: 7, HopLatency: 250, IngressTS: 1000, EgressTS: 1250, L2IngressPort: 1 << 31, L2EgressPort: 9, TxUtil: 77}

	// TR v2.0 intermediate report with buffer fields, 8-byte timestamps, no INT.
	tr20 := Report{Format: FormatTR20, Flags: FlagFlow | FlagIntermediate, Has: HasNodeID | HasSeq,
		HWID: 63, NodeID: 0x0a0b0c0d, Seq: 1<<22 - 1, ReporterHop: true,
		TR: TRHeader{Ver: 2, RepType: 1, MDBits: 0x0480, DSID: 0x5453, DSMdBits: 0x8000, DSMdStatus: 1, DSMdLen: 2}}
	*tr20.AddHop() = Hop{Fields: FNodeID | FBufferID | FBufferOccupancy | FEgressTS,
		NodeID: 0x0a0b0c0d, BufferID: 255, BufferOccupancy: 1<<24 - 1, EgressTS: 1<<64 - 2}

	// TR v2.0 with no flags, no hops: flags is an empty list.
	bare := Report{Format: FormatTR20, Has: HasNodeID | HasSeq, NodeID: 5}

	// Raw INT-MD data packet, v2.x, with the v0.5 queue-congestion extension on a hop.
	intmd := Report{Format: FormatINTMD, Has: HasFlow, Flow: flow}
	intmd.INT = INTHeader{Version: INT2x, ShimType: 1, Flags: 4, Bitmap: 0x8040, HopML: 5, RemHops: 1, DSID: 1, DSInstr: 2, DSFlags: 3, SourceDS: 1}
	var tun FlowKey
	tun.SetAddrs(netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"))
	tun.SrcPort, tun.DstPort, tun.Proto = 49152, 6081, 17
	intmd.Inner = Inner{Link: LinkEthernet, NVLANs: 2, VLANs: [2]uint16{100, 200}, Encap: EncapGeneve, EncapArg: 0x0103, Tunnel: tun, Nested: LinkIPv4, Trailer: 8}
	// INT v0.5 from Intel host-int (shim type 3, a flow sequence number) in an IPv4 report.
	host := Report{Format: FormatTR05, Flags: FlagFlow, Has: HasSeq | HasIngressTS | HasFlow, Flow: flow,
		TR: TRHeader{NProto: 4, SinkNodeID: 11}}
	host.INT = INTHeader{Version: INT05, ShimType: 3, Bitmap: 0xcc00, MaxHops: 2, SourceSeq: 100, HasSourceSeq: true}
	host.Inner = Inner{Link: LinkIPv4, DSCP: 0x17, Encap: EncapTCP}
	// An INT-MX header (v2.1), no stack.
	mx := Report{Format: FormatINTMD, Has: HasFlow, Flow: flow6}
	mx.INT = INTHeader{Version: INT2x, MX: true, ShimType: 3, Bitmap: 0x9000, SourceDS: 2}
	mx.Inner = Inner{Link: LinkIPv6, Encap: EncapUDPPort, EncapArg: 2}
	*intmd.AddHop() = Hop{Fields: FNodeID | FQueueCongestion, NodeID: 2, QueueCongestion: 12}
	*intmd.AddHop() = Hop{Fields: 0}

	kw := Report{Format: FormatDTA, DTA: DTA{Op: DTAKeyWrite, Redundancy: 2, KeyLen: 4, DataLen: 4,
		Key: [MaxDTAKey]byte{0xde, 0xad, 0xbe, 0xef}, Data: [MaxDTAData]byte{0, 0, 0, 0x7b}}}
	ki := Report{Format: FormatDTA, DTA: DTA{Op: DTAKeyIncrement, HeaderLen: 3, Seq: 200, Retransmit: true, Redundancy: 1, KeyLen: 4,
		Key: [MaxDTAKey]byte{0, 0, 0, 1}, Counter: 1<<64 - 1}}
	pc := Report{Format: FormatDTA, DTA: DTA{Op: DTAPostcard, HeaderLen: 2, Immediate: true, KeyLen: 4, DataLen: 4, Hop: 3,
		Key: [MaxDTAKey]byte{1, 2, 3, 4}, Data: [MaxDTAData]byte{0xa, 0xb, 0xc, 0xd}}}
	ap := Report{Format: FormatDTA, Has: HasSeq, Seq: 9, DTA: DTA{Op: DTAAppend, ListID: 7, DataLen: 4,
		Data: [MaxDTAData]byte{0xff, 0, 0, 1}}}

	label := Report{Format: FormatLabel, LabelSpecific: true, NLabels: 2}
	label.Labels[0] = LabelItem{SwitchID: 3, IngressPort: 1, EgressPort: 2, IngressTS: 1<<48 - 1, EgressTS: 1 << 40,
		EnqTS: 100, EnqQDepth: 1<<24 - 1, DeqTimedelta: 42, DeqQDepth: 5}
	label.Labels[1] = LabelItem{SwitchID: 1}
	plain := Report{Format: FormatLabel, NLabels: 1}

	return []struct {
		name string
		r    Report
		want string
	}{
		{"tr0.5 onos", onos, `{"format":"tr0.5","hw_id":1,"seq":0,"flags":["flow"],"ingress_ts":0,` +
			`"flow":{"src":"10.0.1.1","dst":"10.0.2.3","sport":63804,"dport":1234,"proto":6},"tr":{"ver":0,"nproto":0},` +
			`"inner":{"link":"ethernet","dscp":1,"ip_opt_len":0,"tcp_opts":0,"encap":"tcp","encap_arg":0,"trailer":1},` +
			`"int_version":"0.5","int":{"shim_type":1,"flags":0,"bitmap":32768,"max_hops":32,"shim_extra":0,"orig_port":1234,"orig_proto":6},` +
			`"hops":[{"hop":1,"node_id":1},{"hop":2,"node_id":3},{"hop":3,"node_id":2}]}`},
		{"tr0.5 drop", drop, `{"format":"tr0.5","node_id":1,"hw_id":1,"seq":11,"flags":["drop"],` +
			`"ingress_ts":287454020,"drop_reason":29,"tr":{"ver":0,"nproto":0},"hops":[{"hop":1,"node_id":1,"ingress_port":3,"egress_port":0,"queue_id":0,"reporter":true}]}`},
		{"tr0.5 host-int", host, `{"format":"tr0.5","hw_id":0,"seq":0,"flags":["flow"],"ingress_ts":0,` +
			`"flow":{"src":"10.0.1.1","dst":"10.0.2.3","sport":63804,"dport":1234,"proto":6},"tr":{"ver":0,"nproto":4,"sink_node_id":11},` +
			`"inner":{"link":"ipv4","dscp":23,"ip_opt_len":0,"tcp_opts":0,"encap":"tcp","encap_arg":0,"trailer":0},` +
			`"int_version":"0.5","int":{"shim_type":3,"flags":0,"bitmap":52224,"max_hops":2,"shim_extra":0,"orig_port":0,"orig_proto":0,"source_seq":100}}`},
		{"tr1.0", tr10, `{"format":"tr1.0","node_id":1,"hw_id":0,"seq":10,"flags":["queue","flow"],"ingress_ts":287454020,` +
			`"flow":{"src":"2001:db8::1","dst":"2001:db8::2","sport":5000,"dport":6000,"proto":17},"tr":{"ver":1,"nproto":2,"md_bits":40},` +
			`"inner":{"link":"ipv6","dscp":23,"ip_opt_len":8,"tcp_opts":0,"encap":"udp","encap_arg":0,"trailer":0},"int_version":"1.0",` +
			`"int":{"shim_type":1,"flags":3,"bitmap":36352,"hop_ml":9,"rem_hops":5,"shim_extra":23,"orig_port":0,"orig_proto":0,"erratum":true},` +
			`"hops":[{"hop":1,"node_id":7,"hop_latency":250,"ingress_ts":1000,"egress_ts":1250,"l2_ingress_port":2147483648,"l2_egress_port":9,"tx_util":77},` +
			`{"hop":2,"node_id":1,"ingress_port":3,"egress_port":4,"queue_id":2,"queue_occupancy":256,"reporter":true}]}`},
		{"tr2.0", tr20, `{"format":"tr2.0","node_id":168496141,"hw_id":63,"seq":4194303,"flags":["flow","intermediate"],` +
			`"tr":{"ver":2,"rep_type":1,"in_type":0,"md_bits":1152,"ds_id":21587,"ds_md_bits":32768,"ds_md_status":1,"ds_md_len":2},` +
			`"hops":[{"hop":1,"node_id":168496141,"egress_ts":18446744073709551614,"buffer_id":255,"buffer_occupancy":16777215,"reporter":true}]}`},
		{"tr2.0 bare", bare, `{"format":"tr2.0","node_id":5,"hw_id":0,"seq":0,"flags":[],` +
			`"tr":{"ver":0,"rep_type":0,"in_type":0,"md_bits":0,"ds_id":0,"ds_md_bits":0,"ds_md_status":0,"ds_md_len":0}}`},
		{"int-md", intmd, `{"format":"int-md","flow":{"src":"10.0.1.1","dst":"10.0.2.3","sport":63804,"dport":1234,"proto":6},` +
			`"inner":{"link":"ethernet","vlans":[100,200],"dscp":0,"ip_opt_len":0,"tcp_opts":0,"encap":"geneve","encap_arg":259,` +
			`"tunnel":{"src":"192.0.2.1","dst":"192.0.2.2","sport":49152,"dport":6081,"proto":17},"nested":"ipv4","trailer":8},` +
			`"int_version":"2.x","int":{"shim_type":1,"flags":4,"bitmap":32832,"hop_ml":5,"rem_hops":1,"ds_id":1,"ds_instr":2,"ds_flags":3,"source_ds":1,"shim_extra":0,"orig_port":0,"orig_proto":0},` +
			`"hops":[{"hop":1},{"hop":2,"node_id":2,"queue_congestion":12}]}`},
		{"int-md mx", mx, `{"format":"int-md","flow":{"src":"2001:db8::1","dst":"2001:db8::2","sport":5000,"dport":6000,"proto":17},` +
			`"inner":{"link":"ipv6","dscp":0,"ip_opt_len":0,"tcp_opts":0,"encap":"udp-port","encap_arg":2,"trailer":0},` +
			`"int_version":"2.x","int":{"shim_type":3,"flags":0,"bitmap":36864,"mx":true,"ds_id":0,"ds_instr":0,"ds_flags":0,"source_ds":2,"shim_extra":0,"orig_port":0,"orig_proto":0}}`},
		{"dta key-write", kw, `{"format":"dta","dta":{"op":"key-write","immediate":false,"redundancy":2,"key":"0xdeadbeef","data":"0x0000007b"}}`},
		{"dta key-increment", ki, `{"format":"dta","dta":{"op":"key-increment","header_len":3,"seq":200,"retransmit":true,"immediate":false,` +
			`"redundancy":1,"key":"0x00000001","counter":18446744073709551615}}`},
		{"dta postcard", pc, `{"format":"dta","dta":{"op":"postcard","header_len":2,"immediate":true,"key":"0x01020304","hop":3,"data":"0x0a0b0c0d"}}`},
		{"dta append", ap, `{"format":"dta","seq":9,"dta":{"op":"append","immediate":false,"list":7,"data":"0xff000001"}}`},
		{"int-label", label, `{"format":"int-label","label_items":[` +
			`{"switch_id":1,"ingress_port":0,"egress_port":0,"ingress_ts":0,"egress_ts":0,"enq_ts":0,"enq_qdepth":0,"deq_timedelta":0,"deq_qdepth":0},` +
			`{"switch_id":3,"ingress_port":1,"egress_port":2,"ingress_ts":281474976710655,"egress_ts":1099511627776,"enq_ts":100,"enq_qdepth":16777215,"deq_timedelta":42,"deq_qdepth":5}],"label_specific":true}`},
		{"int-label ordinary", plain, `{"format":"int-label","label_items":[` +
			`{"switch_id":0,"ingress_port":0,"egress_port":0,"ingress_ts":0,"egress_ts":0,"enq_ts":0,"enq_qdepth":0,"deq_timedelta":0,"deq_qdepth":0}]}`},
	}
}

func TestAppendJSON(t *testing.T) {
	for _, tc := range jsonCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendJSON([]byte("prefix "), &tc.r))
			if got != "prefix "+tc.want {
				t.Errorf("\n got %s\nwant %s", got[len("prefix "):], tc.want)
			}
		})
	}
}

// TestAppendJSONParses checks that every object is valid JSON and means what the contract
// says, independently of key order and number formatting.
func TestAppendJSONParses(t *testing.T) {
	wants := map[string]map[string]any{
		"tr0.5 onos": {
			"format": "tr0.5", "hw_id": 1.0, "seq": 0.0, "flags": []any{"flow"}, "ingress_ts": 0.0,
			"flow":        map[string]any{"src": "10.0.1.1", "dst": "10.0.2.3", "sport": 63804.0, "dport": 1234.0, "proto": 6.0},
			"tr":          map[string]any{"ver": 0.0, "nproto": 0.0},
			"inner":       map[string]any{"link": "ethernet", "dscp": 1.0, "ip_opt_len": 0.0, "tcp_opts": 0.0, "encap": "tcp", "encap_arg": 0.0, "trailer": 1.0},
			"int_version": "0.5",
			"int":         map[string]any{"shim_type": 1.0, "flags": 0.0, "bitmap": 32768.0, "max_hops": 32.0, "shim_extra": 0.0, "orig_port": 1234.0, "orig_proto": 6.0},
			"hops":        []any{map[string]any{"hop": 1.0, "node_id": 1.0}, map[string]any{"hop": 2.0, "node_id": 3.0}, map[string]any{"hop": 3.0, "node_id": 2.0}},
		},
		"dta append": {"format": "dta", "seq": 9.0, "dta": map[string]any{"op": "append", "immediate": false, "list": 7.0, "data": "0xff000001"}},
		"dta key-increment": {"format": "dta", "dta": map[string]any{"op": "key-increment", "header_len": 3.0, "seq": 200.0, "retransmit": true,
			"immediate": false, "redundancy": 1.0, "key": "0x00000001", "counter": 18446744073709551615.0}},
		"tr2.0 bare": {"format": "tr2.0", "node_id": 5.0, "hw_id": 0.0, "seq": 0.0, "flags": []any{},
			"tr": map[string]any{"ver": 0.0, "rep_type": 0.0, "in_type": 0.0, "md_bits": 0.0, "ds_id": 0.0, "ds_md_bits": 0.0, "ds_md_status": 0.0, "ds_md_len": 0.0}},
	}
	for _, tc := range jsonCases() {
		var m map[string]any
		if err := json.Unmarshal(AppendJSON(nil, &tc.r), &m); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if w, ok := wants[tc.name]; ok && !reflect.DeepEqual(m, w) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, m, w)
		}
		if m["format"] != tc.r.Format.String() {
			t.Errorf("%s: format %v", tc.name, m["format"])
		}
	}
}

func TestAppendJSONAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	for _, tc := range jsonCases() {
		if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], &tc.r) }); n != 0 {
			t.Errorf("%s: %v allocations", tc.name, n)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	cases := jsonCases()
	r := &cases[3].r // tr1.0
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], r)
	}
}

func TestFlowKeyString(t *testing.T) {
	var k FlowKey
	k.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	k.SrcPort, k.DstPort, k.Proto = 1000, 80, 6
	if got, want := k.String(), "10.0.0.1:1000 > 10.0.0.2:80 tcp"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	k.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"))
	k.Proto = 132
	if got, want := k.String(), "[2001:db8::1]:1000 > [2001:db8::2]:80 sctp"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := FlowString("10.0.0.1", 1000, "172.16.0.1", 5201, 17); got != "10.0.0.1:1000 > 172.16.0.1:5201 udp" {
		t.Errorf("FlowString: %q", got)
	}
	if got := FlowString("2001:db8::1", 1, "2001:db8::2", 2, 47); got != "[2001:db8::1]:1 > [2001:db8::2]:2 proto 47" {
		t.Errorf("FlowString v6: %q", got)
	}
}
