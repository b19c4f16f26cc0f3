package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// writeFlowCacheFlow writes f as `intake query flowcache-flow` prints it: the flow, its path
// (source first), its end-to-end latency and one line a hop, numbered from the source
// (docs/hops.md), with the latest and the mean of each metric as this flow's reports carried
// them; a mean is over the flow's reports since it entered the cache (its first seen).
func writeFlowCacheFlow(w io.Writer, f *flowcache.FlowJSON) error {
	fmt.Fprintf(w, "flow     %s\n", telemetry.FlowString(f.Src, f.Sport, f.Dst, f.Dport, f.Proto))
	trunc := ""
	if f.Truncated {
		trunc = "; longer paths seen: truncated to max_hops"
	}
	fmt.Fprintf(w, "path     %s (%d hops, source first%s)\n", pathText(f.Path), len(f.Path), trunc)
	if f.Latency.Latest != nil {
		fmt.Fprintf(w, "latency  %s end to end, latest; mean %s\n", nanos(float64(*f.Latency.Latest)), nanosOf(f.Latency.Mean))
	}
	fmt.Fprintf(w, "packets  %d, first seen %s, last seen %s\n", f.Packets, f.FirstSeen, f.LastSeen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tSWITCH\tHOP LATENCY latest\tmean\tQUEUE OCCUPANCY latest\tmean\tTX UTILIZATION latest\tmean")
	for _, h := range f.Hops {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Hop, h.NodeID, nanosOf(h.Latest.HopLatency), nanosOf(h.Mean.HopLatency),
			optional(h.Latest.QueueOccupancy), meanText(h.Mean.QueueOccupancy), optional(h.Latest.TxUtil), meanText(h.Mean.TxUtil))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "latest: the newest value this flow's reports carried; mean: over its reports since first seen")
	return err
}

// meanText writes an optional mean to one decimal, "-" when absent.
func meanText(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

// writeTop writes t as `intake query top` prints it.
func writeTop(w io.Writer, t *flowcache.TopJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tFLOW\tPACKETS\tLATENCY MEAN\tLATENCY LATEST\tPATH")
	for i, f := range t.Flows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", i+1, telemetry.FlowString(f.Src, f.Sport, f.Dst, f.Dport, f.Proto), f.Packets,
			nanosOf(f.Latency.Mean), nanosOf(f.Latency.Latest), pathText(f.Path))
	}
	return tw.Flush()
}

// writeHistogram writes h as `intake query histogram` prints it: a bar per bin.
func writeHistogram(w io.Writer, h *record.Histogram) error {
	fmt.Fprintf(w, "switch %s %s: %d samples, %s scale, %d bins\n", h.Switch, h.Metric, h.Total, h.Scale, h.Bins)
	var most uint64
	for _, b := range h.Counts {
		most = max(most, b.Count)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unit := strconv.FormatUint // queue occupancy and utilization: the switch's own numbers
	if h.Metric == "hop_latency" || h.Metric == "latency" {
		unit = func(ns uint64, _ int) string { return nanos(float64(ns)) }
	}
	for _, b := range h.Counts {
		rng := ">= " + unit(b.Lo, 10)
		if b.Hi != nil {
			rng = "[" + unit(b.Lo, 10) + ", " + unit(*b.Hi, 10) + ")"
		}
		bar := strings.Repeat("#", int((b.Count*40+most-1)/max(most, 1)))
		fmt.Fprintf(tw, "%s\t%d\t %s\t\n", rng, b.Count, bar)
	}
	return tw.Flush()
}

// writeFlowCacheStats writes s as `intake query flowcache-stats` prints it.
func writeFlowCacheStats(w io.Writer, s *flowcache.StatsJSON) {
	fmt.Fprintf(w, "flow cache  %d rows × %d buckets × %d hops: %d of %d flows (%.2f%%), %d bytes (%.1f per flow)\n",
		s.Rows, s.Buckets, s.MaxHops, s.Flows, s.Capacity, 100*s.Occupancy, s.Bytes, s.BytesPerFlow)
	fmt.Fprintf(w, "reports     %d (updates %d, new flows %d, no flow %d, no hops %d, truncated paths %d)\n",
		s.Reports, s.Updates, s.Inserts, s.SkippedNoFlow, s.SkippedNoHops, s.TruncatedPaths)
	fmt.Fprintf(w, "evictions   collision %d, idle %d\n", s.Evictions.Collision, s.Evictions.Idle)
	fmt.Fprintf(w, "rings       %d × %d: %d records, %d exported, %d pending, %d dropped\n",
		s.Rings.Count, s.Rings.Entries, s.Rings.Pushed, s.Rings.Exported, s.Rings.Pending, s.Rings.Drops)
	fmt.Fprintf(w, "histograms  %d switches, %d samples over max_switches\n", s.Switches, s.SwitchOverflow)
	if k := s.Kernel; k != nil {
		fmt.Fprintf(w, "kernel      %d reports (included above), %d flows, %d bytes; ring %d pushed, %d pending, %d dropped; %d updates lost to a held row, %d read errors\n",
			k.Reports, k.Flows, k.Bytes, k.Pushed, k.Pending, k.RingFull, k.LockBusy, k.Errors)
	}
	for _, r := range s.EventRings {
		fmt.Fprintf(w, "event ring  %s: %d of %d pending, %d dropped\n", r.Consumer, r.Pending, r.Size, r.Drops)
	}
}

// optional prints an optional value, "-" when absent.
func optional[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
