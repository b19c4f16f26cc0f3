package ingest

import (
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// A feed is a source of reports that were decoded elsewhere: a processor of a consumer group
// (package group, docs/scale-out.md) reads the reports an inlet decoded from Kafka and hands
// them to the same processors a listener's worker would. A feed is a listener of mode feed
// with one worker; its owner drives the worker from its own goroutine (Feed), so the feed's
// records, reports and decode errors appear in status and metrics as a listener's.

// ModeFeed is the mode of the listeners made from Config.Feeds.
const ModeFeed = "feed"

// feedListener is the feed named name as a listener of mode feed.
func feedListener(name string) Listener {
	l := Listener{Name: name, Format: "report", Mode: ModeFeed, Sockets: 1}
	l.FillDefaults()
	return l
}

// Feed hands reports decoded elsewhere to the processors, as one worker. Its methods must be
// called from one goroutine at a time (the feed's owner), between the Receiver's New and
// the processors' Stop.
type Feed struct{ w *worker }

// Feed returns the feed named name (Config.Feeds), or nil when there is none.
func (rcv *Receiver) Feed(name string) *Feed {
	for _, l := range rcv.listeners {
		if l.cfg.Mode == ModeFeed && l.cfg.Name == name {
			return &Feed{w: l.workers[0]}
		}
	}
	return nil
}

// SetSource names where the feed's records come from in status (its listener's address).
func (f *Feed) SetSource(s string) {
	l := f.w.l
	l.mu.Lock()
	l.boundAddr = s
	l.mu.Unlock()
}

// Worker is the feed's worker number: the worker argument its processors are called with.
func (f *Feed) Worker() int { return f.w.id }

// Slot is the report the next Hand hands over: decode a record into it. It is overwritten
// by the next Slot after Hand.
func (f *Feed) Slot() *telemetry.Report { return f.w.slot() }

// Hand counts a record of n bytes, decoded into Slot, as a datagram and a report, and hands
// the report to the processors. The report keeps its own RecvTime and Kernel.
func (f *Feed) Hand(n int) {
	w := f.w
	w.local[cPackets]++
	w.local[cBytes] += uint64(n)
	w.hand(w.slot())
}

// Bad counts a record of n bytes that did not decode as a datagram with a decode error of
// reason BadValue.
func (f *Feed) Bad(n int) {
	w := f.w
	w.local[cPackets]++
	w.local[cBytes] += uint64(n)
	w.local[cErrors]++
	w.local[cReason0+int(wire.BadValue)]++
}

// EndBatch ends a batch of records: the processors get the batch's last reports and flush,
// and the feed's counters are published.
func (f *Feed) EndBatch() { f.w.endBatch() }
