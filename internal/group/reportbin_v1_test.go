package group

import (
	"os"
	"reflect"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// TestReportBinaryV1: the first form (what inlets before the coded form wrote, in frames of
// version 1, kept under testdata/reportbin-v1 as they wrote them) still reads back exactly,
// and so does a version 1 frame of them.
func TestReportBinaryV1(t *testing.T) {
	var empty telemetry.Report
	for name, want := range map[string]telemetry.Report{"fill1": fill(1), "fill3": fill(3), "bench0": benchReports()[0], "empty": empty} {
		b, err := os.ReadFile("testdata/reportbin-v1/" + name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		if b[1]&(gCoded|gFlow4) != 0 {
			t.Fatalf("%s: not the first form: groups %#x", name, b[1])
		}
		got := fill(7)
		if err := unmarshalReport(&got, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(meaningful(got), meaningful(want)) {
			t.Errorf("%s: got %+v\nwant %+v", name, got, want)
		}
	}
	b, err := os.ReadFile("testdata/reportbin-v1/frame3.bin")
	if err != nil {
		t.Fatal(err)
	}
	rs := benchReports()
	i := 0
	if b[0] != frameVersion1 || frameCount(b) != 3 {
		t.Fatalf("frame version %d, count %d", b[0], frameCount(b))
	}
	err = eachEntry(b, func(_, rep []byte) error {
		var r telemetry.Report
		if err := unmarshalReport(&r, rep); err != nil {
			return err
		}
		if !reflect.DeepEqual(meaningful(r), meaningful(rs[i])) {
			t.Errorf("entry %d: %+v", i, r)
		}
		i++
		return nil
	})
	if err != nil || i != 3 {
		t.Fatalf("%d entries: %v", i, err)
	}
}
