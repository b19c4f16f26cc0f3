package detect

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/internal/cli"
)

// WriteText writes f as `intake query flow` prints it: the flow, its path and latency, and
// one line a hop with its latency and the busiest queue, port and buffer of its switch
// (every one of them is in the JSON).
func (f *FlowState) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "flow     %s\n", cli.Flow(f.Src, f.Sport, f.Dst, f.Dport, f.Proto))
	fmt.Fprintf(w, "path     %s (%d hops)\n", cli.Path(f.Path), f.PathLen)
	if f.FlowLatency != nil {
		fmt.Fprintf(w, "latency  %s end to end\n", cli.Nanos(float64(*f.FlowLatency)))
	}
	fmt.Fprintf(w, "reports  %d, first seen %s, last seen %s\n", f.Reports, f.FirstSeen.Format(time.RFC3339Nano), f.LastSeen.Format(time.RFC3339Nano))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tSWITCH\tHOP LATENCY\tQUEUE OCCUPANCY\tTX UTILIZATION\tBUFFER OCCUPANCY")
	for i, h := range f.Hops {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", i+1, h.SwitchID, cli.Nanos(float64(h.HopLatency)),
			busiest(f.Queues, h.SwitchID, "queue", func(v SwitchValue) *uint64 { return v.QueueOccupancy }),
			busiest(f.Ports, h.SwitchID, "port", func(v SwitchValue) *uint64 { return v.TxUtilization }),
			busiest(f.Buffers, h.SwitchID, "buffer", func(v SwitchValue) *uint64 { return v.BufferOccupancy }))
	}
	return tw.Flush()
}

// busiest writes the greatest value among switch sw's keys, "12 (queue 3, max of 8)", or "-".
func busiest(vs []SwitchValue, sw uint32, what string, val func(SwitchValue) *uint64) string {
	var best *SwitchValue
	n := 0
	for i := range vs {
		if v := val(vs[i]); vs[i].SwitchID == sw && v != nil {
			n++
			if best == nil || *v > *val(*best) {
				best = &vs[i]
			}
		}
	}
	if best == nil {
		return "-"
	}
	id := deref(best.Port)
	if best.QueueID != nil {
		id = uint32(*best.QueueID)
	} else if best.BufferID != nil {
		id = uint32(*best.BufferID)
	}
	if n > 1 {
		return fmt.Sprintf("%d (%s %d, max of %d)", *val(*best), what, id, n)
	}
	return fmt.Sprintf("%d (%s %d)", *val(*best), what, id)
}
