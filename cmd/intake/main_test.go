package main

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for intake when a verb runs intake as a child
// process (bench ingest runs `intake gen`): with INTAKE_CHILD set, it is intake.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(withTestDataDir(m.Run)) // dta_shm_test.go: no test's DTA stores on /dev/shm
}

// TestVerbHelp checks that every registered verb answers --help and -h with its usage on
// stdout and exit status 0, whatever else it is given.
func TestVerbHelp(t *testing.T) {
	if len(verbs) == 0 {
		t.Fatal("no verbs registered")
	}
	for name := range verbs {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errb := runVerb(name, flag)
			if code != 0 || errb != "" || !strings.HasPrefix(out, "usage: intake "+name) {
				t.Errorf("intake %s %s: exit %d, stderr %q, stdout %q", name, flag, code, errb, out)
			}
			if n := strings.Count(out, "usage: intake "+name); n != 1 {
				t.Errorf("intake %s %s prints its usage %d times", name, flag, n)
			}
		}
	}
}

// TestSubcommandHelp does the same for every subcommand of every group (query, sim, bench).
func TestSubcommandHelp(t *testing.T) {
	for gname, g := range groups {
		code, out, _ := runVerb(gname)
		if code != 2 || out != "" {
			t.Errorf("intake %s without a subcommand: exit %d, stdout %q", gname, code, out)
		}
		for name := range g.subs {
			code, out, errb := runVerb(gname, name, "--help")
			if code != 0 || errb != "" || strings.Count(out, "usage: intake "+gname+" "+name) != 1 {
				t.Errorf("intake %s %s --help: exit %d, stderr %q, stdout %q", gname, name, code, errb, out)
			}
		}
	}
}

func TestMainUsage(t *testing.T) {
	code, out, errb := runVerb()
	if code != 2 || out != "" || !strings.Contains(errb, "usage: intake <verb>") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	for _, arg := range []string{"--help", "-h", "help"} {
		code, out, errb = runVerb(arg)
		if code != 0 || errb != "" || !strings.Contains(out, "\n  decode ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errb)
		}
	}
	code, out, errb = runVerb("bogus")
	if want := "intake: unknown verb \"bogus\" (run 'intake --help' for the list)\n"; code != 2 || out != "" || errb != want {
		t.Errorf("unknown verb: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}
