//go:build linux

package collector_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/wire"
)

// Detected events → an Append list (DTA Table 2), end to end: TR reports over loopback into
// serve's pipeline (collector.New: the detector publishes, the DTA consumer appends), then
// the list read through the API and through the store directory (as `intake query list`
// reads it with --api and --store), entry by entry.
func TestDTAEventList(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(fmt.Appendf(nil, `listeners:
  - {format: report, address: 127.0.0.1, port: 0, sockets: 1}
http: {address: '127.0.0.1:0'}
export: {period: 0s}
dta:
  data_dir: %s
  append: {value_bytes: 32}
  int: {event_list: 5}
`, dir))
	if err != nil {
		t.Fatal(err)
	}
	c, err := collector.New(cfg, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, coll := c.API, c.Receiver
	start := time.Now().UnixNano()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := c.Stop(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	defer stop()
	send := collectortest.ReportSender(t, coll.ListenerAddr(0), wire.DefaultConfig())
	poll := func(src dtaSource, cursor, n int) map[string]any {
		t.Helper()
		var m map[string]any
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("%v: list 5 read to cursor %d", src, cursor+n), func() bool {
			m = dtaQuery(t, src, "/api/v1/dta/list/5", url.Values{"cursor": {fmt.Sprint(cursor)}, "limit": {"5"}})
			return m["next_cursor"] == float64(cursor+n)
		})
		return m
	}

	// The entries collectortest.TRReport raises (detect_test.go lists the same 12 events):
	// kind, scope, measurement, 8-bit id, switch, 32-bit id (port or queue), flow, value.
	var kb [40]byte
	r := collectortest.TRReport()
	flow := uint32(dta.Hash64(dta.DefaultSeed, dta.FlowKeyBytes(&kb, &r.Flow)))
	type ent struct {
		kind         event.Kind
		scope        event.Scope
		meas         event.Measurement
		sub          uint8
		sw, id, flow uint32
		value        uint64
	}
	nk, ch := event.KindNewKey, event.KindChange
	sws, e2e := event.ScopeSwitch, event.ScopeE2E
	want := []ent{
		{nk, sws, event.SeqGaps, 1, 5, 0, 0, 0},
		{nk, sws, event.QueueOccupancy, 0, 3, 3, 0, 40},
		{nk, sws, event.TxUtilization, 0, 3, 2, 0, 55},
		{nk, sws, event.QueueOccupancy, 0, 2, 3, 0, 40},
		{nk, sws, event.TxUtilization, 0, 2, 2, 0, 55},
		{nk, sws, event.QueueOccupancy, 0, 1, 3, 0, 40},
		{nk, sws, event.TxUtilization, 0, 1, 2, 0, 55},
		{nk, e2e, event.FlowPath, 0, 0, 0, flow, event.PathHash([]uint32{1, 2, 3})},
		{nk, e2e, event.FlowLatency, 0, 0, 0, flow, 3000},
		{nk, sws, event.FlowHopLatency, 0, 1, 0, flow, 1000},
		{nk, sws, event.FlowHopLatency, 0, 2, 0, flow, 1000},
		{nk, sws, event.FlowHopLatency, 0, 3, 0, flow, 1000},
		// report 2: sequence 3 (one missing), switch 2's hop latency 1100
		{ch, sws, event.SeqGaps, 1, 5, 0, 0, 1},
		{ch, e2e, event.FlowLatency, 0, 0, 0, flow, 3100},
		{ch, sws, event.FlowHopLatency, 0, 2, 0, flow, 1100},
	}
	check := func(src dtaSource, m map[string]any, cursor, n int) {
		t.Helper()
		es, _ := m["entries"].([]any)
		if len(es) != n || m["next_cursor"] != float64(cursor+n) || m["overwritten"] != 0.0 || m["list"] != 5.0 {
			t.Fatalf("%v cursor %d: %v", src, cursor, m)
		}
		for i, e := range es {
			b, err := hex.DecodeString(e.(string)[2:])
			if err != nil || len(b) != dta.EventBytes {
				t.Fatalf("entry %d: %v", cursor+i, e)
			}
			w := want[cursor+i]
			var wb [dta.EventBytes]byte
			wb[0], wb[1], wb[2], wb[3] = byte(w.kind), byte(w.scope), byte(w.meas), w.sub
			binary.BigEndian.PutUint32(wb[4:], w.sw)
			binary.BigEndian.PutUint32(wb[8:], w.id)
			binary.BigEndian.PutUint32(wb[12:], w.flow)
			binary.BigEndian.PutUint64(wb[16:], w.value)
			copy(wb[24:], b[24:]) // the receive time, checked below
			if string(b) != string(wb[:]) {
				t.Errorf("%v entry %d: % x\nwant % x", src, cursor+i, b, wb)
			}
			if ts := int64(binary.BigEndian.Uint64(b[24:])); ts < start || ts > time.Now().UnixNano() {
				t.Errorf("%v entry %d: time %d outside the test", src, cursor+i, ts)
			}
		}
	}
	viaAPI := dtaSource{addr: srv.Addr()}
	send(r)
	for c := 0; c < 12; c += 5 {
		check(viaAPI, poll(viaAPI, c, min(5, 12-c)), c, min(5, 12-c))
	}
	r.Seq = 3
	r.Hops[1].HopLatency = 1100
	send(r)
	check(viaAPI, poll(viaAPI, 12, 3), 12, 3)
	tr := c.Translator
	if tr == nil {
		t.Fatal("no dta processor in serve's pipeline")
	}
	if n := tr.Written(dta.WINTEvent); n != uint64(len(want)) {
		t.Errorf("int-event writes %d, want %d", n, len(want))
	}
	// The drop and queue lists are untouched (the reports carry no D or Q flag).
	if h0, h1 := tr.St.AP.Head(0), tr.St.AP.Head(1); h0 != 0 || h1 != 0 {
		t.Errorf("drop and queue lists: heads %d, %d", h0, h1)
	}
	stop()
	for c := 0; c < len(want); c += 5 {
		n := min(5, len(want)-c)
		check(dtaSource{store: dir}, poll(dtaSource{store: dir}, c, n), c, n)
	}
}
