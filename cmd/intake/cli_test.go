package main

import (
	"regexp"
	"strings"
	"testing"
)

// One grammar: every query subcommand (and status) takes --api, --json and --table, and the
// same misuse (--json with --table) is a usage error, exit 2, in each.
func TestQueryGrammar(t *testing.T) {
	names := []string{"status"}
	for name := range groups["query"].subs {
		names = append(names, "query "+name)
	}
	if len(names) < 13 {
		t.Fatalf("%d query subcommands", len(names))
	}
	for _, name := range names {
		args := strings.Fields(name)
		code, out, _ := runVerb(append(args, "--help")...)
		// --addr: deprecated, with --api's placeholder (issue 31: Go's "string" before).
		for _, flag := range []string{"  -api address", "  -addr address\n    \tdeprecated: the same as --api address\n", "  -json\n", "  -table\n"} {
			if code != 0 || !strings.Contains(out, flag) {
				t.Errorf("intake %s --help lacks %q:\n%s", name, flag, out)
			}
		}
		args = append(args, "--json", "--table", "--api", "127.0.0.1:1")
		switch name {
		case "query flow", "query flowcache-flow":
			args = append(args, "10.0.0.1:1 > 10.0.0.2:2 udp")
		case "query kw", "query ki", "query postcard", "query list":
			args = append(args, "1")
		case "query histogram":
			args = append(args, "--switch", "1")
		}
		code, _, errs := runVerb(args...)
		if want := "intake " + name + ": --json and --table exclude each other\n"; code != 2 || errs != want {
			t.Errorf("%v: %d %q, want 2 %q", args, code, errs, want)
		}
	}
}

// intake version and intake --version print the build's version: the module version (a
// build from a checkout is "(devel)") and the Go version.
func TestVersion(t *testing.T) {
	re := regexp.MustCompile(`^intake \S+( [0-9a-f]{12}( \(modified\))? \S+)? go1\.\d+\S*\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runVerb(args...)
		if code != 0 || errs != "" || !re.MatchString(out) {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	if code, _, errs := runVerb("version", "now"); code != 2 || errs != "intake version: unexpected argument \"now\"\n" {
		t.Errorf("version now: %d %q", code, errs)
	}
}
