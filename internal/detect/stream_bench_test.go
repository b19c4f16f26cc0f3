//go:build unix

package detect

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/benchclock"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/telemetry"
)

// BenchmarkStreams is the cost of detect.max_streams (1024) live event streams at a steady
// event rate: every event is drained into the log on its own (the log's goroutine wakes per
// bus wakeup, at worst per event), and clients on loopback read them all. An op is one
// event, and ends when every stream has delivered every event; cpu-us/event is the whole
// process's CPU time (the clients' included) per event, the figure that matters (the wall
// time per op is the pace, or more when the streams cannot keep it).
func BenchmarkStreams(b *testing.B) {
	for _, rate := range []int{200, 1000} {
		b.Run(fmt.Sprintf("streams=1024/rate=%d", rate), func(b *testing.B) { benchStreams(b, 1024, rate) })
	}
}

func benchStreams(b *testing.B, streams, rate int) {
	cfg := testConfig()
	cfg.EventLog, cfg.Ring, cfg.MaxStreams = 100, 1<<16, streams
	d := New(cfg, Deps{})
	srv := api.New("127.0.0.1:0", nil)
	d.RegisterAPI(srv)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	// Clients on loopback read the streams (dechunked) and count the events they get (each
	// ends in a blank line), so that the benchmark ends when every stream has written every
	// event.
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: streams}
	defer tr.CloseIdleConnections()
	got := make([]atomic.Int64, streams)
	for i := range streams {
		resp, err := (&http.Client{Transport: tr}).Get(ts.URL + "/api/v1/events/stream")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		go func() {
			buf := make([]byte, 32<<10)
			last := byte(0)
			for {
				n, err := resp.Body.Read(buf)
				for _, c := range buf[:n] {
					if c == '\n' && last == '\n' {
						got[i].Add(1)
					}
					last = c
				}
				if err != nil {
					return
				}
			}
		}()
	}
	l := d.Log()
	testutil.Eventually(b, 30*time.Second, fmt.Sprintf("%d streams open", streams), func() bool { return l.StreamStats().Open == int64(streams) })
	// A flow event of the kind detection raises most: a hop latency change.
	e := event.Event{Kind: event.KindChange, Scope: event.ScopeSwitch, Measurement: event.FlowHopLatency,
		Prev: 1200, Value: 5400, Threshold: 50}
	e.Key.Flow = telemetry.FlowKey{SrcPort: 40000, DstPort: 80, Proto: 17}
	e.Key.Switch = 3
	buf := make([]event.Event, 64)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, t0 := time.Duration(benchclock.Process()), time.Now()
	for i := range b.N {
		if wait := time.Until(t0.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait)
		}
		e.Time = t0.UnixNano() + int64(i)
		d.bus.Publish(&e)
		l.Drain(buf)
	}
	testutil.Eventually(b, time.Minute, fmt.Sprintf("every stream to deliver %d events", b.N), func() bool {
		for i := range got {
			if got[i].Load() < int64(1+b.N) { // the opening comment, then the events
				return false
			}
		}
		return true
	})
	cpu := time.Duration(benchclock.Process()) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/event")
	if st := l.StreamStats(); st.Open != int64(streams) || st.Dropped["behind"]+st.Dropped["slow"] != 0 {
		b.Fatalf("streams fell behind: %+v", st)
	}
}
