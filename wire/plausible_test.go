package wire

import (
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// udpPayload returns the UDP payload of the first frame of a capture in testdata/third-party
// (Ethernet, IPv4 without options, UDP).
func udpPayload(t testing.TB, name string) []byte {
	t.Helper()
	f := pcapFrame(t, name)
	if len(f) < 42 || f[12] != 0x08 || f[13] != 0x00 || f[14] != 0x45 || f[23] != protoUDP {
		t.Fatalf("%s: not Ethernet/IPv4/UDP", name)
	}
	return f[42:]
}

// An INT data packet's UDP payload sent to a report port (as found by `intake decode --port
// 17000=report` on the GEANT testbed capture, `intake replay` of GEANT's DPDK input to a
// report port) starts with an INT v1.0 shim, 0x01: Ver 0, NProto 1, a TR v0.5 drop report to
// a decoder that only reads the first nibble. Its reserved bits are not zero; with each
// check undone in turn, the next one still refuses it: the drop header's pad, then the inner
// frame (an EtherType of 0, a frame cut short). No quirk makes it a report.
func TestMispointedDataPackets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clear []int // payload bytes to zero, undoing the checks before
		want  Error
	}{
		{"geant-2601-double-header.pcap", nil, Error{Reason: BadValue, Header: "tr0.5 fixed header", Field: "reserved", Offset: 1, Value: 0x40}},
		{"geant-2601-double-header.pcap", []int{2}, Error{Reason: BadValue, Header: "tr0.5 drop header", Field: "pad", Offset: 22, Value: 0xc7fc}},
		{"geant-2601-double-header.pcap", []int{2, 22, 23}, Error{Reason: BadValue, Header: "ethernet", Field: "ethertype", Offset: 36}},
		{"geant-dpdk-int.pcap", nil, Error{Reason: BadValue, Header: "tr0.5 fixed header", Field: "reserved", Offset: 1, Value: 0x24}},
		{"geant-dpdk-int.pcap", []int{2}, Error{Reason: Truncated, Header: "ethernet", Field: "ethertype", Offset: 36}},
	} {
		b := udpPayload(t, tc.name)
		for _, i := range tc.clear {
			b[i] = 0
		}
		for i, d := range append(producerDecoders(t), mustDecoder(t, DefaultConfig())) {
			rs, errs := d.DecodeAll(InputReport, b)
			if len(rs) != 0 || len(errs) != 1 || errs[0] != tc.want {
				t.Errorf("%s, bytes %v cleared, decoder %d: %d reports %+v, errors %+v; want %+v", tc.name, tc.clear, i, len(rs), rs, errs, tc.want)
			}
		}
	}
}

