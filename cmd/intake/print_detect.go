package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/telemetry"
)

// writeFlowState writes f as `intake query flow` prints it: the flow, its path (source first)
// and latency, and one line a hop, numbered from the source (docs/hops.md), with the hop
// latency of the flow's newest report and the largest latest value of its switch's queues,
// ports and buffers. Those are switch keys, set by any flow's reports (each is in the JSON):
// named as the switch's, so that they are not read as this flow's own values, which the flow
// cache keeps (query flowcache-flow).
func writeFlowState(w io.Writer, f *detect.FlowState) error {
	fmt.Fprintf(w, "flow     %s\n", telemetry.FlowString(f.Src, f.Sport, f.Dst, f.Dport, f.Proto))
	fmt.Fprintf(w, "path     %s (%d hops, source first)\n", pathText(f.Path), f.PathLen)
	if f.FlowLatency != nil {
		fmt.Fprintf(w, "latency  %s end to end, latest\n", nanos(float64(*f.FlowLatency)))
	}
	fmt.Fprintf(w, "reports  %d, first seen %s, last seen %s\n", f.Reports, f.FirstSeen.Format(time.RFC3339Nano), f.LastSeen.Format(time.RFC3339Nano))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tSWITCH\tHOP LATENCY latest\tSWITCH QUEUE OCCUPANCY max\tSWITCH TX UTILIZATION max\tSWITCH BUFFER OCCUPANCY max")
	for _, h := range f.Hops {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", h.Hop, h.SwitchID, nanos(float64(h.HopLatency)),
			busiest(f.Queues, h.SwitchID, "queue", func(v detect.SwitchValue) *uint64 { return v.QueueOccupancy }),
			busiest(f.Ports, h.SwitchID, "port", func(v detect.SwitchValue) *uint64 { return v.TxUtilization }),
			busiest(f.Buffers, h.SwitchID, "buffer", func(v detect.SwitchValue) *uint64 { return v.BufferOccupancy }))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "SWITCH ... max: the largest latest value of the switch's queues, ports, buffers, from any flow (each: --json)")
	return err
}

// busiest writes the greatest value among switch sw's keys, "12 (queue 3, max of 8)", or "-".
func busiest(vs []detect.SwitchValue, sw uint32, what string, val func(detect.SwitchValue) *uint64) string {
	var best *detect.SwitchValue
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
	var id uint32
	if best.Port != nil {
		id = *best.Port
	}
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
