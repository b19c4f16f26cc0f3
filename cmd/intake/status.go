package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/collector"
	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/ingest"
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
	fs := newFlags("status", "[--addr HOST:PORT] [--json]", stdout)
	addr := fs.String("addr", config.HTTPAddress, addrHelp)
	asJSON := fs.Bool("json", false, "print the status object as the API returns it")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var st collector.Status
	if done, err := apiQuery(stdout, *addr, "/api/v1/status", nil, *asJSON, &st); done || err != nil {
		return err
	}
	printStatus(stdout, *addr, &st.Status)
	printDrops(stdout, &st.Drops)
	return nil
}

// printDrops prints the drops total and every component's non-zero counters.
func printDrops(w io.Writer, d *collector.Drops) {
	fmt.Fprintf(w, "\ndrops: %d\n", d.Total)
	for _, c := range []struct {
		name string
		m    map[string]uint64
	}{{"ingest", d.Ingest}, {"processor queues", d.ProcessorQueues}, {"event rings", d.EventRings}, {"event streams", d.EventStreams},
		{"export", d.Export}, {"redis", d.Redis}, {"flowcache", d.FlowCache}, {"dta", d.DTA}, {"label", d.Label}} {
		if s := nonZero(c.m); s != "" {
			fmt.Fprintf(w, "  %s:%s\n", c.name, s)
		}
	}
}

func printStatus(w io.Writer, addr string, st *ingest.Status) {
	state := "stopped"
	if st.Running {
		state = "running"
	}
	fmt.Fprintf(w, "intake at %s: %s, up %s, %d workers\n\n", addr, state,
		(time.Duration(st.UptimeS * float64(time.Second))).Round(time.Second), st.Workers)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	r := st.Rates
	fmt.Fprintf(tw, "\ttotal\tper s\t\n")
	fmt.Fprintf(tw, "packets received\t%d\t%.0f\t\n", st.PacketsReceived, r.PacketsPerS)
	fmt.Fprintf(tw, "bytes received\t%d\t%.0f\t\n", st.BytesReceived, r.BytesPerS)
	fmt.Fprintf(tw, "reports decoded\t%d\t%.0f\t\n", st.ReportsDecoded, r.ReportsPerS)
	fmt.Fprintf(tw, "decode errors\t%d\t%.0f\t\n", st.DecodeErrors.Total, r.DecodeErrorsPerS)
	fmt.Fprintf(tw, "ingest drops\t%d\t%.0f\t\n", st.IngestDrops.Total, r.IngestDropsPerS)
	fmt.Fprintf(tw, "kernel drops\t%d\t%.0f\t\n", st.KernelDrops, r.KernelDropsPerS)
	tw.Flush()
	if s := nonZero(st.ReportsByFormat); s != "" {
		fmt.Fprintf(w, "reports by format:%s\n", s)
	}
	if s := nonZero(st.DecodeErrors.ByReason); s != "" {
		fmt.Fprintf(w, "decode errors by reason:%s\n", s)
	}
	if s := nonZero(st.IngestDrops.ByReason); s != "" {
		fmt.Fprintf(w, "ingest drops by reason:%s\n", s)
	}
	if len(st.ProcessorQueueDrops) > 0 {
		fmt.Fprintf(w, "processor queue drops:%s\n", nonZero(st.ProcessorQueueDrops))
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "LISTENER\tFORMAT\tADDRESS\tSOCKETS\tRCVBUF REQ/GRANTED\tPACKETS\tREPORTS\tERRORS\tDROPS\tKERNEL DROPS\tPKTS/S\n")
	for _, l := range st.Listeners {
		a := l.Address
		if a == "" {
			a = fmt.Sprintf("-:%d", l.Port)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%s\t%d\t%d\t%d\t%d\t%d\t%.0f\n", l.Name, l.Format, a, l.Sockets,
			bytesIEC(l.RcvBufRequested), bytesIEC(l.RcvBufGranted), l.PacketsReceived, l.ReportsDecoded,
			l.DecodeErrors.Total, l.IngestDrops.Total, l.KernelDrops, l.Rates.PacketsPerS)
	}
	tw.Flush()
}

func bytesIEC(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}

// addrHelp is the --addr flag's text on the verbs that ask a running collector.
const addrHelp = "the collector's HTTP `address` (http.address in its config; https://host:port for TLS); the token is read from $INTAKE_TOKEN or the file $INTAKE_TOKEN_FILE, the CA certificates for TLS from $INTAKE_CA"
