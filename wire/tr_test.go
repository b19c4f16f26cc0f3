package wire

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// hx decodes hex with spaces and '|' separators, as the spec digest writes its vectors.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

func mustDecoder(t testing.TB, cfg Config) *Decoder {
	t.Helper()
	d, err := NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decodeOne decodes an input that must hold exactly one report.
func decodeOne(t *testing.T, d *Decoder, in Input, b []byte) telemetry.Report {
	t.Helper()
	rs, errs := d.DecodeAll(in, b)
	if len(errs) > 0 {
		t.Fatalf("decode error: %v", &errs[0])
	}
	if len(rs) != 1 {
		t.Fatalf("got %d reports, want 1", len(rs))
	}
	return rs[0]
}

func flow4(src, dst string, sport, dport uint16, proto uint8) telemetry.FlowKey {
	var k telemetry.FlowKey
	k.SetAddrs(netip.MustParseAddr(src), netip.MustParseAddr(dst))
	k.SrcPort, k.DstPort, k.Proto = sport, dport, proto
	return k
}

func nodeIDs(r *telemetry.Report) []uint32 {
	var ids []uint32
	for _, h := range r.HopList() {
		ids = append(ids, h.NodeID)
	}
	return ids
}

// The one public capture of an INT report (testdata/onos-bmv2-int.pcap): ONOS basic pipeline on BMv2,
// TR v0.5 with the older 2-bit-Ver INT header over TCP, marked by DSCP 0x01.
const onosFrame = "000000000304aabbccddeeff08004500007b00000000ff1100000a0003050a000204000004d200670000002000010000000000000000ffffffffffff00000000010108004504004500010000400663cb0a0001010a000203f93c04d200000000000000005002200019cf00000100070000012003800000000000000200000003000000010604d20061"

func TestONOSBMv2Capture(t *testing.T) {
	frame := hx(t, onosFrame)
	payload := frame[42:] // Ethernet 14 + IPv4 20 + UDP 8
	r := decodeOne(t, mustDecoder(t, DefaultConfig()), InputReport, payload)
	if r.Format != telemetry.FormatTR05 || r.TR.Ver != 0 || r.TR.NProto != 0 {
		t.Errorf("format %v ver %d nproto %d", r.Format, r.TR.Ver, r.TR.NProto)
	}
	if r.Flags != telemetry.FlagFlow || r.HWID != 1 || r.Seq != 0 || r.IngressTS != 0 {
		t.Errorf("flags %v hw %d seq %d ts %d", r.Flags, r.HWID, r.Seq, r.IngressTS)
	}
	if r.Has&telemetry.HasNodeID != 0 || r.ReporterHop {
		t.Errorf("NProto 0 report must not claim a node id or reporter hop")
	}
	if want := flow4("10.0.1.1", "10.0.2.3", 63804, 1234, 6); r.Flow != want {
		t.Errorf("flow %+v, want %+v", r.Flow, want)
	}
	if r.Inner.DSCP != 1 || r.Inner.Encap != telemetry.EncapTCP || r.Inner.Trailer != 1 {
		t.Errorf("inner %+v", r.Inner)
	}
	in := r.INT
	if in.Version != telemetry.INT05 || in.Bitmap != 0x8000 || in.MaxHops != 32 || in.OrigProto != 6 || in.OrigPort != 1234 {
		t.Errorf("int %+v", in)
	}
	if got := nodeIDs(&r); len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 1 {
		t.Errorf("hop node ids %v, want [2 3 1]", got)
	}
	for i, h := range r.HopList() {
		if h.Fields != telemetry.FNodeID {
			t.Errorf("hop %d fields %b, want node id only", i, h.Fields)
		}
	}
}
