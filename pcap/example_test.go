package pcap_test

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/intake-int/intake/pcap"
)

// A Reader reads a classic pcap or pcapng file packet by packet; UDP finds the datagram in
// each frame, as `intake decode` and `serve --capture` do. The capture here is written by a
// Writer: two UDP datagrams and a frame that holds no UDP.
func ExampleReader() {
	var file bytes.Buffer
	w, err := pcap.NewWriter(&file, pcap.LinkEthernet, pcap.Nanosecond)
	if err != nil {
		panic(err)
	}
	f := pcap.UDPFrame{Src: netip.MustParseAddrPort("10.0.3.1:4000"), Dst: netip.MustParseAddrPort("10.0.0.100:32766")}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v6 := pcap.UDPFrame{Src: netip.MustParseAddrPort("[2001:db8::1]:4001"), Dst: netip.MustParseAddrPort("[2001:db8::2]:32766")}
	for i, frame := range [][]byte{
		pcap.AppendUDPFrame(nil, &f, []byte("first")),
		make([]byte, 60), // an Ethernet frame of EtherType 0
		pcap.AppendUDPFrame(nil, &v6, []byte("second")),
	} {
		if err := w.WritePacket(t0.Add(time.Duration(i)*time.Millisecond), frame); err != nil {
			panic(err)
		}
	}

	rd, err := pcap.NewReader(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println("link", rd.LinkType())
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		d, ok := pcap.UDP(p.Data, p.Link)
		if !ok {
			fmt.Printf("%s at offset %d: %d bytes, no UDP datagram\n", p.Time.Format(time.StampMilli), p.Offset, len(p.Data))
			continue
		}
		fmt.Printf("%s at offset %d: %s:%d > %s:%d %q\n", p.Time.Format(time.StampMilli), p.Offset, d.Src, d.SrcPort, d.Dst, d.DstPort, d.Payload)
	}
	// Output:
	// link ethernet
	// Jan  2 03:04:05.000 at offset 24: 10.0.3.1:4000 > 10.0.0.100:32766 "first"
	// Jan  2 03:04:05.001 at offset 87: 60 bytes, no UDP datagram
	// Jan  2 03:04:05.002 at offset 163: 2001:db8::1:4001 > 2001:db8::2:32766 "second"
}
