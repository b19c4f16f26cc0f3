package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoLogger: the client's lines reach slog at their level with their key-values, and
// the client is asked for info and debug lines only when the handler takes debug.
func TestKgoLogger(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  kgo.LogLevel
	}{{slog.LevelDebug, kgo.LogLevelDebug}, {slog.LevelInfo, kgo.LogLevelWarn}, {slog.LevelWarn, kgo.LogLevelWarn}} {
		var buf bytes.Buffer
		l := newKgoLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
		if got := l.Level(); got != tc.want {
			t.Errorf("handler at %v: Level %v, want %v", tc.level, got, tc.want)
		}
		l.Log(kgo.LogLevelError, "unable to dial", "broker", "1", "err", "refused")
		if got := buf.String(); !strings.Contains(got, "level=ERROR msg=\"unable to dial\" component=kafka-client broker=1 err=refused") {
			t.Errorf("handler at %v: logged %q", tc.level, got)
		}
	}
}
