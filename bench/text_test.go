package bench

import (
	"strings"
	"testing"
)

// TestWriteTextCPUShare: the text gives the collector's CPU share, the CPUs it needed and
// the machine's busy share, and says the collector was short of CPU when it lost datagrams
// with well under what it needed on a busy machine, and that it was too slow when what it
// needed is more than a CPU per socket, each only then.
func TestWriteTextCPUShare(t *testing.T) {
	for _, c := range []struct {
		name                    string
		sockets                 int
		loss, share, need, busy float64
		starved, slow           bool
	}{
		{"starved", 1, 0.28, 0.39, 0.60, 0.98, true, false},
		{"no loss", 1, 0, 0.39, 0.60, 0.98, false, false},
		{"what it needed", 1, 0.28, 0.58, 0.60, 0.98, false, false},
		{"an idle machine", 1, 0.28, 0.39, 0.60, 0.5, false, false},
		{"too slow for one socket", 1, 0.28, 0.88, 4.2, 0.98, false, true},
		{"two sockets, short of CPU", 2, 0.28, 0.95, 1.9, 0.98, true, false},
		{"too slow for two sockets", 2, 0.28, 1.95, 4.2, 0.98, false, true},
	} {
		r := IngestResult{Format: "tr2.0", Sockets: c.sockets, Loss: c.loss, CollectorCPUShare: c.share,
			CollectorCPUsNeeded: c.need, SystemBusy: c.busy}
		var b strings.Builder
		r.WriteText(&b, false)
		out := b.String()
		if !strings.Contains(out, "  CPU share  collector ") || !strings.Contains(out, " needed to take all that was sent; the machine ") {
			t.Errorf("%s: no CPU share line in\n%s", c.name, out)
		}
		note := "note: the collector lost 28.0% with "
		if got := strings.Contains(out, note); got != c.starved || r.Starved() != c.starved {
			t.Errorf("%s: starved note %v, Starved() %v, want %v:\n%s", c.name, got, r.Starved(), c.starved, out)
		}
		slow := "note: the collector lost 28.0%: taking all that was sent would need 4.20 CPUs"
		if got := strings.Contains(out, slow); got != c.slow || r.TooSlow() != c.slow {
			t.Errorf("%s: too-slow note %v, TooSlow() %v, want %v:\n%s", c.name, got, r.TooSlow(), c.slow, out)
		}
	}
	r := IngestResult{Sockets: 1, Loss: 0.28, CollectorCPUShare: 0.39, CollectorCPUsNeeded: 0.6, SystemBusy: 0.98}
	var b strings.Builder
	r.WriteText(&b, false)
	slow := IngestResult{Sockets: 1, Loss: 0.8, CollectorCPUShare: 0.88, CollectorCPUsNeeded: 5.37, SystemBusy: 0.91}
	var sb strings.Builder
	slow.WriteText(&sb, false)
	if want := "  note: the collector lost 80.0%: taking all that was sent would need 5.37 CPUs at its CPU per report, more than its 1 socket's worker can use (one CPU each)\n"; !strings.Contains(sb.String(), want) {
		t.Errorf("no %q in\n%s", want, sb.String())
	}
	for _, want := range []string{"  CPU share  collector 0.39 of a CPU, 0.60 needed to take all that was sent; the machine 98% busy (collector phase)\n",
		"  note: the collector lost 28.0% with 0.39 of the 0.60 CPUs it needed on a machine 98% busy: it was short of CPU"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
