package export

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A sink's errors are kept (the last one, with its time) and logged at most once per
// logEvery, the next line counting those not logged.
func TestLastErrorLogsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	l := LastError{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))}
	l.Set("influxdb", errors.New("401 Unauthorized: authorization failed"))
	l.Set("influxdb", errors.New("401 again"))
	l.Set("influxdb", errors.New("401 once more"))
	if msg, at := l.Get(); msg != "401 once more" || at == "" {
		t.Errorf("last error %q at %q", msg, at)
	}
	want := `level=WARN msg="export failed" sink=influxdb error="401 Unauthorized: authorization failed" errors_not_logged=0` + "\n"
	if buf.String() != want {
		t.Errorf("logged %q, want %q", buf.String(), want)
	}
	buf.Reset()
	l.logged = l.logged.Add(-logEvery) // as if logEvery had passed
	l.Set("influxdb", errors.New("timeout"))
	if want := "errors_not_logged=2"; !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), `error=timeout`) {
		t.Errorf("after %s: %q", logEvery, buf.String())
	}
	if _, err := time.Parse(time.RFC3339Nano, func() string { _, at := l.Get(); return at }()); err != nil {
		t.Error(err)
	}
}
