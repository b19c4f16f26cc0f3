package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
	o := cli.AddQuery(fs, false, stderr)
	all := fs.Bool("cluster", false, "every member of the collector's cluster (reads "+cluster.StatusPath+"); exits 1 when a member is down")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *all {
		return clusterStatus(stdout, o)
	}
	var st collector.Status
	if done, err := apiQuery(stdout, o, "/api/v1/status", nil, &st); done || err != nil {
		return err
	}
	writeStatus(stdout, &st, o.API)
	return nil
}

// clusterStatus prints the cluster's status, as a table or its JSON, and fails (exit 1)
// when a member is down, so that a script or a health check sees it without parsing.
func clusterStatus(stdout io.Writer, o *cli.Query) error {
	asJSON, err := o.WantJSON()
	if err != nil {
		return usageErr("%v", err)
	}
	body, err := getAPI(o.API, cluster.StatusPath, nil)
	if err != nil {
		return err
	}
	var cs cluster.StatusJSON
	if err := json.Unmarshal(body, &cs); err != nil {
		return err
	}
	if asJSON {
		_, err = stdout.Write(body)
	} else {
		err = writeClusterStatus(stdout, &cs)
	}
	if err != nil {
		return err
	}
	var down []string
	for _, m := range cs.Members {
		if !m.Up {
			down = append(down, m.Name)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("%d of %d members down: %s", len(down), len(cs.Members), strings.Join(down, ", "))
	}
	return nil
}
