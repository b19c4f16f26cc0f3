package export_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/export"
	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/metrics"
	"github.com/intake-int/intake/telemetry"
)

// startRedis starts redis-server on port without persistence and waits for PING.
func startRedis(t *testing.T, port int) *server {
	t.Helper()
	bin := need(t, "redis-server", "redis-server")
	s := newServer(t, bin, []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, port)
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "redis-server ready", func() bool {
		c, err := export.DialRedis(redisAddr(port), "", 0, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		v, err := c.Do(time.Second, "PING")
		return err == nil && v == "PONG"
	})
	return s
}

func redisAddr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

func redisCfg(port int) export.Config {
	cfg := export.DefaultConfig()
	cfg.Redis.Address = redisAddr(port)
	cfg.BackoffMin, cfg.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	return cfg
}

func do(t *testing.T, c *export.RedisConn, args ...string) any {
	t.Helper()
	v, err := c.Do(5*time.Second, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// entries reads a stream back as its entries' field lists.
func entries(t *testing.T, c *export.RedisConn, stream string) [][]string {
	t.Helper()
	var out [][]string
	for _, e := range do(t, c, "XRANGE", stream, "-", "+").([]any) {
		var fs []string
		for _, f := range e.([]any)[1].([]any) {
			fs = append(fs, f.(string))
		}
		out = append(out, fs)
	}
	return out
}

func testFlow() telemetry.FlowKey {
	var k telemetry.FlowKey
	k.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	k.SrcPort, k.DstPort, k.Proto = 5000, 80, 17
	return k
}

func testRecord() *flowcache.Record {
	return &flowcache.Record{Flow: testFlow(), Reason: flowcache.ReasonCollision, Packets: 3, First: 100, Last: 300,
		LatLatest: 67, LatSum: 195, LatCount: 3,
		Hops: []flowcache.HopRecord{
			{NodeID: 1, Latest: [3]uint64{15, 6, 1}, Count: [3]uint64{3, 2, 3}, Sum: [3]uint64{36, 11, 15}},
			{NodeID: 2, Latest: [3]uint64{22, 0, 0}, Count: [3]uint64{3, 0, 0}, Sum: [3]uint64{63, 0, 0}},
		}}
}

func TestRedisExact(t *testing.T) {
	port := freePort(t)
	startRedis(t, port)
	reg := metrics.NewRegistry()
	s := export.NewRedis(redisCfg(port), reg)
	bus := &event.Bus{}
	if err := s.Start(bus, 64); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(t.Context())

	k := testFlow()
	hop := event.Event{Time: 1000, Kind: event.KindChange, Scope: event.ScopeSwitch, Measurement: event.FlowHopLatency,
		Key: event.Key{Flow: k, Switch: 7}, Prev: 10, Value: 80, Threshold: 50}
	queue := event.Event{Time: 2000, Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
		Key: event.Key{Switch: 3, Queue: 1}, Prev: 5, Value: 300, Threshold: 200}
	e2e := event.Event{Time: 3000, Kind: event.KindChange, Scope: event.ScopeE2E, Measurement: event.FlowLatency,
		Key: event.Key{Flow: k}, Prev: 100, Value: 200, Threshold: 50}
	ignored := []event.Event{
		{Time: 1, Kind: event.KindNewKey, Measurement: event.FlowHopLatency},  // not T or C
		{Time: 2, Kind: event.KindChange, Measurement: event.Drops},           // not a cache metric
		{Time: 3, Kind: event.KindPeriodic, Measurement: event.TxUtilization}, // not an event
	}
	bus.Publish(&hop)
	for i := range ignored {
		bus.Publish(&ignored[i])
	}
	bus.Publish(&queue)
	waitFor(t, 10*time.Second, "the bus's 2 events sent", func() bool { return s.Counts().Sent["event"] == 2 })
	s.OfferEvent(&e2e)
	s.OfferRecord(testRecord())
	live := testRecord()
	live.Reason = flowcache.ReasonNone
	s.OfferLatest(live)

	waitFor(t, 10*time.Second, "3 events, 1 flow, 1 hash sent", func() bool {
		c := s.Counts()
		return c.Sent["event"] == 3 && c.Sent["flow"] == 1 && c.Sent["hash"] == 1
	})
	c, err := export.DialRedis(redisAddr(port), "", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantEvents := [][]string{
		{"time", "1000", "kind", "change", "scope", "switch", "measurement", "flow_hop_latency", "src", "10.0.0.1", "dst", "10.0.0.2",
			"sport", "5000", "dport", "80", "proto", "17", "switch_id", "7", "value", "80", "prev", "10", "threshold", "50"},
		{"time", "2000", "kind", "above", "scope", "switch", "measurement", "queue_occupancy", "switch_id", "3", "queue_id", "1",
			"value", "300", "prev", "5", "threshold", "200"},
		{"time", "3000", "kind", "change", "scope", "e2e", "measurement", "flow_latency", "src", "10.0.0.1", "dst", "10.0.0.2",
			"sport", "5000", "dport", "80", "proto", "17", "value", "200", "prev", "100", "threshold", "50"},
	}
	if got := entries(t, c, "intake:events"); !reflect.DeepEqual(got, wantEvents) {
		t.Errorf("events stream\n got %q\nwant %q", got, wantEvents)
	}
	rec := []string{"src", "10.0.0.1", "dst", "10.0.0.2", "sport", "5000", "dport", "80", "proto", "17"}
	tailFields := []string{"packets", "3", "first_ns", "100", "last_ns", "300", "latency_latest", "67", "latency_mean", "65",
		"path", "1:2", "hops", "2",
		"h1_node_id", "1", "h1_hop_latency_latest", "15", "h1_hop_latency_mean", "12", "h1_queue_occupancy_latest", "6",
		"h1_queue_occupancy_mean", "5.5", "h1_tx_util_latest", "1", "h1_tx_util_mean", "5",
		"h2_node_id", "2", "h2_hop_latency_latest", "22", "h2_hop_latency_mean", "21"}
	wantFlow := append(append(append([]string{}, rec...), "reason", "collision"), tailFields...)
	if got := entries(t, c, "intake:flows"); !reflect.DeepEqual(got, [][]string{wantFlow}) {
		t.Errorf("flows stream\n got %q\nwant %q", got, [][]string{wantFlow})
	}
	key := "intake:flow:10.0.0.1,10.0.0.2,5000,80,17"
	h := do(t, c, "HGETALL", key).([]any)
	gotHash := map[string]string{}
	for i := 0; i+1 < len(h); i += 2 {
		gotHash[h[i].(string)] = h[i+1].(string)
	}
	wantHash := map[string]string{}
	all := append(append([]string{}, rec...), tailFields...)
	for i := 0; i+1 < len(all); i += 2 {
		wantHash[all[i]] = all[i+1]
	}
	if !reflect.DeepEqual(gotHash, wantHash) {
		t.Errorf("hash\n got %v\nwant %v", gotHash, wantHash)
	}
	if ttl := do(t, c, "TTL", key).(int64); ttl < 295 || ttl > 300 {
		t.Errorf("TTL %d, want 300 (5m) less the test's seconds", ttl)
	}
	if n := do(t, c, "XLEN", "intake:events").(int64); n != 3 {
		t.Errorf("XLEN %d", n)
	}
	cnt := s.Counts()
	for kind, m := range cnt.Dropped {
		for r, n := range m {
			if n != 0 {
				t.Errorf("dropped %s %s: %d", kind, r, n)
			}
		}
	}
	if cnt.Reconnects != 0 || !cnt.Connected {
		t.Errorf("counts %+v", cnt)
	}
}

func TestRedisMaxLen(t *testing.T) {
	port := freePort(t)
	startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.MaxLen = 10
	s := export.NewRedis(cfg, nil)
	s.Start(nil, 0)
	defer s.Stop(t.Context())
	for i := 0; i < 1000; i++ {
		r := testRecord()
		r.Packets = uint64(i)
		s.OfferRecord(r)
	}
	waitFor(t, 10*time.Second, "1000 records sent", func() bool { return s.Counts().Sent["flow"] == 1000 })
	c, _ := export.DialRedis(redisAddr(port), "", 0, time.Second)
	defer c.Close()
	// "~" lets Redis keep up to one macro node (100 entries by default) more than MAXLEN.
	if n := do(t, c, "XLEN", "intake:flows").(int64); n < 10 || n > 110 {
		t.Errorf("XLEN %d after 1000 XADD MAXLEN ~ 10", n)
	}
}

// TestRedisRestart kills redis mid-run: offers never block, what could not be sent is
// counted as dropped, and the sink reconnects and resumes.
func TestRedisRestart(t *testing.T) {
	port := freePort(t)
	srv := startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.Queue = 100
	reg := metrics.NewRegistry()
	s := export.NewRedis(cfg, reg)
	s.Start(nil, 0)
	defer s.Stop(t.Context())
	ev := func(i int) *event.Event {
		return &event.Event{Time: int64(i), Kind: event.KindAbove, Measurement: event.QueueOccupancy, Key: event.Key{Switch: 1}, Value: uint64(i)}
	}
	for i := 0; i < 10; i++ {
		s.OfferEvent(ev(i))
	}
	waitFor(t, 10*time.Second, "10 events sent", func() bool { return s.Counts().Sent["event"] == 10 })

	srv.kill()
	start := time.Now()
	for i := 10; i < 5010; i++ {
		s.OfferEvent(ev(i))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("5000 offers with redis down took %s", d)
	}
	waitFor(t, 10*time.Second, "disconnected", func() bool { return !s.Counts().Connected })

	startRedis(t, port)
	waitFor(t, 20*time.Second, "queue drained after the restart", func() bool {
		c := s.Counts()
		return c.Connected && c.Queued == 0 && c.Sent["event"]+c.Dropped["event"]["queue_full"]+c.Dropped["event"]["conn"] == 5010
	})
	// New events after the restart go through.
	for i := 5010; i < 5020; i++ {
		s.OfferEvent(ev(i))
	}
	waitFor(t, 10*time.Second, "all 5020 accounted", func() bool {
		c := s.Counts()
		return c.Sent["event"]+c.Dropped["event"]["queue_full"]+c.Dropped["event"]["conn"] == 5020 && c.Queued == 0
	})
	cnt := s.Counts()
	c, err := export.DialRedis(redisAddr(port), "", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The restarted server has nothing persisted: it holds exactly what was sent after the
	// restart.
	n := do(t, c, "XLEN", "intake:events").(int64)
	if uint64(n) != cnt.Sent["event"]-10 {
		t.Errorf("stream holds %d, sent after restart %d", n, cnt.Sent["event"]-10)
	}
	if cnt.Dropped["event"]["queue_full"] < uint64(5000-100-cfg.Redis.Batch) || cnt.Sent["event"] < 10+10 || cnt.Reconnects < 1 {
		t.Errorf("counts %+v", cnt)
	}
	last := entries(t, c, "intake:events")
	if len(last) == 0 || last[len(last)-1][1] != "5019" {
		t.Errorf("last entry %q", last[len(last)-1:])
	}
	t.Logf("sent %d, dropped queue_full %d, conn %d, reconnects %d", cnt.Sent["event"], cnt.Dropped["event"]["queue_full"], cnt.Dropped["event"]["conn"], cnt.Reconnects)
}

// TestRedisStartAgain stops the sink and starts it again, as a collector restart does.
func TestRedisStartAgain(t *testing.T) {
	port := freePort(t)
	startRedis(t, port)
	s := export.NewRedis(redisCfg(port), nil)
	bus := &event.Bus{}
	for round := 1; round <= 2; round++ {
		if err := s.Start(bus, 16); err != nil {
			t.Fatal(err)
		}
		bus.Publish(&event.Event{Time: int64(round), Kind: event.KindAbove, Measurement: event.TxUtilization})
		waitFor(t, 10*time.Second, "the event sent", func() bool { return s.Counts().Sent["event"] == uint64(round) })
		if err := s.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(bus.Consumers()); n != 0 {
			t.Fatalf("round %d: %d bus consumers left after Stop", round, n)
		}
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestRedisStalled stops redis-server (SIGSTOP) mid-run: offers return at once, the stalled
// batch times out and is counted, and everything is accounted for after SIGCONT.
func TestRedisStalled(t *testing.T) {
	port := freePort(t)
	srv := startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.Queue, cfg.Redis.Timeout = 200, 300*time.Millisecond
	s := export.NewRedis(cfg, nil)
	s.Start(nil, 0)
	defer s.Stop(t.Context())
	ev := &event.Event{Kind: event.KindChange, Measurement: event.FlowLatency}
	s.OfferEvent(ev)
	waitFor(t, 10*time.Second, "first event sent", func() bool { return s.Counts().Sent["event"] == 1 })

	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 5000; i++ {
		ev.Time = int64(i)
		s.OfferEvent(ev)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("5000 offers to a stalled redis took %s", d)
	}
	waitFor(t, 10*time.Second, "the stalled batch timed out", func() bool { return s.Counts().Dropped["event"]["conn"] > 0 })
	srv.cmd.Process.Signal(syscall.SIGCONT)
	total := func() uint64 {
		c := s.Counts()
		return c.Sent["event"] + c.Dropped["event"]["queue_full"] + c.Dropped["event"]["conn"]
	}
	waitFor(t, 20*time.Second, "all 5001 accounted", func() bool { return total() == 5001 && s.Counts().Queued == 0 })
	c := s.Counts()
	if c.Dropped["event"]["queue_full"] == 0 || c.Sent["event"] < 2 {
		t.Errorf("counts %+v", c)
	}
	t.Logf("stalled: sent %d, dropped queue_full %d, conn %d, reconnects %d", c.Sent["event"], c.Dropped["event"]["queue_full"], c.Dropped["event"]["conn"], c.Reconnects)
}

// TestInfluxDBLastError: an influxd with authentication on answers intake's writes (no
// credentials) 401; the sink counts the points as rejected and shows the server's answer
// and its time as last_error. A sink without errors shows neither key.
func TestInfluxDBLastError(t *testing.T) {
	bin := need(t, "influxd", "influxdb")
	dir := t.TempDir()
	port, rpc := freePort(t), freePort(t)
	conf := fmt.Sprintf("reporting-disabled = true\nbind-address = \"127.0.0.1:%d\"\n[meta]\n  dir = \"%s/meta\"\n"+
		"[data]\n  dir = \"%s/data\"\n  wal-dir = \"%s/wal\"\n  query-log-enabled = false\n"+
		"[http]\n  bind-address = \"127.0.0.1:%d\"\n  log-enabled = false\n  auth-enabled = true\n"+
		"[monitor]\n  store-enabled = false\n[logging]\n  level = \"error\"\n", rpc, dir, dir, dir, port)
	cf := filepath.Join(dir, "influxdb.conf")
	os.WriteFile(cf, []byte(conf), 0o644)
	srv := newServer(t, bin, []string{"-config", cf}, port)
	srv.start(t, "/ping")
	// With authentication on, the first thing influxd takes is its admin user.
	resp, err := http.PostForm(srv.url+"/query", url.Values{"q": {"CREATE USER admin WITH PASSWORD 'pw' WITH ALL PRIVILEGES"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CREATE USER: %s %s", resp.Status, b)
	}

	cfg := exportConfig()
	cfg.InfluxDB.URL = srv.url
	in := export.NewInfluxDB(cfg, nil)
	if st, _ := json.Marshal(in.SinkStatus()); strings.Contains(string(st), "last_error") {
		t.Errorf("a sink without errors shows a last error: %s", st)
	}
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	in.Offer(&event.Event{Time: time.Now().UnixNano(), Kind: event.KindChange, Scope: event.ScopeE2E,
		Measurement: event.FlowLatency, Key: event.Key{Flow: testFlow()}, Value: 200, Prev: 100, Threshold: 50})
	waitFor(t, 10*time.Second, "the points rejected", func() bool { return in.SinkStatus().Dropped["rejected"] == 2 })
	in.Stop(t.Context())
	st := in.SinkStatus()
	if !strings.Contains(st.LastError, "401 Unauthorized") || !strings.Contains(st.LastError, `"error":"unable to parse authentication credentials"`) {
		t.Errorf("last_error %q, want influxd's 401 and its body", st.LastError)
	}
	if at, err := time.Parse(time.RFC3339, st.LastErrorTime); err != nil || at.Before(start) || at.After(time.Now()) {
		t.Errorf("last_error_time %q: %v", st.LastErrorTime, err)
	}
	if st.Sent != 0 || st.Retried != 0 {
		t.Errorf("status %+v", st)
	}
	js, _ := json.Marshal(st)
	t.Logf("status: %s", js)
}
