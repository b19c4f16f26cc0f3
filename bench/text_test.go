package bench

import (
	"strings"
	"testing"
)

// TestWriteTextCPUShare: the text gives the collector's CPU share and the machine's busy
// share, and says the collector was short of CPU when it lost datagrams using well under a
// CPU on a busy machine, and only then.
func TestWriteTextCPUShare(t *testing.T) {
	for _, c := range []struct {
		name              string
		loss, share, busy float64
		starved           bool
	}{
		{"starved", 0.28, 0.39, 0.98, true},
		{"no loss", 0, 0.39, 0.98, false},
		{"a whole CPU", 0.28, 0.97, 0.99, false},
		{"an idle machine", 0.28, 0.39, 0.5, false},
	} {
		r := IngestResult{Format: "tr2.0", Loss: c.loss, CollectorCPUShare: c.share, SystemBusy: c.busy}
		var b strings.Builder
		r.WriteText(&b, false)
		out := b.String()
		want := "  CPU share  collector " + map[float64]string{0.39: "0.39", 0.97: "0.97"}[c.share] + " of a CPU; the machine "
		if !strings.Contains(out, want) {
			t.Errorf("%s: no %q in\n%s", c.name, want, out)
		}
		note := "note: the collector lost 28.0% while it used 0.39 of a CPU on a machine 98% busy: it was short of CPU"
		if got := strings.Contains(out, note); got != c.starved || r.Starved() != c.starved {
			t.Errorf("%s: starved note %v, Starved() %v, want %v:\n%s", c.name, got, r.Starved(), c.starved, out)
		}
	}
}
