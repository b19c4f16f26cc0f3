package ingest

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/wire"
)

// TestWorkerLogRateLimited: the first decode error is logged at once, with its text; more
// within logEvery are not; once logEvery has passed, one line counts them all. Drops are
// logged the same way, and nothing is logged while nothing changes.
func TestWorkerLogRateLimited(t *testing.T) {
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	w := &worker{l: &listener{cfg: Listener{Name: "report"}}, wlog: workerLog{log: log}}
	w.init(3, dec, wire.InputReport, nil)
	bad := []byte{0x20, 0, 0} // a TR v2.0 header cut short
	w.Datagram(bad, 1)
	w.publish()
	first := "level=WARN msg=\"decode errors\" listener=report worker=3 count=1 last=\"tr2.0 group header node_id: truncated at offset 3\"\n"
	if buf.String() != first {
		t.Fatalf("first error:\n got %q\nwant %q", buf.String(), first)
	}
	for range 5 {
		w.Datagram(bad, 2)
		w.publish()
	}
	w.drop(DropOversize)
	w.publish()
	if buf.String() != first {
		t.Fatalf("within logEvery:\n%s", buf.String())
	}
	w.wlog.last = w.wlog.last.Add(-logEvery - time.Second) // as if 11 s had passed
	w.publish()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		"level=WARN msg=\"decode errors\" listener=report worker=3 since=11s count=5 last=\"tr2.0 group header node_id: truncated at offset 3\"",
		"level=WARN msg=\"datagrams dropped\" listener=report worker=3 since=11s ingest=1 kernel=0",
	}
	if len(lines) != 3 || lines[1] != want[0] || lines[2] != want[1] {
		t.Fatalf("after logEvery:\n got %q\nwant %q", lines[1:], want)
	}
	w.wlog.last = w.wlog.last.Add(-logEvery - time.Second)
	w.publish()
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("nothing new, yet %d lines:\n%s", n, buf.String())
	}
}
