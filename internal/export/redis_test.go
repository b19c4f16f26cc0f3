//go:build unix

package export_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/metrics"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// startRedis starts redis-server on port without persistence and waits for PING.
func startRedis(t *testing.T, port int) *server {
	t.Helper()
	return startRedisWith(t, port, redisPong(port))
}

// redisPong is a readiness check: the server on port answers PING.
func redisPong(port int) func() bool {
	return func() bool {
		c, err := testutil.DialRedis(redisAddr(port), "", 0, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		v, err := c.Do(time.Second, "PING")
		return err == nil && v == "PONG"
	}
}

// startRedisWith starts redis-server on port (loopback, no persistence) with the extra
// arguments args (later ones override) and waits until ready reports true.
func startRedisWith(t *testing.T, port int, ready func() bool, args ...string) *server {
	t.Helper()
	bin := need(t, "redis-server", "redis-server")
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)
	s := newServer(t, bin, all, port)
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "redis-server ready", ready)
	return s
}

func redisAddr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

func redisCfg(port int) config.Export {
	cfg := config.DefaultExport()
	cfg.Redis.Address = redisAddr(port)
	cfg.BackoffMin, cfg.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	return cfg
}

func do(t *testing.T, c *testutil.RedisConn, args ...string) any {
	t.Helper()
	v, err := c.Do(5*time.Second, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// entries reads a stream back as its entries' field lists.
func entries(t *testing.T, c *testutil.RedisConn, stream string) [][]string {
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

func testRecord() *record.Record {
	return &record.Record{Flow: testFlow(), Reason: record.ReasonCollision, Packets: 3, First: 100, Last: 300,
		LatLatest: 67, LatSum: 195, LatCount: 3,
		Hops: []record.HopRecord{
			{NodeID: 1, Latest: [3]uint64{15, 6, 1}, Count: [3]uint64{3, 2, 3}, Sum: [3]uint64{36, 11, 15}},
			{NodeID: 2, Latest: [3]uint64{22, 0, 0}, Count: [3]uint64{3, 0, 0}, Sum: [3]uint64{63, 0, 0}},
		}}
}

func TestRedisExact(t *testing.T) {
	port := testutil.FreePort(t)
	startRedis(t, port)
	reg := metrics.NewRegistry()
	s := redis.New(redisCfg(port).Redis, redisCfg(port).Retry(), export.SinkDeps{Metrics: reg})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(t.Context())
	// The bus's events reach the sink through the export pipeline, as every sink's do.
	bus := &event.Bus{}
	p, err := export.New(redisCfg(port).Config, export.Deps{Bus: bus, Ring: 64, Sinks: []export.EventSink{s}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(t.Context())

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
	testutil.Eventually(t, 10*time.Second, "the bus's 2 events sent", func() bool { return s.Counts().Sent["event"] == 2 })
	s.Offer(&e2e)
	s.OfferRecord(testRecord())
	live := testRecord()
	live.Reason = record.ReasonNone
	s.OfferLatest(live)

	testutil.Eventually(t, 10*time.Second, "3 events, 1 flow, 1 hash sent", func() bool {
		c := s.Counts()
		return c.Sent["event"] == 3 && c.Sent["flow"] == 1 && c.Sent["hash"] == 1
	})
	c, err := testutil.DialRedis(redisAddr(port), "", 0, time.Second)
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
	port := testutil.FreePort(t)
	startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.MaxLen = 10
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
	s.Start(context.Background())
	defer s.Stop(t.Context())
	for i := 0; i < 1000; i++ {
		r := testRecord()
		r.Packets = uint64(i)
		s.OfferRecord(r)
	}
	testutil.Eventually(t, 10*time.Second, "1000 records sent", func() bool { return s.Counts().Sent["flow"] == 1000 })
	c, _ := testutil.DialRedis(redisAddr(port), "", 0, time.Second)
	defer c.Close()
	// "~" lets Redis keep up to one macro node (100 entries by default) more than MAXLEN.
	if n := do(t, c, "XLEN", "intake:flows").(int64); n < 10 || n > 110 {
		t.Errorf("XLEN %d after 1000 XADD MAXLEN ~ 10", n)
	}
}

// TestRedisRestart kills redis mid-run: offers never block, what could not be sent is
// counted as dropped, and the sink reconnects and resumes.
func TestRedisRestart(t *testing.T) {
	port := testutil.FreePort(t)
	srv := startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.Queue = 100
	reg := metrics.NewRegistry()
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{Metrics: reg})
	s.Start(context.Background())
	defer s.Stop(t.Context())
	ev := func(i int) *event.Event {
		return &event.Event{Time: int64(i), Kind: event.KindAbove, Measurement: event.QueueOccupancy, Key: event.Key{Switch: 1}, Value: uint64(i)}
	}
	for i := 0; i < 10; i++ {
		s.Offer(ev(i))
	}
	testutil.Eventually(t, 10*time.Second, "10 events sent", func() bool { return s.Counts().Sent["event"] == 10 })

	srv.kill()
	start := time.Now()
	for i := 10; i < 5010; i++ {
		s.Offer(ev(i))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("5000 offers with redis down took %s", d)
	}
	testutil.Eventually(t, 10*time.Second, "disconnected", func() bool { return !s.Counts().Connected })

	startRedis(t, port)
	testutil.Eventually(t, 20*time.Second, "queue drained after the restart", func() bool {
		c := s.Counts()
		return c.Connected && c.Queued == 0 && c.Sent["event"]+c.Dropped["event"]["queue_full"]+c.Dropped["event"]["conn"] == 5010
	})
	// New events after the restart go through.
	for i := 5010; i < 5020; i++ {
		s.Offer(ev(i))
	}
	testutil.Eventually(t, 10*time.Second, "all 5020 accounted", func() bool {
		c := s.Counts()
		return c.Sent["event"]+c.Dropped["event"]["queue_full"]+c.Dropped["event"]["conn"] == 5020 && c.Queued == 0
	})
	cnt := s.Counts()
	c, err := testutil.DialRedis(redisAddr(port), "", 0, time.Second)
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

// TestRedisStartAgain stops the sink, and the pipeline that feeds it, and starts them again,
// as a collector restart does.
func TestRedisStartAgain(t *testing.T) {
	port := testutil.FreePort(t)
	startRedis(t, port)
	s := redis.New(redisCfg(port).Redis, redisCfg(port).Retry(), export.SinkDeps{})
	bus := &event.Bus{}
	p, err := export.New(redisCfg(port).Config, export.Deps{Bus: bus, Ring: 16, Sinks: []export.EventSink{s}})
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		bus.Publish(&event.Event{Time: int64(round), Kind: event.KindAbove, Measurement: event.TxUtilization})
		testutil.Eventually(t, 10*time.Second, "the event sent", func() bool { return s.Counts().Sent["event"] == uint64(round) })
		if err := p.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
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
// pipeline waits for its replies (a stalled server executes what it has read when it
// resumes: a run counted 303,206 stream entries against 301,688 "sent"), the queue fills
// and drops, and after SIGCONT everything is accounted for, exactly: the stream holds what
// was counted sent, and nothing counted dropped.
func TestRedisStalled(t *testing.T) {
	port := testutil.FreePort(t)
	srv := startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.Queue, cfg.Redis.Timeout = 200, 300*time.Millisecond
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
	s.Start(context.Background())
	defer s.Stop(t.Context())
	ev := &event.Event{Kind: event.KindChange, Measurement: event.FlowLatency}
	s.Offer(ev)
	testutil.Eventually(t, 10*time.Second, "first event sent", func() bool { return s.Counts().Sent["event"] == 1 })

	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer srv.cmd.Process.Signal(syscall.SIGCONT) // before the deferred Stop, should the test fail
	var offering time.Duration
	offer := func(from, to int) {
		start := time.Now()
		for i := from; i < to; i++ {
			ev.Time = int64(i)
			s.Offer(ev)
		}
		offering += time.Since(start)
	}
	// Half the offers before the writer's stalled pipeline, half after: some are still
	// queued at SIGCONT however the writer was scheduled (when it runs only after the first
	// half, its pipeline takes everything queued so far).
	offer(0, 2500)
	testutil.Eventually(t, 10*time.Second, "a pipeline in flight", func() bool { return s.Counts().InFlight > 0 })
	time.Sleep(3 * cfg.Redis.Timeout) // longer than redis.timeout: the pipeline still waits
	offer(2500, 5000)
	if offering > time.Second {
		t.Errorf("5000 offers to a stalled redis took %s", offering)
	}
	if c := s.Counts(); c.InFlight == 0 || c.Queued != cfg.Redis.Queue || c.Dropped["event"]["conn"] != 0 {
		t.Errorf("while stalled: %+v", c)
	}
	srv.cmd.Process.Signal(syscall.SIGCONT)
	total := func() uint64 {
		c := s.Counts()
		return c.Sent["event"] + c.Dropped["event"]["queue_full"] + c.Dropped["event"]["conn"]
	}
	testutil.Eventually(t, 20*time.Second, "all 5001 accounted", func() bool {
		c := s.Counts()
		return total() == 5001 && c.Queued == 0 && c.InFlight == 0
	})
	c := s.Counts()
	if c.Dropped["event"]["queue_full"] == 0 || c.Dropped["event"]["conn"] != 0 || c.Sent["event"] < 2+uint64(cfg.Redis.Queue) || c.Reconnects != 0 {
		t.Errorf("counts %+v", c)
	}
	rc, err := testutil.DialRedis(redisAddr(port), "", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if n := do(t, rc, "XLEN", "intake:events").(int64); uint64(n) != c.Sent["event"] {
		t.Errorf("the stream holds %d entries, %d counted sent", n, c.Sent["event"])
	}
	t.Logf("stalled: sent %d, dropped queue_full %d, conn %d, reconnects %d", c.Sent["event"], c.Dropped["event"]["queue_full"], c.Dropped["event"]["conn"], c.Reconnects)
}

// TestRedisStopStalled stops the sink while its pipeline waits on a stalled server: Stop
// returns when its context ends, and the commands in flight and queued are counted dropped
// at shutdown.
func TestRedisStopStalled(t *testing.T) {
	port := testutil.FreePort(t)
	srv := startRedis(t, port)
	cfg := redisCfg(port)
	cfg.Redis.Queue, cfg.Redis.Batch = 100, 10
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
	s.Start(context.Background())
	ev := &event.Event{Kind: event.KindChange, Measurement: event.FlowLatency}
	s.Offer(ev)
	testutil.Eventually(t, 10*time.Second, "first event sent", func() bool { return s.Counts().Sent["event"] == 1 })
	srv.cmd.Process.Signal(syscall.SIGSTOP)
	defer srv.cmd.Process.Signal(syscall.SIGCONT)
	for range 50 {
		s.Offer(ev)
	}
	testutil.Eventually(t, 10*time.Second, "a pipeline in flight", func() bool { return s.Counts().InFlight > 0 })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %s with a 200ms context", d)
	}
	c := s.Counts()
	if c.Sent["event"] != 1 || c.Dropped["event"]["shutdown"] != 50 || c.Dropped["event"]["conn"] != 0 || c.InFlight != 0 || c.Queued != 0 {
		t.Errorf("counts %+v", c)
	}
}
