package partition

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// The vectors docs/scale-out.md gives implementers: a switch or load balancer that computes
// these computes the collectors' owners.
func TestHashVectors(t *testing.T) {
	if h := Hash([]byte("123456789")); h != 0xe3069283 {
		t.Errorf("CRC-32C check value: %08x, want e3069283", h)
	}
	var k telemetry.FlowKey
	k.SetIPv4([]byte{10, 0, 0, 1}, []byte{172, 16, 0, 1})
	k.SrcPort, k.DstPort, k.Proto = 1024, 5201, 17
	var b KeyBuf
	fk := FlowKey(&b, &k)
	if got := hex.EncodeToString(fk); got != "0a000001ac1000010400145111" {
		t.Errorf("flow key bytes %s", got)
	}
	if h := Hash(fk); h != 0xeb2de7b0 || Owner(fk, 3) != 0 || Owner(fk, 7) != int(0xeb2de7b0%7) {
		t.Errorf("flow key hash %08x owner %d", h, Owner(fk, 3))
	}
	for _, c := range []struct {
		id    uint32
		hash  uint32
		owner int
	}{{1, 0xba0cc8c4, 0}, {2, 0xa95c3b30, 2}, {3, 0x5b37b833, 0}, {7, 0x9cad2f2c, 0}} {
		key := IDKey(&b, c.id)
		if h, o := Hash(key), Owner(key, 3); h != c.hash || o != c.owner {
			t.Errorf("switch %d: hash %08x owner %d, want %08x %d", c.id, h, o, c.hash, c.owner)
		}
	}
	if Owner(fk, 1) != 0 || Owner(fk, 0) != 0 {
		t.Error("one member owns everything")
	}
	var k6 telemetry.FlowKey
	k6.IPv6 = true
	k6.Src[0], k6.Dst[15], k6.SrcPort, k6.DstPort, k6.Proto = 0x20, 1, 1, 2, 6
	if fk6 := FlowKey(&b, &k6); len(fk6) != 37 || fk6[0] != 0x20 || fk6[31] != 1 || fk6[33] != 1 || fk6[35] != 2 || fk6[36] != 6 {
		t.Errorf("IPv6 flow key %x", fk6)
	}
}

// ReportKey on reports as a collector decodes them from the wire: the key each format is
// partitioned by.
func TestReportKey(t *testing.T) {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(r *telemetry.Report, in wire.Input) *telemetry.Report {
		t.Helper()
		b, err := enc.Append(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		rs, errs := dec.DecodeAll(in, b)
		if len(errs) > 0 || len(rs) != 1 {
			t.Fatalf("decode: %v %d", errs, len(rs))
		}
		return &rs[0]
	}
	var b KeyBuf

	kw := &telemetry.Report{Format: telemetry.FormatDTA}
	kw.DTA.Op, kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = telemetry.DTAKeyWrite, 1, 4, 4
	binary.BigEndian.PutUint32(kw.DTA.Key[:], 0x0a000001)
	if got := hex.EncodeToString(ReportKey(&b, roundTrip(kw, wire.InputDTA))); got != "0a000001" {
		t.Errorf("Key-Write key %s, want its key bytes", got)
	}
	ap := &telemetry.Report{Format: telemetry.FormatDTA}
	ap.DTA.Op, ap.DTA.ListID, ap.DTA.DataLen = telemetry.DTAAppend, 7, 4
	if got := hex.EncodeToString(ReportKey(&b, roundTrip(ap, wire.InputDTA))); got != "00000007" {
		t.Errorf("Append key %s, want the list id", got)
	}
	lb := &telemetry.Report{Format: telemetry.FormatLabel, NLabels: 2}
	lb.Labels[0].SwitchID, lb.Labels[1].SwitchID = 9, 3
	if got := hex.EncodeToString(ReportKey(&b, roundTrip(lb, wire.InputLabel))); got != "00000009" {
		t.Errorf("INT-label key %s, want the first item's switch", got)
	}
	if got := hex.EncodeToString(ReportKey(&b, &telemetry.Report{Format: telemetry.FormatLabel})); got != "00000000" {
		t.Errorf("empty INT-label export key %s", got)
	}
	tr := &telemetry.Report{Format: telemetry.FormatTR20, Has: telemetry.HasNodeID, NodeID: 5}
	if got := hex.EncodeToString(ReportKey(&b, tr)); got != "00000005" {
		t.Errorf("flowless report key %s, want the node id", got)
	}
	tr.Has |= telemetry.HasFlow
	tr.Flow.SetIPv4([]byte{10, 0, 0, 1}, []byte{172, 16, 0, 1})
	tr.Flow.SrcPort, tr.Flow.DstPort, tr.Flow.Proto = 1024, 5201, 17
	if got := hex.EncodeToString(ReportKey(&b, tr)); got != "0a000001ac1000010400145111" {
		t.Errorf("report with a flow: key %s, want the flow's", got)
	}
	if ReportOwner(tr, 3) != 0 {
		t.Error("ReportOwner disagrees with the vector")
	}
}
