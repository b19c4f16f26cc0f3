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

// logger builds the slog logger the flags ask for, writing to w.
func (f logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*f.level)); err != nil {
		return nil, usageErr("--log-level: %q: must be debug, info, warn or error", *f.level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(*f.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, usageErr("--log-format: %q: must be text or json", *f.format)
}
