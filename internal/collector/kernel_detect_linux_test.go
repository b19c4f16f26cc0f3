package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/xdptest"
)

// byKey groups events by metric key, each key's in order, without their receive times.
func byKey(evs []event.Event) map[string][]string {
	m := map[string][]string{}
	for i := range evs {
		e := &evs[i]
		k := fmt.Sprintf("%s %+v", e.Measurement, e.Key)
		m[k] = append(m[k], fmt.Sprintf("%s %s prev=%d value=%d thr=%d dev=%d path=%v", e.Kind, e.Scope, e.Prev, e.Value, e.Threshold, e.DevTime, e.PathList()))
	}
	return m
}

// TestKernelDetect runs the collector with detect.kernel on an xdp report listener and a gen
// stream with changing values: every report is detected by the XDP program, and the events
// that reach the bus are those package detect raises on the same reports, key by key in
// order. With the flow cache on, the program lifts the detected reports too: the flow cache
// gets every one, the user-space detector none (it would raise every event twice).
func TestKernelDetect(t *testing.T) {
	for _, fc := range []bool{false, true} {
		t.Run(fmt.Sprintf("flowcache=%v", fc), func(t *testing.T) { testKernelDetect(t, fc) })
	}
}

func testKernelDetect(t *testing.T, flowCache bool) {
	v := xdptest.New(t)
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.FlowCache.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = flowCache, false, false
	cfg.Listeners = []ingest.Listener{{Format: "report", Mode: ingest.ModeXDP, Interface: v.Dev, Port: 32766, Sockets: 1, RcvBuf: 1 << 22}}
	cfg.Detect.Kernel = true
	cfg.Detect.Above = detect.Levels{"flow_latency": 12000, "queue_occupancy": 100, "tx_utilization": 80}
	c, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Bus.Subscribe("test", 1<<20)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	gc := gen.DefaultConfig()
	gc.Vary, gc.Flows, gc.Model = 0.05, 200, gen.ModelDraw
	const n = 3000
	bs, rs := genStream(t, gc, n)
	// Lifted reports go through the AF_XDP socket's ring, which a slow worker (the race
	// detector's) lets overflow: with the flow cache on, the stream is sent in steps that
	// the worker takes whole.
	step := len(bs)
	if flowCache {
		step = 100
	}
	for i := 0; i < len(bs); i += step {
		v.Send(t, "udp4", net.JoinHostPort(v.Host, "32766"), bs[i:min(i+step, len(bs))]...)
		if flowCache {
			testutil.Eventually(t, 5*time.Second, "the reports sent decoded", func() bool {
				return c.Receiver.Status().Listeners[0].ReportsDecoded >= uint64(min(i+step, len(bs)))
			})
		}
	}
	outcome := "kernel"
	if flowCache {
		outcome = "kernel_lifted"
	}
	waitFrames(t, c, outcome, n)

	ref := detect.New(cfg.Detect, detect.Deps{Workers: 1})
	rsub := ref.Bus().Subscribe("ref", 1<<20)
	for i := range rs {
		rs[i].RecvTime = time.Now().UnixNano() // received now, as the kernel's reports were
		ref.Process(0, &rs[i])
	}
	ref.Flush(0)
	want := poll(rsub)
	var got []event.Event
	testutil.Eventually(t, 3*time.Second, fmt.Sprintf("the %d events of package detect on the bus", len(want)), func() bool {
		got = append(got, poll(sub)...)
		return len(got) >= len(want)
	})
	if len(want) < 500 {
		t.Fatalf("the reference raised %d events: the stream does not exercise the rules", len(want))
	}
	wk, gk := byKey(want), byKey(got)
	for k, w := range wk {
		if !slices.Equal(w, gk[k]) {
			t.Errorf("%s:\npackage detect %q\nkernel         %q", k, w, gk[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d events on the bus, package detect raised %d", len(got), len(want))
	}
	c.Receiver.Settle()
	st := c.Detector.Stats()
	if st.Kernel == nil || st.Kernel.Reports != n || st.Reports != n || st.Values != ref.Stats().Values {
		t.Errorf("detector stats %+v (kernel %+v), want %d reports, all in the kernel, and %d values", st, st.Kernel, n, ref.Stats().Values)
	}
	if now := time.Now().UnixNano(); len(got) > 0 && (got[0].Time > now || got[0].Time < now-int64(time.Minute)) {
		t.Errorf("event time %d is not a receive time (now %d)", got[0].Time, now)
	}
	// The periodic push, the flow query and the table sizes read the kernel's tables.
	snap := func(d *detect.Detector, now int64) []string {
		var out []string
		d.Snapshot(now, func(e *event.Event) {
			out = append(out, fmt.Sprintf("%s %s %+v value=%d dev=%d path=%v", e.Kind, e.Measurement, e.Key, e.Value, e.DevTime, e.PathList()))
		})
		slices.Sort(out)
		return out
	}
	now := time.Now().UnixNano()
	if w, g := snap(ref, now), snap(c.Detector, now); !slices.Equal(w, g) || len(w) < 1000 {
		t.Errorf("periodic push: %d values, package detect %d", len(g), len(w))
	}
	rst := ref.Stats()
	if st := c.Detector.Stats(); st.Flows != rst.Flows || st.Keys != rst.Keys {
		t.Errorf("the kernel holds %d flows and %d switch keys, package detect %d and %d", st.Flows, st.Keys, rst.Flows, rst.Keys)
	}
	for i := 0; i < 20; i++ {
		k := rs[i*97%len(rs)].Flow
		w, ok1 := ref.Flow(k)
		g, ok2 := c.Detector.Flow(k)
		w.FirstSeen, w.LastSeen, g.FirstSeen, g.LastSeen = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		for _, l := range [][]detect.SwitchValue{w.Queues, w.Ports, w.Buffers, g.Queues, g.Ports, g.Buffers} {
			for j := range l {
				l[j].LastSeen = time.Time{}
			}
		}
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if !ok1 || !ok2 || string(wj) != string(gj) {
			t.Errorf("flow %+v: kernel %v %s\npackage detect %v %s", k, ok2, gj, ok1, wj)
		}
	}
	// Expiry forgets every key not updated for detect.expire.
	later := now + int64(time.Hour)
	if w, g := snap(ref, later), snap(c.Detector, later); !slices.Equal(w, g) {
		t.Errorf("expiry: %d values, package detect %d", len(g), len(w))
	}
	if st := c.Detector.Stats(); st.Flows != 0 || st.Keys != 0 || st.Expired != uint64(rst.Flows+rst.Keys) {
		t.Errorf("after expiry the kernel holds %d flows and %d keys (expired %d)", st.Flows, st.Keys, st.Expired)
	}
	// The stop summary says what the program did (cmd/intake's TestSummaryText prints it):
	// those reports are in no other counter.
	c.Stop(ctx)
	k := c.Summary().KernelDetect
	var lifted uint64
	if k != nil {
		for _, v := range k.Lifted {
			lifted += v
		}
	}
	if k == nil || k.Reports != n || lifted != 0 || k.RingFull != 0 || k.TableFull != 0 {
		t.Errorf("the stop summary's XDP detection: %+v, want %d reports, none went up unparsed, no event or update lost", k, n)
	}
	if flowCache {
		if fs := c.FlowCache.Stats(); fs.Reports != n {
			t.Errorf("the flow cache processed %d reports, want all %d", fs.Reports, n)
		}
	}
}

func poll(c *event.Consumer) []event.Event {
	var out []event.Event
	buf := make([]event.Event, 4096)
	for {
		k := c.Poll(buf)
		if k == 0 {
			return out
		}
		out = append(out, buf[:k]...)
	}
}

func TestKernelDetectNeedsXDPListener(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.Detect.Kernel = true
	_, err := New(cfg, Options{NoHTTP: true})
	if err == nil || err.Error() != "detect.kernel: true: needs a listener with format report and mode xdp (its XDP program detects)" {
		t.Errorf("error %v", err)
	}
}
