package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/ingest"
)

// Status is GET /api/v1/status: the receive path's counters (ingest.Status, at the top
// level) and every component's drops in one place.
type Status struct {
	ingest.Status
	Drops Drops `json:"drops"`
	// HTTP is the API server's connections (absent without it).
	HTTP *api.ConnStats `json:"http,omitempty"`
	// Group is the collector's role in a consumer group (absent outside one).
	Group *GroupStatus `json:"group,omitempty"`
}

// Drops lists every counter of something lost or refused for lack of room, by section and
// reason (docs/ingest.md, "Drops"), and their Total. Components that are off are absent.
// Decode errors are not here: they are the reports' fault, in decode_errors.
//
// The sections, each a JSON key beside "total": ingest (datagrams ingest dropped, by
// reason, and kernel: datagrams the kernel dropped because a socket's receive buffer was
// full), processor_queues (reports a processor's queue had no room for), event_rings
// (events a bus consumer's ring had no room for, by consumer), event_streams (live event
// streams dropped: behind, slow; or refused), export ("<sink>.<reason>" of the export
// pipeline's and the flow records' sinks), kafka ("<kind>.<reason>" of reports and flow
// records; events and snapshots are under export), redis ("<kind>.<reason>"), flowcache,
// dta, label (control_queue) and http (connections refused at once, by cap). Each
// component names its own (its Drops method); the collector only adds them up.
type Drops struct {
	Total    uint64
	Sections map[string]map[string]uint64
}

// sectionOrder is the order of the known sections in the JSON and the text: the pipeline's.
var sectionOrder = []string{"ingest", "processor_queues", "event_rings", "event_streams", "export", "kafka", "redis", "flowcache", "dta", "label", "http"}

// SectionNames returns the sections d has, the known ones in the pipeline's order, then
// any other sorted.
func (d *Drops) SectionNames() []string {
	var known, other []string
	for _, s := range sectionOrder {
		if _, ok := d.Sections[s]; ok {
			known = append(known, s)
		}
	}
	for s := range d.Sections {
		if !slices.Contains(sectionOrder, s) {
			other = append(other, s)
		}
	}
	slices.Sort(other)
	return append(known, other...)
}

// MarshalJSON writes {"total": n, "<section>": {"<reason>": n, ...}, ...}, the sections in
// SectionNames' order.
func (d Drops) MarshalJSON() ([]byte, error) {
	b := fmt.Appendf(nil, `{"total":%d`, d.Total)
	for _, s := range d.SectionNames() {
		m, err := json.Marshal(d.Sections[s])
		if err != nil {
			return nil, err
		}
		b = fmt.Appendf(b, ",%q:%s", s, m)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Drops) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*d = Drops{Sections: map[string]map[string]uint64{}}
	for k, v := range m {
		var err error
		if k == "total" {
			err = json.Unmarshal(v, &d.Total)
		} else {
			var sec map[string]uint64
			err = json.Unmarshal(v, &sec)
			d.Sections[k] = sec
		}
		if err != nil {
			return fmt.Errorf("drops.%s: %w", k, err)
		}
	}
	return nil
}

// dropper is a component that counts what it loses for lack of room. Its Drops keys are
// "<section>.<reason>": the section is the JSON key under drops.
type dropper interface {
	Drops() map[string]uint64
}

// Drops collects the drop counters of every component now.
func (c *Collector) Drops() Drops {
	st := c.Receiver.Status()
	return c.drops(&st)
}

func (c *Collector) drops(st *ingest.Status) Drops {
	d := Drops{Sections: map[string]map[string]uint64{}}
	srcs := []map[string]uint64{ingestDrops(st), c.Bus.Drops()}
	for _, x := range c.all() {
		if dr, ok := x.(dropper); ok {
			srcs = append(srcs, dr.Drops())
		}
	}
	for _, m := range srcs {
		for k, n := range m {
			sec, reason, _ := strings.Cut(k, ".")
			if d.Sections[sec] == nil {
				d.Sections[sec] = map[string]uint64{}
			}
			d.Sections[sec][reason] += n
			d.Total += n
		}
	}
	return d
}

// ingestDrops is the receive path's drops in st: the ingest section (always there) and the
// processors' queues.
func ingestDrops(st *ingest.Status) map[string]uint64 {
	m := map[string]uint64{"ingest.kernel": st.KernelDrops}
	for k, n := range st.IngestDrops.ByReason {
		m["ingest."+k] = n
	}
	for k, n := range st.ProcessorQueueDrops {
		m["processor_queues."+k] = n
	}
	return m
}

// FullStatus is the receive path's status with every component's drops.
func (c *Collector) FullStatus() Status {
	st := c.Receiver.Status()
	return Status{Status: st, Drops: c.drops(&st), HTTP: c.httpStats(), Group: c.groupStatus(context.Background())}
}

// httpStats is the API server's connections, nil without it.
func (c *Collector) httpStats() *api.ConnStats {
	if c.API == nil {
		return nil
	}
	st := c.API.ConnStats()
	return &st
}

// statusHandler serves GET /api/v1/status.
func (c *Collector) statusHandler() http.HandlerFunc {
	return c.Receiver.StatusHandler(func(st ingest.Status) any {
		return Status{Status: st, Drops: c.drops(&st), HTTP: c.httpStats(), Group: c.groupStatus(context.Background())}
	})
}
