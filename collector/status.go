package collector

import (
	"net/http"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/dta"
	"github.com/intake-int/intake/ingest"
)

// Status is GET /api/v1/status: the receive path's counters (ingest.Status, at the top
// level) and every component's drops in one place.
type Status struct {
	ingest.Status
	Drops Drops `json:"drops"`
	// HTTP is the API server's connections (absent without it).
	HTTP *api.ConnStats `json:"http,omitempty"`
}

// Drops lists every counter of something lost or refused for lack of room, by component
// and reason (docs/ingest.md, "Drops"). Components that are off are absent. Decode errors
// are not here: they are the reports' fault, in decode_errors.
type Drops struct {
	// Total is the sum of everything below.
	Total uint64 `json:"total"`
	// Ingest: datagrams ingest dropped, by reason (oversize, not_allowed, ...), and kernel:
	// datagrams the kernel dropped because a socket's receive buffer was full.
	Ingest map[string]uint64 `json:"ingest"`
	// ProcessorQueues: reports a processor's queue had no room for.
	ProcessorQueues map[string]uint64 `json:"processor_queues,omitempty"`
	// EventRings: events a bus consumer's ring had no room for, by consumer, over the
	// collector's life.
	EventRings map[string]uint64 `json:"event_rings,omitempty"`
	// EventStreams: live event streams dropped (behind: the client fell a whole ring
	// behind; slow: a write to it blocked too long) or refused (max_streams open).
	EventStreams map[string]uint64 `json:"event_streams,omitempty"`
	// Export: points each sink of the export pipeline dropped, "<sink>.<reason>".
	Export map[string]uint64 `json:"export,omitempty"`
	// Kafka: messages the Kafka sink dropped, "<kind>.<reason>", of the kinds not counted
	// above: reports (but report.queue_full, which is processor_queues.kafka) and flow
	// records; events and snapshots are under export as kafka.<reason>.
	Kafka map[string]uint64 `json:"kafka,omitempty"`
	// Redis: writes the Redis sink dropped, "<kind>.<reason>".
	Redis map[string]uint64 `json:"redis,omitempty"`
	// FlowCache: evicted flow records a full ring dropped (rings), samples of switches past
	// histograms.max_switches (histogram_switch_overflow), and with flowcache.kernel updates
	// the program could not apply (kernel_lock_busy).
	FlowCache map[string]uint64 `json:"flowcache,omitempty"`
	// DTA: reports the translator did not write, by reason.
	DTA map[string]uint64 `json:"dta,omitempty"`
	// Label: shift updates dropped because the control queue was full.
	Label map[string]uint64 `json:"label,omitempty"`
	// HTTP: connections the API server closed at once because every connection under a
	// cap was busy, by cap (total: http.max_connections; source:
	// http.max_connections_per_source).
	HTTP map[string]uint64 `json:"http,omitempty"`
}

// Drops collects the drop counters of every component now.
func (c *Collector) Drops() Drops {
	st := c.Receiver.Status()
	return c.drops(&st)
}

func (c *Collector) drops(st *ingest.Status) Drops {
	d := Drops{Ingest: map[string]uint64{}}
	for k, v := range st.IngestDrops.ByReason {
		d.Ingest[k] = v
	}
	d.Ingest["kernel"] = st.KernelDrops
	if len(st.ProcessorQueueDrops) > 0 {
		d.ProcessorQueues = st.ProcessorQueueDrops
	}
	names := map[string]bool{}
	for _, r := range c.Bus.Rings() {
		names[r.Consumer] = true
	}
	for _, n := range c.busConsumers { // before Start, and after Stop, they are not on the bus
		names[n] = true
	}
	if len(names) > 0 {
		d.EventRings = map[string]uint64{}
		for n := range names {
			d.EventRings[n] = c.Bus.Overflow(n)
		}
	}
	if c.Detector != nil && c.Detector.Log() != nil {
		ss := c.Detector.Log().StreamStats()
		d.EventStreams = map[string]uint64{"behind": ss.Dropped["behind"], "slow": ss.Dropped["slow"], "refused": ss.Refused}
	}
	if c.Export != nil {
		d.Export = map[string]uint64{}
		for _, s := range c.Export.Status().Sinks {
			for r, n := range s.Dropped {
				d.Export[s.Name+"."+r] = n
			}
		}
	}
	if c.records != nil {
		if d.Export == nil {
			d.Export = map[string]uint64{}
		}
		s := c.records.SinkStatus()
		for r, n := range s.Dropped {
			d.Export[s.Name+"."+r] = n
		}
	}
	if c.Kafka != nil {
		d.Kafka = map[string]uint64{}
		for kind, byReason := range c.Kafka.Counts().Dropped {
			for r, n := range byReason {
				if kind == "flow" || kind == "report" && r != "queue_full" {
					d.Kafka[kind+"."+r] = n
				}
			}
		}
	}
	if c.Redis != nil {
		d.Redis = map[string]uint64{}
		for kind, byReason := range c.Redis.Counts().Dropped {
			for r, n := range byReason {
				d.Redis[kind+"."+r] = n
			}
		}
	}
	if c.FlowCache != nil {
		fs := c.FlowCache.Stats()
		d.FlowCache = map[string]uint64{"rings": fs.Rings.Drops, "histogram_switch_overflow": fs.SwitchOverflow}
		if k := fs.Kernel; k != nil { // flowcache.kernel: updates the program could not apply
			d.FlowCache["kernel_lock_busy"] = k.LockBusy
		}
	}
	if c.Translator != nil {
		d.DTA = map[string]uint64{}
		for i, n := range dta.BadReasons {
			d.DTA[n] = c.Translator.Bad(i)
		}
	}
	if c.labelControl != nil {
		d.Label = map[string]uint64{"control_queue": c.labelControl.Drops.Load()}
	}
	if c.API != nil {
		d.HTTP = c.API.ConnStats().Refused
	}
	for _, m := range []map[string]uint64{d.Ingest, d.ProcessorQueues, d.EventRings, d.EventStreams, d.Export, d.Kafka, d.Redis, d.FlowCache, d.DTA, d.Label, d.HTTP} {
		for _, n := range m {
			d.Total += n
		}
	}
	return d
}

// FullStatus is the receive path's status with every component's drops.
func (c *Collector) FullStatus() Status {
	st := c.Receiver.Status()
	return Status{Status: st, Drops: c.drops(&st), HTTP: c.httpStats()}
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
		return Status{Status: st, Drops: c.drops(&st), HTTP: c.httpStats()}
	})
}
