package main

import (
	"io"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/collector"
)

// status reads a running collector's /api/v1/status and prints it.

func init() {
	register(verb{
		name:    "status",
		summary: "show a running collector's counters (reads /api/v1/status)",
		run:     runStatus,
	})
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "[--api HOST:PORT] [--cluster] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false)
	all := fs.Bool("cluster", false, "every member of the collector's cluster (reads "+cluster.StatusPath+")")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *all {
		var cs cluster.StatusJSON
		if done, err := apiQuery(stdout, o, cluster.StatusPath, nil, &cs); done || err != nil {
			return err
		}
		return writeClusterStatus(stdout, &cs)
	}
	var st collector.Status
	if done, err := apiQuery(stdout, o, "/api/v1/status", nil, &st); done || err != nil {
		return err
	}
	writeStatus(stdout, &st, o.API)
	return nil
}
