package kafka

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger is the Kafka client's logger (kgo.WithLogger) onto the sink's slog.Logger, so
// that the client's own account of connections, retries and metadata goes where intake's
// logs go, with component=kafka-client.
type kgoLogger struct{ l *slog.Logger }

func newKgoLogger(l *slog.Logger) kgoLogger { return kgoLogger{l.With("component", "kafka-client")} }

// Level is the most detailed level the client should log at: debug when the handler takes
// debug, else warn. The client's info lines (a metadata refresh, a new connection) come
// every few seconds on a busy cluster: at intake's default level they would outnumber every
// other log line, so they show only with debug.
func (k kgoLogger) Level() kgo.LogLevel {
	if k.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelWarn
}

// Log writes one client line at its level, keyvals as slog attributes.
func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	case kgo.LogLevelInfo:
		lv = slog.LevelInfo
	}
	k.l.Log(context.Background(), lv, msg, keyvals...)
}
