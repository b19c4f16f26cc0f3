package repro

import (
	"testing"
	"time"
)

func TestSuite(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	start := time.Now()
	figs, err := Reproduce(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		t.Logf("%s: %s | paper: %s", f.ID, f.Intake, f.Paper)
	}
	t.Logf("suite in %v", time.Since(start))
}
