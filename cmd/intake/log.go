package main

import (
	"flag"
	"io"
	"log/slog"
	"strings"
)

// logFlags are --log-format and --log-level, on the verbs that run a collector.
type logFlags struct {
	format, level *string
}

func addLogFlags(fs *flag.FlagSet) logFlags {
	return logFlags{
		format: fs.String("log-format", "text", "log `format`: text or json (logs go to standard error)"),
		level:  fs.String("log-level", "info", "log `level`: debug, info, warn or error"),
	}
}

// logger builds the slog logger the flags ask for, writing to w. The collector hands it to
// the components (it is not made the process default: the tests run verbs in process).
func (f logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*f.level)); err != nil {
		return nil, usageErr("--log-level: %q: must be debug, info, warn or error", *f.level)
	}
	o := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch strings.ToLower(*f.format) {
	case "text":
		h = slog.NewTextHandler(w, o)
	case "json":
		h = slog.NewJSONHandler(w, o)
	default:
		return nil, usageErr("--log-format: %q: must be text or json", *f.format)
	}
	return slog.New(h), nil
}
