package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCommittedCapture checks that testdata/onos-bmv2-int.pcap is what this program writes.
func TestCommittedCapture(t *testing.T) {
	want, err := capture()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../testdata/onos-bmv2-int.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 177 { // the size of the original int_report.pcap
		t.Errorf("capture is %d bytes, want 177", len(want))
	}
	if !bytes.Equal(got, want) {
		t.Fatal("testdata/onos-bmv2-int.pcap differs from the generator's output; run go generate ./internal/tools/onospcap")
	}
}
