package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
)

// The two GEANT captures hold INT data packets (UDP, INT v1.0 shim first). Sent to a report
// port by a mis-pointed exporter, their payloads once decoded as TR v0.5 drop reports with a
// nonsense sequence number; they are decode errors naming the report header's reserved bits.
var mispointed = []string{"../../testdata/third-party/geant-2601-double-header.pcap", "../../testdata/third-party/geant-dpdk-int.pcap"}

// TestDecodeMispointedDataPackets: `intake decode --port 17000=report` on the GEANT testbed
// capture, whose datagrams are INT data packets, not reports (docs/wire-formats.md,
// "Plausibility"), with and without the quirk its INT needs.
func TestDecodeMispointedDataPackets(t *testing.T) {
	want := "frame 1: error: tr0.5 fixed header reserved: bad_value (value 64) at offset 1\n" +
		"frames 1, reports 0, errors 1 (bad_value 1), skipped 0\n"
	for _, extra := range [][]string{nil, {"--quirk", "geant"}} {
		args := append([]string{"decode", "--port", "17000=report"}, extra...)
		code, out, errs := runVerb(append(args, mispointed[0])...)
		if code != 0 || out != want || errs != "" {
			t.Errorf("decode %v: %d\n%s%s\nwant\n%s", extra, code, out, errs, want)
		}
	}
}

// TestReplayMispointedDataPackets: `intake replay` of both captures to a serving collector's
// report port: two decode errors by reason bad_value, no report.
func TestReplayMispointedDataPackets(t *testing.T) {
	trAddr, httpAddr := serveDetect(t, `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 1}
http: {address: '127.0.0.1:0'}
export: {period: 0s}
`)
	for _, p := range mispointed {
		if code, _, errs := runVerb("replay", p, "--to", trAddr, "--quiet"); code != 0 {
			t.Fatalf("replay %s: %d %s", p, code, errs)
		}
	}
	const want = `intake_decode_errors_total{listener="tr",reason="bad_value"} 2`
	var m string
	testutil.Eventually(t, 5*time.Second, want, func() bool {
		m = httpGet(t, "http://"+httpAddr+"/metrics")
		return strings.Contains(m, want+"\n")
	})
	var lines []string
	reports := false
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "intake_decode_errors_total") || strings.HasPrefix(l, "intake_reports_decoded_total") {
			lines = append(lines, l)
			reports = reports || strings.HasPrefix(l, "intake_reports_decoded_total") && !strings.HasSuffix(l, " 0")
		}
	}
	if !strings.Contains(m, want+"\n") || reports {
		t.Errorf("metrics:\n%s\nwant %s and no report", strings.Join(lines, "\n"), want)
	}
}
