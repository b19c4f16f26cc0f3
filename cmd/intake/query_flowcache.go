package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/record"
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
	o := cli.AddQuery(fs, false, stderr)
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
	return writeFlowCacheFlow(stdout, &f)
}

func runQueryTop(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query top", "[--by latency|packets] [--n N] [--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
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
	return writeTop(stdout, &top)
}

func runQueryHistogram(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query histogram", "--switch ID|e2e [--metric hop_latency|queue_occupancy|tx_utilization|latency] [--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
	sw := fs.String("switch", "", "switch `id`, or e2e for the end-to-end latency")
	metric := fs.String("metric", "hop_latency", "`metric`: hop_latency, queue_occupancy, tx_utilization (latency for e2e)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *metric == "tx_util" {
		fmt.Fprintln(stderr, "intake: --metric tx_util is deprecated: use tx_utilization, which means the same")
		*metric = "tx_utilization"
	}
	if *sw == "" {
		return usageErr("--switch is required")
	}
	if *sw == "e2e" && *metric == "hop_latency" {
		*metric = "latency"
	}
	var h record.Histogram
	if done, err := apiQuery(stdout, o, "/api/v1/histograms/"+url.PathEscape(*sw)+"/"+url.PathEscape(*metric), nil, &h); done || err != nil {
		return err
	}
	return writeHistogram(stdout, &h)
}

func runQueryFlowCacheStats(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query flowcache-stats", "[--api HOST:PORT] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	// The stats endpoint's body, with the Redis sink's counters typed.
	var s struct {
		flowcache.StatsJSON
		Redis *redis.Counts `json:"redis,omitempty"`
	}
	if done, err := apiQuery(stdout, o, "/api/v1/flowcache/stats", nil, &s); done || err != nil {
		return err
	}
	writeFlowCacheStats(stdout, &s.StatsJSON)
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
