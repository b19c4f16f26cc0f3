package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/internal/cli"
)

// query flowcache-flow, top, histogram, flowcache-stats: the flow cache's endpoints of a
// running collector (/api/v1/flowcache/..., /api/v1/histograms/...).

func init() {
	registerSub("query", verb{
		name:    "flowcache-flow",
		summary: "a flow's packets, latency and per-hop latest and mean values from the flow cache (reads /api/v1/flowcache/flow)",
		run:     runQueryFlowCacheFlow,
	})
	registerSub("query", verb{
		name:    "top",
		summary: "the flow cache's top flows by mean end-to-end latency or packets (reads /api/v1/flowcache/top)",
		run:     runQueryTop,
	})
	registerSub("query", verb{
		name:    "histogram",
		summary: "a switch's histogram of hop latency, queue occupancy or tx utilization (reads /api/v1/histograms)",
		run:     runQueryHistogram,
	})
	registerSub("query", verb{
		name:    "flowcache-stats",
		summary: "the flow cache's occupancy, evictions and ring drops (reads /api/v1/flowcache/stats)",
		run:     runQueryFlowCacheStats,
	})
}

func runQueryFlowCacheFlow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query flowcache-flow", flowUsage, stdout)
	o := cli.AddQuery(fs, false)
	flow := flowFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	q, err := flow(pos)
	if err != nil {
		return err
	}
	var f flowcache.FlowJSON
	if done, err := apiQuery(stdout, o, "/api/v1/flowcache/flow", q, &f); done || err != nil {
		return err
	}
	writeCachedFlow(stdout, &f)
	return nil
}

func writeCachedFlow(w io.Writer, f *flowcache.FlowJSON) {
	fmt.Fprintf(w, "flow     %s\n", cli.Flow(f.Src, f.Sport, f.Dst, f.Dport, f.Proto))
	trunc := ""
	if f.Truncated {
		trunc = " (longer paths seen: truncated to max_hops)"
	}
	fmt.Fprintf(w, "path     %s%s\n", cli.Path(f.Path), trunc)
	if f.Latency.Latest != nil {
		fmt.Fprintf(w, "latency  %s end to end, mean %s\n", cli.Nanos(float64(*f.Latency.Latest)), cli.NanosOf(f.Latency.Mean))
	}
	fmt.Fprintf(w, "packets  %d, first seen %s, last seen %s\n", f.Packets, f.FirstSeen, f.LastSeen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOP\tSWITCH\tHOP LATENCY (mean)\tQUEUE OCCUPANCY (mean)\tTX UTILIZATION (mean)")
	for i, h := range f.Hops {
		fmt.Fprintf(tw, "%d\t%d\t%s (%s)\t%s (%s)\t%s (%s)\n", i+1, h.NodeID, cli.NanosOf(h.Latest.HopLatency), cli.NanosOf(h.Mean.HopLatency),
			opt(h.Latest.QueueOccupancy), mean(h.Mean.QueueOccupancy), opt(h.Latest.TxUtil), mean(h.Mean.TxUtil))
	}
	tw.Flush()
}

// mean writes an optional mean to one decimal, "-" when absent.
func mean(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

func runQueryTop(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query top", "[--by latency|packets] [--n N] [--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false)
	by := fs.String("by", "packets", "rank by `key`: latency (mean end-to-end) or packets")
	n := fs.Int("n", 10, "the top `N` flows (1-1000)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *by != "latency" && *by != "packets" {
		return usageErr("--by %q: must be latency or packets", *by)
	}
	var top flowcache.TopJSON
	if done, err := apiQuery(stdout, o, "/api/v1/flowcache/top", url.Values{"by": {*by}, "n": {strconv.Itoa(*n)}}, &top); done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tFLOW\tPACKETS\tLATENCY MEAN\tLATENCY LATEST\tPATH")
	for i, f := range top.Flows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", i+1, cli.Flow(f.Src, f.Sport, f.Dst, f.Dport, f.Proto), f.Packets,
			cli.NanosOf(f.Latency.Mean), cli.NanosOf(f.Latency.Latest), cli.Path(f.Path))
	}
	return tw.Flush()
}