// Each plausibility check of TR v0.5 and v1.0 alone turns a report into a decode error, and
// a broken packet past its IP header stays what it was: a report kept with an inner error.
func TestPlausibility(t *testing.T) {
	const (
		drop = "01800001 0000000b 11223344 | 00000001 00030000 001d0000 | " // TR v0.5 drop report (spec digest)
		eth  = "020000000002 020000000001 "
		ip   = "45000024 00000000 40110000 0a000001 0a000002 | 04d20050 00100000 | 0102030405060708" // IPv4/UDP, 36 bytes
		tr10 = "16140040 00000001 0000000a 11223344 00030004 02000100 | "                            // TR v1.0 (spec digest), NProt 0
	)
	for _, tc := range []struct {
		name  string
		hex   string
		want  *Error // the decode error; nil: a report
		inner *Error // the report's inner error
	}{
		{"valid drop report", drop + eth + "0800" + ip, nil, nil},
		{"reserved bit 11", "01900001 0000000b 11223344 | 00000001 00030000 001d0000", &Error{Reason: BadValue, Header: "tr0.5 fixed header", Field: "reserved", Offset: 1, Value: 1 << 14}, nil},
		{"reserved bit 25", "01800041 0000000b 11223344 | 00000001 00030000 001d0000", &Error{Reason: BadValue, Header: "tr0.5 fixed header", Field: "reserved", Offset: 1, Value: 1}, nil},
		{"nproto 3: host-int's drop summary", "03800001 0000000b 11223344", &Error{Reason: Unsupported, Header: "tr0.5 fixed header", Field: "nproto", Value: 3}, nil},
		{"nproto 5", "05800001 0000000b 11223344", &Error{Reason: BadValue, Header: "tr0.5 fixed header", Field: "nproto", Value: 5}, nil},
		{"drop header pad", "01800001 0000000b 11223344 | 00000001 00030000 001d0100", &Error{Reason: BadValue, Header: "tr0.5 drop header", Field: "pad", Offset: 22, Value: 0x100}, nil},
		{"no inner frame", drop, nil, nil},
		{"frame cut in the Ethernet header", drop + "020000000002 0200", &Error{Reason: Truncated, Header: "ethernet", Field: "ethertype", Offset: 32}, nil},
		{"802.3 length 0", drop + eth + "0000" + ip, &Error{Reason: BadValue, Header: "ethernet", Field: "ethertype", Offset: 36}, nil},
		{"EtherType 0x05ff", drop + eth + "05ff" + ip, &Error{Reason: BadValue, Header: "ethernet", Field: "ethertype", Offset: 36, Value: 0x5ff}, nil},
		{"802.3 frame: an STP BPDU", drop + eth + "0026 424203 0000 00 00" + "8000020000000001 00000000 8000020000000001 8001 0000 1400 0200 0f00", nil, nil},
		{"ARP", drop + eth + "0806 0001 0800 0604 0001", nil, nil},
		{"IPv6 under EtherType IPv4", drop + eth + "0800 6" + ip[1:], &Error{Reason: BadValue, Header: "ipv4", Field: "version", Offset: 38, Value: 6}, nil},
		{"IHL 4", drop + eth + "0800 44" + ip[2:], &Error{Reason: BadLength, Header: "ipv4", Field: "ihl", Offset: 38, Value: 4}, nil},
		{"IPv4 total length 19", drop + eth + "0800 45000013" + ip[8:], &Error{Reason: BadLength, Header: "ipv4", Field: "total_length", Offset: 40, Value: 19}, nil},
		{"IPv4 header cut", drop + eth + "0800 45000024 00000000 40", &Error{Reason: Truncated, Header: "ipv4", Field: "header", Offset: 38}, nil},
		// Past the IP header the report stands (int-host-reporter's synthesized frames).
		{"TCP header cut", drop + eth + "0800 45000024 00000000 40060000 0a000001 0a000002 | 04d20050 00100000", nil,
			&Error{Reason: Truncated, Header: "tcp", Field: "header", Offset: 58}},
		{"tr1.0 reserved bit 22", "16140240 00000001 0000000a 11223344 00030004 02000100", &Error{Reason: BadValue, Header: "tr1.0 header", Field: "reserved", Offset: 2, Value: 1}, nil},
		{"tr1.0 reserved bit 17", "16144040 00000001 0000000a 11223344 00030004 02000100", &Error{Reason: BadValue, Header: "tr1.0 header", Field: "reserved", Offset: 2, Value: 0x20}, nil},
		{"tr1.0 valid", tr10 + eth + "0800" + ip, nil, nil},
		{"tr1.0 802.3 length 0", tr10 + eth + "0000" + ip, &Error{Reason: BadValue, Header: "ethernet", Field: "ethertype", Offset: 36}, nil},
		// TR v2.0's report lengths give it structure: its inner packet's errors stay inner.
		{"tr2.0 IPv4 version 6", "20000001 0a0b0c0d | 04050020 | 65000014 00000000 40060000 0a000001 0a000002", nil,
			&Error{Reason: BadValue, Header: "ipv4", Field: "version", Offset: 12, Value: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd Reader
			var r telemetry.Report
			rd.Reset(mustDecoder(t, DefaultConfig()), InputReport, hx(t, tc.hex))
			err := rd.Next(&r)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v, want a report", err)
			case tc.want != nil && (err == nil || rd.err != *tc.want):
				t.Fatalf("got %v (%+v), want %+v", err, rd.err, *tc.want)
			}
			if ie := rd.InnerErr(); (ie == nil) != (tc.inner == nil) || ie != nil && *ie != *tc.inner {
				t.Errorf("inner error %+v, want %+v", ie, tc.inner)
			}
		})
	}
}
