package main

import (
	"io"

	"github.com/intake-int/intake/cluster"
	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
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
	fs := newFlags("status", "[--addr HOST:PORT] [--cluster] [--json]", stdout)
	addr := fs.String("addr", config.HTTPAddress, addrHelp)
	asJSON := fs.Bool("json", false, "print the status object as the API returns it")
	all := fs.Bool("cluster", false, "every member of the collector's cluster (reads "+cluster.StatusPath+")")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *all {
		var cs cluster.StatusJSON
		if done, err := apiQuery(stdout, *addr, cluster.StatusPath, nil, *asJSON, &cs); done || err != nil {
			return err
		}
		return cs.WriteText(stdout)
	}
	var st collector.Status
	if done, err := apiQuery(stdout, *addr, "/api/v1/status", nil, *asJSON, &st); done || err != nil {
		return err
	}
	st.WriteText(stdout, *addr)
	return nil
}

// addrHelp is the --addr flag's text on the verbs that ask a running collector.
const addrHelp = "the collector's HTTP `address` (http.address in its config; https://host:port for TLS); the token is read from $INTAKE_TOKEN or the file $INTAKE_TOKEN_FILE, the CA certificates for TLS from $INTAKE_CA"
