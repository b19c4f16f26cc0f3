package capture

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestDecodeONOS walks the committed ONOS BMv2 capture (one TR v0.5 report to UDP port
// 1234): mapped, it is one report from a UDP datagram; unmapped, an ordinary packet.
func TestDecodeONOS(t *testing.T) {
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ports := maps.Clone(DefaultPorts)
	ports[1234] = wire.InputReport
	var items []Item
	var nodes []uint32
	st := decodeFile(t, dec, ports, func(it *Item) {
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

	st = decodeFile(t, dec, DefaultPorts, func(it *Item) { t.Errorf("unmapped: item %+v", *it) })
	if want := "frames 1, reports 0, errors 0, skipped 1"; st.String() != want {
		t.Errorf("unmapped: %q, want %q", st.String(), want)
	}
}

func decodeFile(t *testing.T, dec *wire.Decoder, ports map[uint16]wire.Input, fn func(*Item)) Stats {
	t.Helper()
	f, err := os.Open("../testdata/onos-bmv2-int.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := Decode(f, dec, ports, fn)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
