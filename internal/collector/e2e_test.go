//go:build linux

package collector_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"go.uber.org/goleak"
)

// TestEndToEnd is the receive path's end-to-end test: intake gen's stream into the collector serve
// builds (every default processor, the HTTP API) over loopback, below capacity, with
// malformed datagrams interleaved. Every count is exact: datagrams, reports, decode errors by
// reason, each flow's reports and path as the detector's flow API gives them; and stopping
// leaves no goroutine behind (goleak: none started since the test began).
func TestEndToEnd(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := config.Default()
	cfg.Listeners = []ingest.Listener{{Format: "report", Address: "127.0.0.1", Sockets: 2}}
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.DTA.DataDir = t.TempDir()
	cfg.FillDefaults()
	c, err := collector.New(cfg, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	coll := c.Receiver
	base := "http://" + c.API.Addr()

	gcfg := gen.DefaultConfig()
	gcfg.Flows, gcfg.Seed = 30, 7
	g, err := gen.New(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	snd, err := gen.NewSender(g, gen.SendConfig{To: coll.ListenerAddr(0), Sockets: 2, Rate: 30000, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	done := make(chan error, 1)
	go func() {
		st, err := snd.Run(context.Background())
		if err == nil && (st.Datagrams != n || st.SendErrors != 0) {
			err = fmt.Errorf("sent %d datagrams, %d send errors", st.Datagrams, st.SendErrors)
		}
		done <- err
	}()

	// Malformed datagrams while the stream runs: 10 cut inside the TR v2.0 group header, 5
	// with report version 7.
	bad, err := net.Dial("udp", coll.ListenerAddr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	for i := 0; i < 15; i++ {
		d := []byte{0x20, 0x00, 0x00, 0x00, 0x00, 0x01} // version 2, 6 of the 12 header bytes
		if i >= 10 {
			d = []byte{0x70, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		}
		if _, err := bad.Write(d); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	coll.Settle()
	truth := g.Truth(n)

	var st struct {
		Packets uint64 `json:"packets_received"`
		Reports uint64 `json:"reports_decoded"`
		Errors  struct {
			Total    uint64            `json:"total"`
			ByReason map[string]uint64 `json:"by_reason"`
		} `json:"decode_errors"`
		Kernel uint64 `json:"kernel_drops"`
	}
	collectortest.GetJSON(t, base+"/api/v1/status", &st)
	if st.Packets != n+15 || st.Reports != truth.Reports || st.Kernel != 0 {
		t.Errorf("status: %d packets, %d reports, %d kernel drops; want %d, %d, 0", st.Packets, st.Reports, st.Kernel, n+15, truth.Reports)
	}
	if st.Errors.Total != 15 || st.Errors.ByReason["truncated"] != 10 || st.Errors.ByReason["unknown_version"] != 5 {
		t.Errorf("decode errors %+v: want 10 truncated and 5 unknown_version", st.Errors)
	}
	for i := 0; i < gcfg.Flows; i++ {
		k, path := g.Flow(i)
		q := url.Values{"src": {k.SrcAddr().String()}, "dst": {k.DstAddr().String()},
			"sport": {fmt.Sprint(k.SrcPort)}, "dport": {fmt.Sprint(k.DstPort)}, "proto": {fmt.Sprint(k.Proto)}}
		var fs struct {
			Path    []uint32 `json:"path"`
			Reports uint64   `json:"reports"`
		}
		collectortest.GetJSON(t, base+"/api/v1/flow?"+q.Encode(), &fs)
		if fs.Reports != truth.ByFlow[i] || !slices.Equal(fs.Path, path) {
			t.Errorf("flow %d: %d reports over path %v; want %d over %v", i, fs.Reports, fs.Path, truth.ByFlow[i], path)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Error(err)
	}
	http.DefaultClient.CloseIdleConnections()
	// goleak retries until the goroutines are gone, and names the ones left behind.
	goleak.VerifyNone(t, before)
}
