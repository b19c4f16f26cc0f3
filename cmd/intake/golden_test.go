package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeGoldenCaptures pins every decoded field of every wire format: `intake decode
// --json` of testdata/golden/<format>.pcap (written by internal/tools/goldenpcap from
// hand-built reports) must equal the reviewed testdata/golden/<format>.jsonl line for line.
func TestDecodeGoldenCaptures(t *testing.T) {
	caps, err := filepath.Glob("../../testdata/golden/*.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) != 6 {
		t.Fatalf("%d golden captures, want 6 (tr0.5, tr1.0, tr2.0, int-md, dta, int-label)", len(caps))
	}
	for _, c := range caps {
		name := strings.TrimSuffix(filepath.Base(c), ".pcap")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(c, ".pcap") + ".jsonl")
			if err != nil {
				t.Fatal(err)
			}
			code, out, errs := runVerb("decode", "--json", c)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.Contains(errs, "errors 0, skipped 0") {
				t.Errorf("summary %q: want no errors and nothing skipped", errs)
			}
			got, exp := strings.Split(out, "\n"), strings.Split(string(want), "\n")
			if len(got) != len(exp) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(exp), out)
			}
			for i := range exp {
				if got[i] != exp[i] {
					t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], exp[i])
				}
			}
		})
	}
}
