// Command intake is the In-band Network Telemetry collection platform: one binary whose verbs
// run the collector (serve, demo), inspect and move captures (decode, replay), generate load
// (gen, bench), query a running collector (query, status) and reproduce the papers (sim).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/intake-int/intake/internal/cli"
)

// A verb is one subcommand. run gets the arguments after the verb's name; it returns
// errUsage (wrapped) for misuse, which prints a one-line reason and exits 2.
type verb struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var verbs = map[string]verb{}

func register(v verb) { verbs[v.name] = v }

// errUsage marks an error as misuse: exit status 2 rather than 1.
var errUsage = errors.New("usage")

// usageErr formats a misuse error.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// newFlags returns a FlagSet for a verb whose errors come back to the caller instead of
// exiting, and whose -h/--help prints the verb's usage to stdout.
func newFlags(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("intake "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: intake %s %s\n\nflags:\n", name, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors. It returns flag.ErrHelp
// after printing usage for -h/--help; callers return nil on that.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {} // flag.Parse calls Usage on every error; print it only for --help
	err := fs.Parse(args)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return flag.ErrHelp
		}
		return usageErr("%v", err)
	}
	return nil
}

// parseArgs parses flags that may come before or after positional arguments (the flag
// package stops at the first non-flag) and returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// parseNoArgs parses the flags of a verb that takes no positional argument.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	return nil
}

func mainUsage(w io.Writer) {
	fmt.Fprintln(w, "intake: In-band Network Telemetry collection platform")
	fmt.Fprintln(w, "\nusage: intake <verb> [flags] [args]\n\nverbs:")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'intake <verb> --help' for a verb's flags.")
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		mainUsage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		mainUsage(stdout)
		return 0
	case "-version", "--version":
		args[0] = "version"
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "intake: unknown verb %q (run 'intake --help' for the list)\n", args[0])
		return 2
	}
	err := v.run(args[1:], stdout, stderr)
	name := v.name
	var se *subErr
	if errors.As(err, &se) {
		name = se.name
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "intake %s: %s\n", name, strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	default:
		fmt.Fprintf(stderr, "intake %s: %v\n", name, err)
		return 1
	}
}

// runContext is done at SIGINT or SIGTERM, or after d when d > 0; cancel releases both.
func runContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

func init() {
	register(verb{name: "version", summary: "print intake's version (module, VCS revision and time, Go)", run: func(args []string, stdout, _ io.Writer) error {
		if err := parseNoArgs(newFlags("version", "", stdout), args); err != nil {
			return err
		}
		_, err := fmt.Fprintln(stdout, cli.Version())
		return err
	}})
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
