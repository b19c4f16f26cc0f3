// Package cli owns the grammar that intake's verbs share, so that a flag means the same in
// every one of them: the query verbs' --api, --json and --table; rates named by their unit
// (--pps, --bps) with the older --rate kept as a deprecated alias that warns; progress bars
// that only a terminal gets; and the version from the build information. How answers are
// printed is cmd/intake's (print_*.go); flows are written by telemetry.FlowString.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/buildinfo"
)

// DefaultAPI is the collector's default HTTP API address (config's http.address).
const DefaultAPI = "127.0.0.1:8040"

// Query is the output and address options every query subcommand takes.
type Query struct {
	API         string
	JSON, Table bool
	table       bool // Table's default: what the verb prints without either flag
}

// AddQuery adds --api (and --addr, its deprecated older name, which warns on warn), --json
// and --table to fs. jsonDefault says what the verb prints when neither --json nor --table
// is given.
func AddQuery(fs *flag.FlagSet, jsonDefault bool, warn io.Writer) *Query {
	q := &Query{table: !jsonDefault}
	fs.StringVar(&q.API, "api", DefaultAPI, "the collector's HTTP API `address` (http.address in its config; https://host:port for TLS); the token is read from $INTAKE_TOKEN or the file $INTAKE_TOKEN_FILE, the CA certificates for TLS from $INTAKE_CA")
	Alias(fs, "addr", "api", warn)
	fs.BoolVar(&q.JSON, "json", false, "print the API's JSON")
	fs.BoolVar(&q.Table, "table", false, "print a table (or lines) for people")
	return q
}

// WantJSON reports whether to print JSON, after checking that --json and --table were not
// both given.
func (q *Query) WantJSON() (bool, error) {
	switch {
	case q.JSON && q.Table:
		return false, errors.New("--json and --table exclude each other")
	case q.JSON:
		return true, nil
	case q.Table:
		return false, nil
	}
	return !q.table, nil
}

// Rate adds a rate flag named for its unit (pps, bps) and, when alias is not empty, the
// older name as a deprecated alias (Alias). A rate is a number with an optional k, M or G.
func Rate(fs *flag.FlagSet, name, alias string, def float64, usage string, warn io.Writer) *float64 {
	v := def
	fs.Func(name, fmt.Sprintf("%s; k, M, G multiply (default %g)", usage, def), func(s string) error { return setRate(&v, s) })
	if alias != "" {
		Alias(fs, alias, name, warn)
	}
	return &v
}

// Alias adds old as a deprecated name of the flag named name, defined before: setting it
// sets that flag and writes a warning to warn.
func Alias(fs *flag.FlagSet, old, name string, warn io.Writer) {
	f := fs.Lookup(name)
	// --help shows the alias with its flag's placeholder ("-t DURATION"), not Go's "value".
	placeholder, _ := flag.UnquoteUsage(f)
	fs.Func(old, fmt.Sprintf("deprecated: the same as --%s `%s`", name, placeholder), func(s string) error {
		fmt.Fprintf(warn, "intake: --%s is deprecated: use --%s, which means the same\n", old, name)
		return f.Value.Set(s)
	})
}

// setRate parses a rate: a number, with an optional k, M or G multiplier (5M is 5e6).
func setRate(v *float64, s string) error {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, strings.TrimSuffix(s, "G")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("want a number, optionally with k, M or G (5M is 5000000)")
	}
	*v = f * mult
	return nil
}

// Progress returns a progress bar for label on w, redrawn in place, when w is a terminal,
// and nil (no progress: a log gets no carriage returns) otherwise.
func Progress(w io.Writer, label string) func(done, total int) {
	if !IsTerminal(w) {
		return nil
	}
	return Bar(w, label)
}

// Bar returns a progress bar for label on w, whatever w is. At done >= total it draws
// 100 % and then clears its line, so that what is printed next starts on a clean line.
func Bar(w io.Writer, label string) func(done, total int) {
	start := time.Now()
	return func(done, total int) {
		f := min(float64(done)/float64(max(total, 1)), 1)
		fmt.Fprintf(w, "\r%s [%-30s] %5.1f%% %s", label, strings.Repeat("#", int(f*30)), 100*f, time.Since(start).Round(time.Second))
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// Version is intake's version from the build information: the module version (a tag, or
// "(devel)" for a build from a checkout), the VCS revision and time when the build
// recorded them, and the Go version.
func Version() string {
	bi, ok := buildinfo.Read()
	if !ok {
		return "intake (no build information)"
	}
	v := "intake " + bi.Version
	if bi.Revision != "" {
		v += " " + bi.Revision[:min(12, len(bi.Revision))]
		if bi.Modified {
			v += " (modified)"
		}
		if bi.Time != "" {
			v += " " + bi.Time
		}
	}
	return v + " " + bi.GoVersion
}
