package main

import (
	"fmt"
	"io"
	"sort"
)

// A group is a verb whose first argument names a subcommand: `intake query flow`, `intake
// sim dta-bounds`, `intake bench ingest`. Each subcommand lives in its own file and registers
// itself with registerSub from init, so that components add theirs without touching others.
type group struct {
	name, summary string
	subs          map[string]verb
}

// groups is built at package initialization, before any init function runs, so that a
// subcommand's file may register itself whatever its name sorts as.
var groups = map[string]*group{
	"query": newGroup("query", "ask a running collector (or a DTA store directory) about flows, events, ports, keys"),
	"sim":   newGroup("sim", "reproduce the papers' analyses and figures"),
	"bench": newGroup("bench", "measure intake on this machine"),
	"dta":   newGroup("dta", "manage a DTA data directory"),
}

func newGroup(name, summary string) *group {
	return &group{name: name, summary: summary, subs: map[string]verb{}}
}

func init() {
	for _, g := range groups {
		register(verb{name: g.name, summary: g.summary, run: g.run})
	}
}

// registerSub adds a subcommand to the group named group.
func registerSub(group string, v verb) {
	g, ok := groups[group]
	if !ok {
		panic("registerSub: no group " + group)
	}
	g.subs[v.name] = v
}

func (g *group) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: intake %s <subcommand> [flags] [args]\n\n%s\n\nsubcommands:\n", g.name, g.summary)
	names := make([]string, 0, len(g.subs))
	for n := range g.subs {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, g.subs[n].summary)
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "  (none yet)")
	}
	fmt.Fprintf(w, "\nRun 'intake %s <subcommand> --help' for its flags.\n", g.name)
}

func (g *group) run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		g.usage(stderr)
		return usageErr("a subcommand is required")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		g.usage(stdout)
		return nil
	}
	v, ok := g.subs[args[0]]
	if !ok {
		return usageErr("unknown subcommand %q (run 'intake %s --help' for the list)", args[0], g.name)
	}
	if err := v.run(args[1:], stdout, stderr); err != nil {
		return &subErr{name: g.name + " " + v.name, err: err}
	}
	return nil
}

// subErr names the subcommand that failed, so that its message starts "intake query flow:".
type subErr struct {
	name string
	err  error
}

func (e *subErr) Error() string { return e.err.Error() }
func (e *subErr) Unwrap() error { return e.err }
