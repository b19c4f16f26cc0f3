package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/export/kafka"
	"github.com/intake-int/intake/internal/ingest"
)

// writeSummary prints the final counters as serve and demo end with them, one line per
// family, reasons that are not zero: every datagram or report not taken is in one of them
// (decode errors, inner packet errors of reports kept, ingest drops, kernel drops,
// processors' rejections, queue drops).
func writeSummary(w io.Writer, s *collector.Summary) {
	st := &s.Status
	fmt.Fprintf(w, "  packets received  %d (%d bytes)\n", st.PacketsReceived, st.BytesReceived)
	fmt.Fprintf(w, "  reports decoded   %d%s\n", st.ReportsDecoded, nonZero(st.ReportsByFormat))
	fmt.Fprintf(w, "  decode errors     %d%s\n", st.DecodeErrors.Total, nonZero(st.DecodeErrors.ByReason))
	if st.InnerErrors.Total > 0 {
		fmt.Fprintf(w, "  inner errors      %d%s (reports kept without their data packet)\n", st.InnerErrors.Total, nonZero(st.InnerErrors.ByReason))
	}
	fmt.Fprintf(w, "  rejected          %d%s\n", sum(s.Rejected), nonZero(s.Rejected))
	fmt.Fprintf(w, "  ingest drops      %d%s\n", st.IngestDrops.Total, nonZero(st.IngestDrops.ByReason))
	fmt.Fprintf(w, "  kernel drops      %d\n", st.KernelDrops)
	if len(st.ProcessorQueueDrops) > 0 {
		fmt.Fprintf(w, "  queue drops       %d%s\n", sum(st.ProcessorQueueDrops), nonZero(st.ProcessorQueueDrops))
	}
	if k := s.KernelDetect; k != nil {
		// Reports detected in the XDP program never reach the counters above.
		fmt.Fprintf(w, "  detected in XDP   %d reports; went up unparsed %d%s; lost %d events (ring full), %d updates (table full)\n",
			k.Reports, sum(k.Lifted), nonZero(k.Lifted), k.RingFull, k.TableFull)
	}
	for _, sk := range s.Sinks {
		writeSinkSummary(w, "export "+sk.Name, sk.Sent, sk.Dropped)
	}
	if rc := s.Redis; rc != nil {
		for _, kind := range sortedKeys(rc.Sent) {
			writeSinkSummary(w, "redis "+plural(kind), rc.Sent[kind], rc.Dropped[kind])
		}
	}
	if s.Kafka != nil {
		writeKafkaSummary(w, s.Kafka)
	}
}

// writeSinkSummary prints one sink's (or one kind's) final counters: what the server
// acknowledged (sent) and what was dropped, by reason. After Stop, nothing else is pending,
// so sent + dropped is everything the sink was offered.
func writeSinkSummary(w io.Writer, name string, sent uint64, dropped map[string]uint64) {
	fmt.Fprintf(w, "  %-17s %d sent, %d dropped%s\n", name, sent, sum(dropped), nonZero(dropped))
}

func plural(s string) string {
	if strings.HasSuffix(s, "h") {
		return s + "es"
	}
	return s + "s"
}

func sortedKeys(m map[string]uint64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// writeKafkaSummary prints the Kafka sink's counters, one line per topic (kind): messages
// acknowledged (sent), dropped by reason, and offered, which after Stop is their sum.
func writeKafkaSummary(w io.Writer, kc *kafka.Counts) {
	for _, kind := range []string{"report", "event", "snapshot", "flow"} {
		topic, ok := kc.Topics[kind]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "  kafka %-11s %d sent, %d dropped%s of %d offered to %s\n", kind+"s", kc.Sent[kind],
			sum(kc.Dropped[kind]), nonZero(kc.Dropped[kind]), kc.Offered[kind], topic)
	}
	if kc.Queued > 0 || kc.InFlight > 0 {
		fmt.Fprintf(w, "  kafka pending     %d queued, %d in flight\n", kc.Queued, kc.InFlight)
	}
}

