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
func TestReportBinaryV1(t *testing.T) { testEarlierForm(t, "testdata/reportbin-v1/", frameVersion1) }

// TestReportBinaryV2: so does the coded form, in frames of version 2, what inlets before the
// predicted form wrote (testdata/reportbin-v2).
func TestReportBinaryV2(t *testing.T) { testEarlierForm(t, "testdata/reportbin-v2/", frameVersion2) }

func testEarlierForm(t *testing.T, dir string, frameV byte) {
	var empty telemetry.Report
	for name, want := range map[string]telemetry.Report{"fill1": fill(1), "fill3": fill(3), "bench0": benchReports()[0], "empty": empty} {
		b, err := os.ReadFile(dir + name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		if coded := b[1]&gCoded != 0; b[0] != reportVersion || coded != (frameV == frameVersion2) {
			t.Fatalf("%s: not the form of frames of version %d: version %d, groups %#x", name, frameV, b[0], b[1])
		}
		got := fill(7)
		if err := unmarshalReport(&got, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(meaningful(got), meaningful(want)) {
			t.Errorf("%s: got %+v\nwant %+v", name, got, want)
		}
	}
	b, err := os.ReadFile(dir + "frame3.bin")
	if err != nil {
		t.Fatal(err)
	}
	rs := benchReports()
	i := 0
	if b[0] != frameV || frameCount(b) != 3 {
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
