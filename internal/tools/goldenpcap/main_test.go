package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed captures are exactly what the encoders write today: a change to an encoder
// that alters a byte shows up here, and `go generate ./internal/tools/goldenpcap` refreshes them.
func TestCommittedCapturesAreCurrent(t *testing.T) {
	fs, err := files()
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 6 {
		t.Fatalf("%d captures, want one per format (6)", len(fs))
	}
	for name, want := range fs {
		got, err := os.ReadFile(filepath.Join("../../../testdata/golden", name))
		if err != nil {
			t.Fatalf("%v (run go generate ./internal/tools/goldenpcap)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/golden/%s differs from what the encoders write now (run go generate ./internal/tools/goldenpcap)", name)
		}
	}
}