func runQueryHistogram(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query histogram", "--switch ID|e2e [--metric hop_latency|queue_occupancy|tx_util|latency] [--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false)
	sw := fs.String("switch", "", "switch `id`, or e2e for the end-to-end latency")
	metric := fs.String("metric", "hop_latency", "`metric`: hop_latency, queue_occupancy, tx_util (latency for e2e)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *sw == "" {
		return usageErr("--switch is required")
	}
	if *sw == "e2e" && *metric == "hop_latency" {
		*metric = "latency"
	}
	var h flowcache.HistJSON
	if done, err := apiQuery(stdout, o, "/api/v1/histograms/"+url.PathEscape(*sw)+"/"+url.PathEscape(*metric), nil, &h); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "switch %s %s: %d samples, %s scale, %d bins\n", h.Switch, h.Metric, h.Total, h.Scale, h.Bins)
	var most uint64
	for _, b := range h.Counts {
		most = max(most, b.Count)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, b := range h.Counts {
		rng := fmt.Sprintf(">= %d", b.Lo)
		if b.Hi != nil {
			rng = fmt.Sprintf("[%d, %d)", b.Lo, *b.Hi)
		}
		bar := strings.Repeat("#", int((b.Count*40+most-1)/max(most, 1)))
		fmt.Fprintf(tw, "%s\t%d\t %s\t\n", rng, b.Count, bar)
	}
	return tw.Flush()
}

func runQueryFlowCacheStats(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query flowcache-stats", "[--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	// The stats endpoint's body, with the Redis sink's counters typed.
	var s struct {
		flowcache.StatsJSON
		Redis *export.RedisCounts `json:"redis,omitempty"`
	}
	if done, err := apiQuery(stdout, o, "/api/v1/flowcache/stats", nil, &s); done || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "flow cache  %d rows × %d buckets × %d hops: %d of %d flows (%.2f%%), %d bytes (%.1f per flow)\n",
		s.Rows, s.Buckets, s.MaxHops, s.Flows, s.Capacity, 100*s.Occupancy, s.Bytes, s.BytesPerFlow)
	fmt.Fprintf(stdout, "reports     %d (updates %d, new flows %d, no flow %d, no hops %d, truncated paths %d)\n",
		s.Reports, s.Updates, s.Inserts, s.SkippedNoFlow, s.SkippedNoHops, s.TruncatedPaths)
	fmt.Fprintf(stdout, "evictions   collision %d, idle %d\n", s.Evictions.Collision, s.Evictions.Idle)
	fmt.Fprintf(stdout, "rings       %d × %d: %d records, %d exported, %d pending, %d dropped\n",
		s.Rings.Count, s.Rings.Entries, s.Rings.Pushed, s.Rings.Exported, s.Rings.Pending, s.Rings.Drops)
	fmt.Fprintf(stdout, "histograms  %d switches, %d samples over max_switches\n", s.Switches, s.SwitchOverflow)
	for _, r := range s.EventRings {
		fmt.Fprintf(stdout, "event ring  %s: %d of %d pending, %d dropped\n", r.Consumer, r.Pending, r.Size, r.Drops)
	}
	if r := s.Redis; r != nil {
		fmt.Fprintf(stdout, "redis       connected %v, queued %d, reconnects %d; sent event %d, flow %d, hash %d; dropped event %d, flow %d, hash %d\n",
			r.Connected, r.Queued, r.Reconnects, r.Sent["event"], r.Sent["flow"], r.Sent["hash"],
			sumMap(r.Dropped["event"]), sumMap(r.Dropped["flow"]), sumMap(r.Dropped["hash"]))
	}
	return nil
}

func sumMap(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
