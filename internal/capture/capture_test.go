package capture

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestDecodeONOS walks the committed ONOS BMv2 capture (one TR v0.5 report to UDP port
// 1234): mapped, it is one report from a UDP datagram; unmapped, an ordinary packet.
func TestDecodeONOS(t *testing.T) {
	mapped, err := NewSetup(nil, Options{Ports: map[uint16]wire.Input{1234: wire.InputReport}})
	if err != nil {
		t.Fatal(err)
	}
	var items []Item
	var nodes []uint32
	st := decodeFile(t, "../../testdata/onos-bmv2-int.pcap", mapped, func(it *Item) {
		items = append(items, *it)
		for _, h := range it.Report.HopList() {
			nodes = append(nodes, h.NodeID)
		}
	})
	if len(items) != 1 {
		t.Fatalf("%d items, want 1", len(items))
	}
	it := items[0]
	if it.Frame != 1 || it.Index != 1 || it.Input != wire.InputReport || !it.UDP || it.Datagram.DstPort != 1234 || it.Err != nil {
		t.Errorf("item %+v", it)
	}
	if want := []uint32{2, 3, 1}; !slices.Equal(nodes, want) {
		t.Errorf("hops %v, want %v", nodes, want)
	}
	if st.Reports[telemetry.FormatTR05] != 1 || st.String() != "frames 1, reports 1 (tr0.5 1), errors 0, skipped 0" {
		t.Errorf("stats %q", st.String())
	}

	// Unmapped, the datagram is skipped, and the summary says which flag decodes it.
	defaults, err := NewSetup(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"../../testdata/onos-bmv2-int.pcap", "../../testdata/third-party/onos-int-report.pcap"} {
		st = decodeFile(t, file, defaults, func(it *Item) { t.Errorf("unmapped: item %+v", *it) })
		want := "frames 1, reports 0, errors 0, skipped 1\n" +
			"hint: 1 datagram to UDP port 1234, which no input is mapped to, holds telemetry reports: decode with --port 1234=report"
		if st.String() != want || st.Unmapped[1234] != 1 {
			t.Errorf("%s unmapped: %q, want %q", file, st.String(), want)
		}
	}
}

func decodeFile(t *testing.T, file string, s *Setup, fn func(*Item)) Stats {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := Decode(f, s, fn)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// GEANT's captures (testdata/third-party/README.md): without the quirk each frame is an
// error naming it, and the summary says which flag decodes them; with it, INT reports.
func TestDecodeGEANTQuirk(t *testing.T) {
	plain, err := NewSetup(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	quirk, err := NewSetup(nil, Options{Quirks: []string{"geant"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, reason string
		hops         []uint32
	}{
		{"geant-2601-double-header.pcap", "unknown_version", []uint32{2, 1}},
		{"geant-dpdk-int.pcap", "bad_value", []uint32{0}},
	} {
		path := "../../testdata/third-party/" + tc.file
		var errs []string
		st := decodeFile(t, path, plain, func(it *Item) {
			if it.Err == nil {
				t.Errorf("%s: decoded without the quirk", tc.file)
				return
			}
			errs = append(errs, string(it.AppendJSON(nil)))
		})
		want := "frames 1, reports 0, errors 1 (" + tc.reason + " 1), skipped 0\n" +
			"hint: 1 report shows a known producer deviation that decoder.quirks.geant decodes (--quirk geant)"
		if st.String() != want || len(errs) != 1 || !strings.Contains(errs[0], `"setting":"quirks.geant"`) {
			t.Errorf("%s without the quirk: %q %v", tc.file, st.String(), errs)
		}
		var nodes []uint32
		st = decodeFile(t, path, quirk, func(it *Item) {
			if it.Err != nil || it.Report.Format != telemetry.FormatINTMD {
				t.Errorf("%s: %v", tc.file, it.Err)
				return
			}
			for _, h := range it.Report.HopList() {
				nodes = append(nodes, h.NodeID)
			}
		})
		if st.String() != "frames 1, reports 1 (int-md 1), errors 0, skipped 0" || !slices.Equal(nodes, tc.hops) {
			t.Errorf("%s with the quirk: %q, hops %v", tc.file, st.String(), nodes)
		}
	}
}

// A serve configuration's receive path decides the ports and each port's decoder.
func TestSetupFromConfig(t *testing.T) {
	geant := wire.DefaultConfig()
	geant.Quirks.GEANT = true
	dta3 := wire.DefaultConfig()
	dta3.DTA.HeaderLen = 3
	ic := &ingest.Config{Decoder: dta3, Listeners: []ingest.Listener{
		{Format: "report", Port: 8090, Decoder: &geant},
		{Format: "dta", Port: 40040},
		{Format: "int-label", Port: 0}, // a port the kernel picks: nothing to map
	}}
	s, err := NewSetup(ic, Options{Quirks: []string{"host_int"}, Ports: map[uint16]wire.Input{1234: wire.InputReport}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ports) != 3 || s.Ports[8090].Input != wire.InputReport || s.Ports[40040].Input != wire.InputDTA || s.Ports[1234].Input != wire.InputReport {
		t.Fatalf("ports %+v", s.Ports)
	}
	// A listener's decoder is its own (config.Parse merges overrides key by key into it).
	if c := s.Ports[8090].Decoder.Config(); !c.Quirks.GEANT || !c.Quirks.HostINT || c.DTA.HeaderLen != 2 {
		t.Errorf("listener decoder %+v", c)
	}
	if s.Ports[40040].Decoder != nil || s.Decoder.Config().DTA.HeaderLen != 3 || !s.Decoder.Config().Quirks.HostINT {
		t.Errorf("top decoder %+v", s.Decoder.Config())
	}
	if _, err := NewSetup(ic, Options{Quirks: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "quirks.nope: unknown quirk (allowed: intcollector, tr05_ver1, intcollector_gen, geant, host_int)") {
		t.Errorf("unknown quirk: %v", err)
	}
}

// HoldsReports must not take ordinary UDP traffic for telemetry reports: payloads of the
// common protocols (as their RFCs lay them out) and random bytes of every size. It must
// take real ones: the ONOS report and the golden captures' reports.
func TestHoldsReportsOnOrdinaryTraffic(t *testing.T) {
	s, _ := NewSetup(nil, Options{})
	dec := s.Decoder
	ordinary := map[string]string{
		"dns query":      "1a2b01000001000000000000076578616d706c6503636f6d0000010001",
		"dns response":   "1a2b81800001000100000000076578616d706c6503636f6d0000010001c00c000100010000012c00045db8d822",
		"ntp client":     "e30004fa00000000000000000000000000000000000000000000000000000000000000000000000000000000e9a1b2c3d4e5f607",
		"dhcp discover":  "0101060012345678000000000000000000000000000000000000000002000000000100000000000000000000",
		"snmp get":       "302602010104067075626c6963a019020101020100020100300e300c06082b060102010101000500",
		"syslog":         "3c3133343e4f637420313120323232333a31343a3135206d796d616368696e65207375206d657373616765",
		"rtp":            "80e0000100000001deadbeef0102030405060708090a0b0c0d0e0f10",
		"quic initial":   "c300000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f3991c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df621230c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c2084dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f89937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c7468449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663ac69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe5896425c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ffef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009ddc324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77fcb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450efc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03adea2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e72404790a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f440591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca06948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f0940054da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd46840647e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241e221af44860018ab0856972e194cd934",
		"vxlan":          "0800000000000100" + "020000000002020000000001" + "0800" + "4500002800004000400600000a0000010a000002" + "04d20050000000000000000050020000" + "00000000",
		"wireguard init": "0100000012345678" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12",
	}
	for name, h := range ordinary {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if HoldsReports(dec, b) {
			t.Errorf("%s taken for telemetry reports", name)
		}
	}
	rng := rand.NewChaCha8([32]byte{16})
	buf := make([]byte, 1500)
	for i := range 200000 {
		n := 1 + i%len(buf)
		_, _ = rng.Read(buf[:n])
		if HoldsReports(dec, buf[:n]) {
			t.Fatalf("random payload %x taken for telemetry reports", buf[:n])
		}
		// The same bytes behind a plausible report header (TR v0.5 flow, v0.5 local, v1.0,
		// v2.0 group): what follows must still parse as one.
		if n >= 16 {
			copy(buf, [][]byte{{0x00, 0x20, 0x00, 0x01}, {0x02, 0x20, 0x00, 0x00}, {0x14, 0x00, 0x00, 0x40}, {0x20, 0x00, 0x00, 0x01}}[i%4])
			if HoldsReports(dec, buf[:n]) {
				t.Fatalf("random payload after a report header %x taken for telemetry reports", buf[:n])
			}
		}
	}
	// Real reports are taken: every golden capture's report datagrams.
	for _, name := range []string{"tr0.5", "tr1.0", "tr2.0"} {
		n := 0
		decodeFile(t, "../../testdata/golden/"+name+".pcap", s, func(it *Item) {
			if it.UDP && it.Index == 1 && HoldsReports(dec, it.Datagram.Payload) {
				n++
			}
		})
		if n == 0 {
			t.Errorf("%s: no datagram taken for reports", name)
		}
	}
}
