package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/intake-int/intake/internal/cluster"
)

// memberCounts are the parts of a member's /api/v1/status the table shows.
type memberCounts struct {
	PacketsReceived uint64 `json:"packets_received"`
	ReportsDecoded  uint64 `json:"reports_decoded"`
	Drops           struct {
		Total uint64 `json:"total"`
	} `json:"drops"`
}

// writeClusterStatus prints the cluster's status as `intake status --cluster` shows it: one line per
// member, and the members that did not answer.
func writeClusterStatus(w io.Writer, s *cluster.StatusJSON) error {
	fmt.Fprintf(w, "cluster of %d members (hash: %s), asked through %s\n", len(s.Members), s.Hash, s.Self)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tSTATE\tAPI\tREPORTS TO\tPACKETS\tREPORTS\tDROPS\tRTT")
	for _, m := range s.Members {
		name := m.Name
		if m.Self {
			name += " (self)"
		}
		reports := strings.Join(m.Reports, ",")
		if reports == "" {
			reports = "-"
		}
		if !m.Up {
			fmt.Fprintf(tw, "%s\tDOWN\t%s\t%s\t-\t-\t-\t-\n", name, m.API, reports)
			continue
		}
		var c memberCounts
		if err := json.Unmarshal(m.Status, &c); err != nil {
			return fmt.Errorf("member %s: status: %w", m.Name, err)
		}
		fmt.Fprintf(tw, "%s\tup\t%s\t%s\t%d\t%d\t%d\t%.2f ms\n", name, m.API, reports, c.PacketsReceived, c.ReportsDecoded, c.Drops.Total, m.RTTMs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range s.Members {
		if !m.Up {
			fmt.Fprintf(w, "%s is down: %s\n", m.Name, m.Error)
		}
	}
	if s.Partial {
		_, err := fmt.Fprintf(w, "partial: %d of %d members answered (missing: %s)\n", len(s.Members)-len(s.Missing), len(s.Members), strings.Join(s.Missing, ", "))
		return err
	}
	return nil
}
