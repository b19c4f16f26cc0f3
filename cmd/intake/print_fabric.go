package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/fabric"
)

// fabricProgress is a one-line summary of a run so far, for a progress line.
func fabricProgress(s *fabric.Stats) string {
	return fmt.Sprintf("%s: %d packets sent, %d delivered, %d labels, %d exports, %d reports",
		time.Duration(s.Now).Round(time.Second), s.Sent, s.Delivered, s.Labels, s.Exports, s.Reports+s.Postcards)
}

// writeFabricStats writes the counters for people, a labelled line per kind (the JSON has
// them all by name).
func writeFabricStats(w io.Writer, s *fabric.Stats) {
	fmt.Fprintf(w, "  packets    %d sent, %d delivered, %d dropped at full queues, %d lost on links (%d hops)\n",
		s.Sent, s.Delivered, s.Drops, s.Lost, s.PacketHops)
	var hist []string
	for n, c := range s.ItemsHist {
		if c > 0 {
			hist = append(hist, fmt.Sprintf("%d: %d", n, c))
		}
	}
	if len(hist) == 0 {
		hist = []string{"none"}
	}
	fmt.Fprintf(w, "  INT-label  %d labels; %d exports carrying %d items (exports by items carried: %s); %d items lost with their packets\n",
		s.Labels, s.Exports, s.ExportedItems, strings.Join(hist, ", "), s.LostItems)
	share := 0.0
	if s.TrafficBytes > 0 {
		share = 100 * float64(s.INTBytes) / float64(s.TrafficBytes)
	}
	fmt.Fprintf(w, "  INT        %d INT-MD reports, %d postcards; INT-label headers %.2f%% of the bytes on links\n", s.Reports, s.Postcards, share)
}
