package main

import (
	"fmt"
	"io"

	"github.com/intake-int/intake/internal/gen"
)

// writeClusterSummary prints `intake gen --collectors`' run: a line per collector and the
// totals.
func writeClusterSummary(w io.Writer, s *gen.ClusterSummary) error {
	for _, c := range s.Collectors {
		fmt.Fprintf(w, "gen: sent %d datagrams (%d reports) to %s\n", c.Datagrams, c.Reports, c.To)
	}
	_, err := fmt.Fprintf(w, "gen: sent %d datagrams (%d reports) to %d collectors; %d send errors\n",
		s.Datagrams, s.Reports, len(s.Collectors), s.SendErrors)
	return err
}
