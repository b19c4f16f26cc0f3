package wire

import (
	"net/netip"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// benchReport is the benchmarks' reference packet: a TR v2.0 packet carrying one INT-MD report
// (Ethernet/IPv4/UDP inner packet, INT v2.x shim) with a 5-hop stack of 8 fields per hop.
func benchReport() telemetry.Report {
	var r telemetry.Report
	r.Format = telemetry.FormatTR20
	r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
	r.NodeID, r.Seq, r.HWID = 5, 77, 1
	r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
	r.Flags = telemetry.FlagFlow
	r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
	r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = 40000, 443, protoUDP
	r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapUDP, Trailer: 2}
	r.INT = telemetry.INTHeader{Version: telemetry.INT2x, ShimType: 1, Bitmap: 0xff00, HopML: 11, RemHops: 3, ShimExtra: 0x17}
	for i := 0; i < 5; i++ {
		h := r.AddHop()
		*h = telemetry.Hop{Fields: 0x07ff, NodeID: uint32(5 - i), IngressPort: 1, EgressPort: 2,
			HopLatency: 1000, QueueID: 3, QueueOccupancy: 40, IngressTS: 1e9, EgressTS: 1e9 + 1000,
			L2IngressPort: 7, L2EgressPort: 8, TxUtil: 55}
	}
	return r
}

func BenchmarkDecodeTR20INTMD5Hops(b *testing.B) {
	want := benchReport()
	enc, _ := NewEncoder(DefaultConfig())
	pkt, err := enc.Append(nil, &want)
	if err != nil {
		b.Fatal(err)
	}
	dec := mustDecoder(b, DefaultConfig())
	var rd Reader
	var r telemetry.Report
	rd.Reset(dec, InputReport, pkt)
	if err := rd.Next(&r); err != nil || !r.Equal(&want) {
		b.Fatalf("reference packet does not decode to itself: %v", err)
	}
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rd.Reset(dec, InputReport, pkt)
		for rd.Next(&r) == nil {
		}
	}
}

// BenchmarkEncodeTR20INTMD5Hops is what the generator pays per datagram it builds.
func BenchmarkEncodeTR20INTMD5Hops(b *testing.B) {
	r := benchReport()
	enc, _ := NewEncoder(DefaultConfig())
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = enc.Append(buf[:0], &r)
	}
}
