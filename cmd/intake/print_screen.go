package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/cli"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/flowcache"
)

// screen is a one-screen live summary of a running collector, the one `intake demo` draws
// every second: reports/s by format, counters and drops, events by kind, the active flows
// and the slowest flows and switches (from the flow cache). Over a terminal it redraws in
// place, otherwise it prints one block per Draw.
type screen struct {
	c         *collector.Collector
	w         io.Writer
	title     string
	tty       bool
	top       int
	lastByFmt map[string]uint64
	lastT     time.Time
	final     bool // the last screen, after the senders stopped
	kinds     [event.NumKinds]uint64
	buf       []event.Event
	events    *event.Consumer
	recent    *flowcache.Recent
}

// newScreen returns a screen of c, which must have a flow cache, written to w under title,
// with the top slowest flows and switches. It reads the events from a bus consumer of its own
// (named consumer) until Close.
func newScreen(c *collector.Collector, w io.Writer, title, consumer string, top int) (*screen, error) {
	if c.FlowCache == nil {
		return nil, errors.New("flowcache.enabled: false: the screen reads the flow cache; turn it on")
	}
	// Only a terminal gets the screen redrawn in place; /dev/null, a character device too,
	// and logs get it appended.
	tty := cli.IsTerminal(w)
	return &screen{c: c, w: w, title: title, tty: tty, top: top, buf: make([]event.Event, 4096), lastByFmt: map[string]uint64{},
		lastT: time.Now(), recent: c.FlowCache.NewRecent(), events: c.Bus.Subscribe(consumer, 1<<14)}, nil
}

// Close stops reading events.
func (d *screen) Close() { d.c.Bus.Unsubscribe(d.events) }

// Final makes the next Draw the last: its rates are the means since start, and it says the
// run has stopped.
func (d *screen) Final(start time.Time) {
	d.lastByFmt, d.lastT, d.final = map[string]uint64{}, start, true
}

// Draw writes the screen: up is the time since the start, httpLine where the API is, source
// a few lines about the traffic's source (may be empty).
func (d *screen) Draw(up time.Duration, httpLine, source string) {
	events := d.events
	st := d.c.Receiver.Status()
	now := time.Now()
	for n := events.Poll(d.buf); n > 0; n = events.Poll(d.buf) {
		for _, e := range d.buf[:n] {
			if int(e.Kind) < len(d.kinds) {
				d.kinds[e.Kind]++
			}
		}
	}
	var b strings.Builder
	if d.tty {
		b.WriteString("\033[H\033[2J")
	} else {
		b.WriteString("\n")
	}
	state := "(Ctrl-C stops)"
	if d.final {
		state = "(stopped)"
	}
	fmt.Fprintf(&b, "%s   up %s   http %s   %s\n", d.title, up.Round(time.Second), httpLine, state)
	// reports/s by format over the last draw
	var perFmt []string
	var total float64
	dt := now.Sub(d.lastT).Seconds()
	for _, f := range []string{"tr0.5", "tr1.0", "tr2.0", "int-md", "dta", "int-label"} {
		v := st.ReportsByFormat[f]
		if dt > 0 && v > d.lastByFmt[f] {
			r := float64(v-d.lastByFmt[f]) / dt
			total += r
			perFmt = append(perFmt, fmt.Sprintf("%s %.0f", f, r))
		}
	}
	d.lastByFmt, d.lastT = st.ReportsByFormat, now
	over := ""
	if d.final {
		over = " (mean over the run)"
	}
	fmt.Fprintf(&b, "reports/s   %-10.0f %s%s\n", total, strings.Join(perFmt, ", "), over)
	qd := sum(st.ProcessorQueueDrops)
	fmt.Fprintf(&b, "received    %d packets, %d reports   drops: kernel %d, decode errors %d, ingest %d, queues %d\n",
		st.PacketsReceived, st.ReportsDecoded, st.KernelDrops, st.DecodeErrors.Total, st.IngestDrops.Total, qd)
	fmt.Fprintf(&b, "events      new_key %d, path_change %d, change %d, above %d, below %d\n",
		d.kinds[event.KindNewKey], d.kinds[event.KindPathChange], d.kinds[event.KindChange], d.kinds[event.KindAbove], d.kinds[event.KindBelow])

	flows, switches := d.recent.Read(now.Add(-5 * time.Second).UnixNano())
	fmt.Fprintf(&b, "flows       %d active in the last 5 s, through %d switches\n\n", len(flows), len(switches))
	sort.Slice(flows, func(i, j int) bool { return flows[i].LatLatest > flows[j].LatLatest })
	fmt.Fprintf(&b, "slowest flows (end-to-end latency of the last report)\n")
	for _, f := range flows[:min(d.top, len(flows))] {
		path := make([]uint32, len(f.Hops))
		for i, h := range f.Hops {
			path[i] = h.NodeID
		}
		fmt.Fprintf(&b, "  %-44s %10s   path %s\n", f.Flow.String(), nsString(f.LatLatest), pathText(path))
	}
	sort.Slice(switches, func(i, j int) bool { return switches[i].Sum*switches[j].N > switches[j].Sum*switches[i].N })
	fmt.Fprintf(&b, "\nslowest hops (hop latency by switch, last second)\n")
	for _, s := range switches[:min(d.top, len(switches))] {
		fmt.Fprintf(&b, "  switch %-8d mean %10s   max %10s   %d reports\n", s.Node, nsString(s.Sum/s.N), nsString(s.Latest), s.N)
	}
	if source != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(source, "\n"))
	}
	io.WriteString(d.w, b.String())
}

// nsString prints nanoseconds in the unit that reads best, as the screen has always written
// them (two decimals; the query verbs' nanos gives three significant digits).
func nsString(ns uint64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
