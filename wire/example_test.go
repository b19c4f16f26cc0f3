package wire_test

import (
	"fmt"
	"net/netip"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// A Reader decodes the reports of one datagram in place, one per Next, into a Report the
// caller owns; it is Reset for each datagram and kept for the next. Here the datagram is two
// TR v2.0 reports coalesced by the Encoder, as a switch sends them.
func ExampleReader() {
	var rs [2]telemetry.Report
	for i := range rs {
		r := &rs[i]
		r.Format = telemetry.FormatTR20
		r.TR.Ver, r.TR.RepType, r.TR.NProto = 2, 1, 3
		r.NodeID, r.Seq, r.HWID = 5, 10, 1 // one TR v2.0 packet: one group header, one sequence number
		r.Has = telemetry.HasNodeID | telemetry.HasSeq | telemetry.HasFlow
		r.Flags = telemetry.FlagFlow
		r.Flow.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.2"))
		r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(40000+i), 443, 17
		r.Inner = telemetry.Inner{Link: telemetry.LinkEthernet, DSCP: 0x17, Encap: telemetry.EncapUDP}
		r.INT = telemetry.INTHeader{Version: telemetry.INT2x, ShimType: 1, Bitmap: 0xa000, HopML: 2, RemHops: 6, ShimExtra: 0x17}
		for hop := range 2 {
			h := r.AddHop()
			h.Fields = telemetry.FNodeID | telemetry.FHopLatency
			h.NodeID, h.HopLatency = uint32(2-hop), uint32(1000*(i+1))
		}
	}
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		panic(err)
	}
	datagram, err := enc.AppendBatch(nil, rs[:])
	if err != nil {
		panic(err)
	}

	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		panic(err)
	}
	var rd wire.Reader
	var r telemetry.Report
	rd.Reset(dec, wire.InputReport, datagram)
	for {
		err := rd.Next(&r)
		if err == wire.Done {
			break
		}
		if err != nil {
			fmt.Println("malformed:", err) // the Reader goes on with the next report it can find
			continue
		}
		fmt.Printf("%s seq %d node %d flow %s:", r.Format, r.Seq, r.NodeID, &r.Flow)
		for _, h := range r.HopList() {
			fmt.Printf(" hop %d latency %d", h.NodeID, h.HopLatency)
		}
		fmt.Println()
	}
	// Output:
	// tr2.0 seq 10 node 5 flow 10.0.0.1:40000 > 10.0.1.2:443 udp: hop 2 latency 1000 hop 1 latency 1000
	// tr2.0 seq 10 node 5 flow 10.0.0.1:40001 > 10.0.1.2:443 udp: hop 2 latency 2000 hop 1 latency 2000
}
