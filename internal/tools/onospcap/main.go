// Command onospcap writes testdata/onos-bmv2-int.pcap, intake's one capture of a real
// producer: the ONOS BMv2 "basic" pipeline INT report (one 137-byte frame; 177 bytes with
// the pcap file and record headers) from
// serkantul/prometheus_int_exporter (src/test/resources/int_report.pcap), rebuilt from the
// hex dump of the ONOS project's BMv2 report rather than copied, so that its provenance
// is the documented bytes. The capture time is fixed (the original's is not documented), so
// the output is byte-for-byte reproducible; main_test.go checks the committed file.
//
//	go generate ./internal/tools/onospcap
package main

//go:generate go run . -o ../../../testdata/onos-bmv2-int.pcap

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/intake-int/intake/pcap"
)

// frameHex is the Ethernet frame: outer Ethernet/IPv4/UDP 0 > 1234, TR v0.5 (F, hw_id 1),
// inner Ethernet/IPv4 (DSCP 1)/TCP 63804 > 1234, INT v0.5 shim, md header, three switch ids
// (2, 3, 1, newest first), tail, one payload byte.
const frameHex = "000000000304aabbccddeeff08004500007b00000000ff1100000a0003050a000204000004d200670000" +
	"002000010000000000000000ffffffffffff00000000010108004504004500010000400663cb0a0001010a000203" +
	"f93c04d200000000000000005002200019cf00000100070000012003800000000000000200000003000000010604d20061"

// captureTime is the fixed time of the one record.
var captureTime = time.Date(2018, 6, 1, 12, 0, 0, 0, time.UTC)

// capture returns the pcap file's bytes.
func capture() ([]byte, error) {
	frame, err := hex.DecodeString(frameHex)
	if err != nil {
		return nil, err
	}
	if len(frame) != 137 {
		return nil, fmt.Errorf("frame is %d bytes, want 137", len(frame))
	}
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Microsecond)
	if err != nil {
		return nil, err
	}
	if err := w.WritePacket(captureTime, frame); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func main() {
	out := flag.String("o", "onos-bmv2-int.pcap", "output file")
	flag.Parse()
	b, err := capture()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "onospcap:", err)
		os.Exit(1)
	}
}