// nonZero formats " (a 1, b 2)" from the non-zero entries of m, sorted by key.
func nonZero(m map[string]uint64) string {
	var ks []string
	for k, v := range m {
		if v != 0 {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return ""
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeStatus prints a status as `intake status` does: the counters and their rates, the
// listeners, and the drops (addr names the collector).
func writeStatus(w io.Writer, s *collector.Status, addr string) {
	writeIngestStatus(w, addr, &s.Status)
	writeDrops(w, &s.Drops)
	if h := s.HTTP; h != nil {
		fmt.Fprintf(w, "\nhttp: on %s, %d connections open (max %d, %d per source), %d idle closed to make room\n",
			h.Listening, h.Open, h.Max, h.MaxPerSource, h.Evicted)
	}
	if g := s.Group; g != nil {
		writeGroupStatus(w, g)
	}
}

// writeGroupStatus prints a collector's role in a consumer group: an inlet's counts, a
// processor's partitions with their lag, and the group's processors.
func writeGroupStatus(w io.Writer, g *collector.GroupStatus) {
	fmt.Fprintf(w, "\ngroup: %s\n", g.Role)
	if in := g.Inlet; in != nil {
		fmt.Fprintf(w, "  topic %s (%d partitions): %d reports offered, %d produced, %d dropped (buffer full), %d failed\n",
			in.Topic, in.Partitions, in.Offered, in.Produced, in.Dropped, in.Failed)
		if in.LastError != "" {
			fmt.Fprintf(w, "  last error: %s\n", in.LastError)
		}
	}
	if p := g.Processor; p != nil {
		fmt.Fprintf(w, "  member %s of group %s on %s: %d records (%d replayed, %d bad), group lag %d\n",
			p.Member, p.GroupID, p.Topic, p.Records, p.Replayed, p.Bad, p.Lag)
		fmt.Fprintf(w, "  %d rebalances, %d commits (%d failed), %d snapshots (%d failed), %d flows adopted\n",
			p.Rebalances, p.Commits, p.CommitErrors, p.Snapshots, p.SnapshotErrors, p.AdoptedFlows)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PARTITION\tNEXT\tRECORDS\tLAG\tSTATE FROM\t")
		for _, ps := range p.Partitions {
			fmt.Fprintf(tw, "  %d\t%d\t%d\t%d\t%s\t\n", ps.Partition, ps.Next, ps.Records, ps.Lag, ps.StateFrom)
		}
		tw.Flush()
		if p.LastError != "" {
			fmt.Fprintf(w, "  last error: %s\n", p.LastError)
		}
	}
	fmt.Fprintf(w, "  group state %s, %d processors:\n", g.Group.State, len(g.Group.Members))
	for _, m := range g.Group.Members {
		fmt.Fprintf(w, "    %s (%s): partitions %v\n", m.Name, m.API, m.Partitions)
	}
	if g.ViewError != "" {
		fmt.Fprintf(w, "  the group could not be described: %s\n", g.ViewError)
	}
}

// writeDrops prints the drops total and every section's non-zero counters.
func writeDrops(w io.Writer, d *collector.Drops) {
	fmt.Fprintf(w, "\ndrops: %d\n", d.Total)
	for _, sec := range d.SectionNames() {
		name := strings.ReplaceAll(sec, "_", " ")
		if sec == "http" {
			name = "http connections"
		}
		if s := nonZero(d.Sections[sec]); s != "" {
			fmt.Fprintf(w, "  %s:%s\n", name, s)
		}
	}
}

// writeIngestStatus prints the receive path's counters, their rates and the listeners.
func writeIngestStatus(w io.Writer, addr string, st *ingest.Status) {
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
		socks := fmt.Sprint(l.Sockets)
		if l.Sockets > 1 && l.Spread != "" {
			socks += " by " + strings.SplitN(l.Spread, ":", 2)[0] // flow, source
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s/%s\t%d\t%d\t%d\t%d\t%d\t%.0f\n", l.Name, l.Format, a, socks,
			bytesIEC(l.RcvBufRequested), bytesIEC(l.RcvBufGranted), l.PacketsReceived, l.ReportsDecoded,
			l.DecodeErrors.Total, l.IngestDrops.Total, l.KernelDrops, l.Rates.PacketsPerS)
	}
	tw.Flush()
	for _, l := range st.Listeners {
		if l.SinkPackets != nil {
			fmt.Fprintf(w, "%s packets:%s\n", l.Name, nonZero(l.SinkPackets))
		}
	}
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
