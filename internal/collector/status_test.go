package collector

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil"
)

func labelExport() []byte {
	b := make([]byte, 2+32)
	b[1] = 1
	b[2], b[3], b[4] = 3, 1, 2
	return b
}

func sendFrom(t *testing.T, local, to string, bs ...[]byte) {
	t.Helper()
	la, _ := net.ResolveUDPAddr("udp", local)
	ra, _ := net.ResolveUDPAddr("udp", to)
	conn, err := net.DialUDP("udp", la, ra)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, b := range bs {
		conn.Write(b)
	}
}

// TestStatusDrops: GET /api/v1/status carries every component's drops in one object, and
// INT-label exports from sources outside the listener's allow list reach neither the label
// database nor its feedback. Before, the drops were spread over three endpoints and every
// source was acted on.
func TestStatusDrops(t *testing.T) {
	cfg := testConfig(t)
	cfg.Listeners = []ingest.Listener{
		{Name: "tr", Format: "report", Address: "127.0.0.1", Sockets: 1, MaxDatagram: 512},
		{Name: "label", Format: "int-label", Address: "127.0.0.1", Sockets: 1, Allow: []string{"127.0.0.2/32"}},
	}
	c, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	x := labelExport()
	sendFrom(t, "127.0.0.1:0", c.Receiver.ListenerAddr(1), x, x, x, x, x) // forged
	sendFrom(t, "127.0.0.2:0", c.Receiver.ListenerAddr(1), x)             // the switch
	sendFrom(t, "127.0.0.1:0", c.Receiver.ListenerAddr(0), make([]byte, 600))
	var st Status
	testutil.Eventually(t, 5*time.Second, "the 7 datagrams in the status", func() bool {
		resp, err := http.Get("http://" + c.API.Addr() + "/api/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		st = Status{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if st.PacketsReceived != 7 {
			return false
		}
		if !strings.Contains(string(b), "\n  \"drops\": {\n    \"total\": 6,\n    \"ingest\": {\n") {
			t.Errorf("status:\n%s", b)
		}
		return true
	})
	d := st.Drops.Sections
	if ing := d["ingest"]; st.Drops.Total != 6 || ing["not_allowed"] != 5 || ing["oversize"] != 1 || ing["kernel"] != 0 || len(ing) != 7 {
		t.Errorf("drops %+v", st.Drops)
	}
	for _, k := range []string{"export", "log"} {
		if _, ok := d["event_rings"][k]; !ok {
			t.Errorf("event_rings has no %s: %v", k, d["event_rings"])
		}
	}
	if len(d["event_streams"]) != 3 || len(d["flowcache"]) != 2 || len(d["dta"]) == 0 || d["export"] == nil {
		t.Errorf("drops %+v", d)
	}
	if n := c.Label.Counters().Items; n != 1 {
		t.Errorf("the label database installed %d items, want 1 (the allowed switch's)", n)
	}
	if full := c.FullStatus(); full.Drops.Total != 6 {
		t.Errorf("FullStatus drops %+v", full.Drops)
	}
}

// TestStopWithStreams: Stop returns within a second with event streams open, without an
// error. Before, the server waited for the streams until Stop's deadline and failed.
func TestStopWithStreams(t *testing.T) {
	c, err := New(testConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := http.Get("http://" + c.API.Addr() + "/api/v1/events/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if l, _ := bufio.NewReader(resp.Body).ReadString('\n'); l != ": intake event stream\n" {
			t.Fatalf("stream: %q", l)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stop took %s with 3 streams open", d)
	}
}

// TestStatusHTTP: GET /api/v1/status has the API server's connections (`http`: what it
// listens on, open, the caps, refused and evicted) and the refused ones under drops.http.
// Here an event stream holds the one connection 127.0.0.1 may have, and the next from
// 127.0.0.1 is refused.
func TestStatusHTTP(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTP.MaxConnectionsPerSource = 1
	c, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	stream, err := net.Dial("tcp", c.API.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	io.WriteString(stream, "GET /api/v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if l, err := bufio.NewReader(stream).ReadString('\n'); l != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("stream: %q %v", l, err)
	}
	refused, err := net.Dial("tcp", c.API.Addr())
	if err != nil {
		t.Fatal(err)
	}
	refused.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := refused.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("second connection from 127.0.0.1: %d %v, want closed", n, err)
	}
	refused.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := hc.Get("http://" + c.API.Addr() + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	h := st.HTTP
	if h == nil || h.Listening != c.API.Addr() || h.Open != 2 || h.Max != 1024 || h.MaxPerSource != 1 ||
		h.Refused["source"] != 1 || h.Refused["total"] != 0 || h.Evicted != 0 {
		t.Errorf("http %+v", h)
	}
	if st.Drops.Sections["http"]["source"] != 1 || st.Drops.Total != 1 {
		t.Errorf("drops %+v", st.Drops)
	}
}

// TestDropsJSON: drops are written total first, then the sections in the pipeline's order
// and any other sorted, and read back the same (cmd/intake's TestDropsText: the text lists
// every section, kafka included, with what it lost).
func TestDropsJSON(t *testing.T) {
	d := Drops{Total: 6, Sections: map[string]map[string]uint64{
		"zeta": {"x": 1}, "http": {"total": 0}, "kafka": {"flow.queue_full": 2}, "ingest": {"kernel": 0, "oversize": 3}}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"total":6,"ingest":{"kernel":0,"oversize":3},"kafka":{"flow.queue_full":2},"http":{"total":0},"zeta":{"x":1}}`
	if string(b) != want {
		t.Fatalf("JSON\n%s\nwant\n%s", b, want)
	}
	var back Drops
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Total != 6 || len(back.Sections) != 4 || back.Sections["kafka"]["flow.queue_full"] != 2 {
		t.Fatalf("read back %+v", back)
	}
	if err := json.Unmarshal([]byte(`{"total":1,"ingest":3}`), &back); err == nil || !strings.Contains(err.Error(), "drops.ingest") {
		t.Fatalf("a malformed section: %v", err)
	}
}
