package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/detect"
)

// query events: GET /api/v1/events of a running collector.

func init() {
	registerSub("query", verb{
		name:    "events",
		summary: "recent detector events (reads /api/v1/events)",
		run:     runQueryEvents,
	})
}

// apiQuery reads path?q from the collector at o.API. When o asks for JSON it prints the
// API's body as it is and reports done; otherwise it decodes the body into v for the verb's
// own output.
func apiQuery(stdout io.Writer, o *cli.Query, path string, q url.Values, v any) (done bool, err error) {
	asJSON, err := o.WantJSON()
	if err != nil {
		return true, usageErr("%v", err)
	}
	body, err := getAPI(o.API, path, q)
	if err != nil {
		return true, err
	}
	if asJSON {
		_, err := stdout.Write(body)
		return true, err
	}
	if _, own := v.(*cluster.StatusJSON); !own {
		// A cluster's merged answer says when members were missing from it: so do we.
		var p struct {
			Partial bool     `json:"partial"`
			Missing []string `json:"missing"`
		}
		if json.Unmarshal(body, &p) == nil && p.Partial {
			fmt.Fprintf(stdout, "partial answer: %s did not answer\n", strings.Join(p.Missing, ", "))
		}
	}
	return false, json.Unmarshal(body, v)
}

// getAPI reads path?q from the collector at addr into its body, or an error naming the
// status and the collector's JSON error: a usage error when the collector found the
// request's parameters wrong (400). The token and CAs come from the environment
// (api.NewClient).
func getAPI(addr, path string, q url.Values) ([]byte, error) {
	c, err := api.NewClient(addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return badRequest(c.Get(path, q))
}

// badRequest turns an API answer of 400 into a usage error: the user's misuse.
func badRequest(body []byte, err error) ([]byte, error) {
	if se := (*api.StatusError)(nil); errors.As(err, &se) && se.Code == http.StatusBadRequest {
		return nil, usageErr("%v", err)
	}
	return body, err
}

func runQueryEvents(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query events", "[--api HOST:PORT] [--since T] [--kind K[,K]] [--limit N] [--json|--table]", stdout)
	o := cli.AddQuery(fs, false, stderr)
	since := fs.String("since", "", "only events at or after `T`: RFC 3339, Unix ns, or a duration ago (5m)")
	kind := fs.String("kind", "", "only these `kinds`: new_key, path_change, change, above, below, expire, immediate")
	limit := fs.Int("limit", 0, "at most `N` events, the newest (default: the server's 1000)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	q := url.Values{}
	if *since != "" {
		q.Set("since", *since)
	}
	if *kind != "" {
		q.Set("kind", *kind)
	}
	if *limit > 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	var r struct {
		Events []detect.EventJSON `json:"events"`
	}
	if done, err := apiQuery(stdout, o, "/api/v1/events", q, &r); done || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tSCOPE\tMEASUREMENT\tKEY\tPREV\tVALUE\tTHRESHOLD")
	for _, e := range r.Events {
		th := "-"
		if e.Threshold != nil {
			th = measured(e.Measurement, *e.Threshold)
		}
		prev, val := measured(e.Measurement, e.Prev), measured(e.Measurement, e.Value)
		if e.Measurement == "flow_path" {
			prev, val = "-", pathText(e.Path)
		}
		// Fixed-width nanoseconds (RFC 3339 would trim trailing zeros), so columns align.
		at := time.Unix(0, e.TimeNS).UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", at, e.Kind, e.Scope, e.Measurement, e.Key, prev, val, th)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d events\n", len(r.Events))
	return nil
}

// measured writes a value of measurement m with its unit: the latencies, in nanoseconds,
// as nanos does (3.10 µs); the others (queue and buffer occupancy, utilization, counts) are
// the switch's own numbers, as they are.
func measured(m string, v uint64) string {
	switch m {
	case "flow_latency", "flow_hop_latency":
		return nanos(float64(v))
	}
	return strconv.FormatUint(v, 10)
}
