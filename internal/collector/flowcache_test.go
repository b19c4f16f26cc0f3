package collector_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestFlowCacheAPI(t *testing.T) {
	p, addr := collectortest.StartFlowCache(t, nil)
	collectortest.FlowCacheFixture(p)

	code, body := get(t, addr, "/api/v1/flowcache/flow?src=10.0.0.1&dst=10.0.0.2&sport=1000&dport=80&proto=17")
	want := `{
  "src": "10.0.0.1",
  "dst": "10.0.0.2",
  "sport": 1000,
  "dport": 80,
  "proto": 17,
  "packets": 2,
  "first_seen": "1970-01-01T00:00:00.0000001Z",
  "last_seen": "1970-01-01T00:00:00.0000002Z",
  "latency": {
    "latest": 36,
    "mean": 33
  },
  "path": [
    1,
    2
  ],
  "truncated": false,
  "hops": [
    {
      "hop": 1,
      "node_id": 1,
      "latest": {
        "hop_latency": 11,
        "queue_occupancy": 6,
        "tx_util": 7
      },
      "mean": {
        "hop_latency": 10.5,
        "queue_occupancy": 5.5,
        "tx_util": 7
      }
    },
    {
      "hop": 2,
      "node_id": 2,
      "latest": {
        "hop_latency": 25,
        "queue_occupancy": 3,
        "tx_util": 9
      },
      "mean": {
        "hop_latency": 22.5,
        "queue_occupancy": 1.5,
        "tx_util": 8.5
      }
    }
  ]
}
`
	if code != 200 || body != want {
		t.Errorf("flow: %d\n%s", code, body)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/flowcache/flow?src=10.0.0.1&dst=10.0.0.2&sport=9&dport=80&proto=17", 404, `{"error":"flow not in the flow cache"}`},
		{"/api/v1/flowcache/flow?src=10.0.0.1&dst=::1&sport=9&dport=80&proto=17", 400,
			`{"error":"parameter src: \"10.0.0.1,::1\": must be IPv4 or IPv6 addresses of one family for src and dst","param":"src","value":"10.0.0.1,::1"}`},
		{"/api/v1/flowcache/flow?src=10.0.0.1&dst=10.0.0.2&sport=70000&dport=80&proto=17", 400,
			`{"error":"parameter sport: \"70000\": must be an integer 0-65535","param":"sport","value":"70000"}`},
		{"/api/v1/flowcache/top?by=jitter", 400, `{"error":"parameter by: \"jitter\": must be latency or packets","param":"by","value":"jitter"}`},
		{"/api/v1/flowcache/top?n=0", 400, `{"error":"parameter n: \"0\": must be an integer 1-1000","param":"n","value":"0"}`},
		{"/api/v1/histograms/9/hop_latency", 404, `{"error":"no histogram for switch 9"}`},
		{"/api/v1/histograms/1/jitter", 400, `{"error":"parameter metric: \"jitter\": must be hop_latency, queue_occupancy or tx_utilization","param":"metric","value":"jitter"}`},
		{"/api/v1/histograms/x/hop_latency", 400, `{"error":"parameter switch: \"x\": must be a switch id 0-4294967295 or e2e","param":"switch","value":"x"}`},
		{"/api/v1/histograms/1/hop_latency", 200, `{"switch":"1","metric":"hop_latency","scale":"linear","bins":4,"total":3,"counts":[{"lo":10,"hi":20,"count":2},{"lo":30,"count":1}]}`},
		{"/api/v1/histograms/e2e/latency", 200, `{"switch":"e2e","metric":"latency","scale":"linear","bins":4,"total":3,"counts":[{"lo":25,"hi":50,"count":2},{"lo":75,"count":1}]}`},
		// One name, tx_utilization (issue 31); tx_util still answers, with the new name.
		{"/api/v1/histograms", 200, `{"switches":[1,2,3],"metrics":["hop_latency","queue_occupancy","tx_utilization"],"e2e":["latency"]}`},
		{"/api/v1/histograms/1/tx_utilization", 200, `{"switch":"1","metric":"tx_utilization","scale":"linear","bins":4,"total":3,"counts":[{"lo":1,"hi":2,"count":1},{"lo":3,"count":2}]}`},
		{"/api/v1/histograms/1/tx_util", 200, `{"switch":"1","metric":"tx_utilization","scale":"linear","bins":4,"total":3,"counts":[{"lo":1,"hi":2,"count":1},{"lo":3,"count":2}]}`},
		{"/api/v1/flowcache/top?by=latency&n=1", 200, ""},
	} {
		code, body := get(t, addr, tc.path)
		if code != tc.code || tc.want != "" && compact(t, body) != tc.want {
			t.Errorf("%s: %d %s\nwant %d %s", tc.path, code, compact(t, body), tc.code, tc.want)
		}
	}
	_, body = get(t, addr, "/api/v1/flowcache/top?by=latency&n=1")
	if !strings.Contains(body, `"sport": 2000`) || strings.Contains(body, `"sport": 1000`) || !strings.HasPrefix(body, "{\n  \"by\": \"latency\",\n  \"n\": 1,") {
		t.Errorf("top by latency:\n%s", body)
	}
	_, body = get(t, addr, "/api/v1/flowcache/stats")
	for _, s := range []string{`"rows": 16`, `"buckets": 4`, `"capacity": 64`, `"flows": 2`, `"occupancy": 0.03125`,
		`"reports": 3`, `"updates": 3`, `"inserts": 2`, `"evictions": {
    "collision": 0,
    "idle": 0
  }`, `"drops": 0`, `"histogram_switches": 3`, `"event_rings": []`} {
		if !strings.Contains(body, s) {
			t.Errorf("stats lack %s:\n%s", s, body)
		}
	}
	bpf := float64(16*(64+4*360)) / 64
	if !strings.Contains(body, `"bytes_per_flow": `+strconv.FormatFloat(bpf, 'f', -1, 64)) {
		t.Errorf("stats: bytes_per_flow %v missing:\n%s", bpf, body)
	}
}

func compact(t *testing.T, s string) string {
	var b strings.Builder
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' && (i == 0 || s[i-1] != '\\') {
			inStr = !inStr
		}
		if !inStr && (c == ' ' || c == '\n') {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestFlowCacheRedis runs the processor with the Redis export against a real redis-server:
// a collision eviction and the ager's eviction reach the flows stream, the periodic walk
// writes the live flow's hash, and the detector's events published on the bus reach the
// events stream through the export pipeline (the one way events reach a sink: the detector
// is on, so that the pipeline is).
func TestFlowCacheRedis(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testing.Short() {
			t.Skip("redis-server not installed (-short)")
		}
		t.Fatal("redis-server not found: install it with: apt-get install -y redis-server (or run ./test, which installs what the tests need)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, _ := os.Create(filepath.Join(t.TempDir(), "redis.log"))
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
	raddr := fmt.Sprintf("127.0.0.1:%d", port)
	var rc *testutil.RedisConn
	testutil.Eventually(t, 20*time.Second, "redis-server to accept a connection", func() bool {
		rc, err = testutil.DialRedis(raddr, "", 0, time.Second)
		return err == nil
	})
	defer rc.Close()

	p, addr := collectortest.StartFlowCache(t, func(c *config.Config) {
		c.FlowCache.Rows, c.FlowCache.Buckets = 1, 1
		c.Detect.Enabled = true
		c.Export.Redis.Address = raddr
		c.Export.Redis.HashPeriod = 20 * time.Millisecond
		c.Export.Redis.Queue = 1000
	})
	now := time.Now().UnixNano()
	p.FlowCache.Process(0, collectortest.FlowReport(1, now-int64(time.Hour), collectortest.FlowHop{1, 10, 1, 1}))
	p.FlowCache.Process(0, collectortest.FlowReport(2, now, collectortest.FlowHop{1, 20, 2, 2})) // evicts flow 1
	p.FlowCache.Flush(0)
	e := event.Event{Time: 5, Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.TxUtilization,
		Key: event.Key{Switch: 1, Port: 3}, Prev: 2, Value: 90, Threshold: 80}
	p.Bus.Publish(&e)

	xlen := func(s string) int64 {
		v, err := rc.Do(time.Second, "XLEN", s)
		if err != nil {
			t.Fatal(err)
		}
		return v.(int64)
	}
	key := "intake:flow:10.0.0.1,10.0.0.2,2,80,17"
	testutil.Eventually(t, 10*time.Second, "a record in intake:flows, an event in intake:events and the flow's hash", func() bool {
		ex, _ := rc.Do(time.Second, "EXISTS", key)
		return xlen("intake:flows") == 1 && xlen("intake:events") == 1 && ex == int64(1)
	})
	// The histograms are written beside the flows' hashes.
	hist := map[string]string{}
	testutil.Eventually(t, 10*time.Second, "the histogram hash", func() bool {
		v, _ := rc.Do(time.Second, "HGETALL", "intake:hist:1:hop_latency")
		a, _ := v.([]any)
		for i := 0; i+1 < len(a); i += 2 {
			hist[a[i].(string)] = a[i+1].(string)
		}
		return len(hist) > 0
	})
	if want := map[string]string{"scale": "linear", "bins": "4", "total": "2", "10": "1", "20": "1"}; !reflect.DeepEqual(hist, want) {
		t.Errorf("histogram hash %v, want %v", hist, want)
	}
	v, _ := rc.Do(time.Second, "XRANGE", "intake:flows", "-", "+")
	var got []string
	for _, f := range v.([]any)[0].([]any)[1].([]any) {
		got = append(got, f.(string))
	}
	want := []string{"src", "10.0.0.1", "dst", "10.0.0.2", "sport", "1", "dport", "80", "proto", "17", "reason", "collision",
		"packets", "1", "first_ns", strconv.FormatInt(now-int64(time.Hour), 10), "last_ns", strconv.FormatInt(now-int64(time.Hour), 10),
		"latency_latest", "10", "latency_mean", "10", "path", "1", "hops", "1", "h1_node_id", "1",
		"h1_hop_latency_latest", "10", "h1_hop_latency_mean", "10", "h1_queue_occupancy_latest", "1", "h1_queue_occupancy_mean", "1",
		"h1_tx_util_latest", "1", "h1_tx_util_mean", "1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flow record\n got %q\nwant %q", got, want)
	}
	_, body := get(t, addr, "/api/v1/flowcache/stats")
	for _, s := range []string{`"consumer": "export"`, `"collision": 1`, `"exported": 1`, `"connected": true`} {
		if !strings.Contains(body, s) {
			t.Errorf("stats lack %s:\n%s", s, body)
		}
	}
	// The ager: flow 2 idle for longer than idle_timeout goes to the stream too.
	if n := p.FlowCache.Age(now + int64(2*time.Minute)); n != 1 {
		t.Fatalf("aged %d", n)
	}
	testutil.Eventually(t, 10*time.Second, "the aged record in the stream", func() bool { return xlen("intake:flows") == 2 })
	v, _ = rc.Do(time.Second, "XREVRANGE", "intake:flows", "+", "-", "COUNT", "1")
	if f := v.([]any)[0].([]any)[1].([]any); f[11] != "idle" || f[7] != "80" || f[5] != "2" {
		t.Errorf("aged record %q", f)
	}

	// Redis goes away mid-run: ingest carries on at full speed (every new flow evicts the
	// last one), every record is accounted for as sent or dropped, and after the restart
	// new records reach the (empty, restarted) server.
	cmd.Process.Kill()
	cmd.Wait()
	waitRedis := func(what string, ok func(flowCacheStats) bool) flowCacheStats {
		t.Helper()
		var st flowCacheStats
		testutil.Eventually(t, 20*time.Second, what, func() bool {
			st = fcStats(p)
			return ok(st)
		})
		return st
	}
	waitRedis("disconnected", func(st flowCacheStats) bool { return !st.Redis.Connected })
	start := time.Now()
	const churn = 20000
	for i := 0; i < churn; i++ {
		p.FlowCache.Process(0, collectortest.FlowReport(uint16(100+i%30000), now+int64(i), collectortest.FlowHop{1, 10, 1, 1}))
	}
	p.FlowCache.Flush(0)
	if d := time.Since(start); d > 10*time.Second { // blocking on Redis would never finish
		t.Errorf("%d reports with redis down took %s", churn, d)
	}
	sentAtKill := fcStats(p).Redis.Sent["flow"]
	st := waitRedis("rings drained", func(st flowCacheStats) bool { return st.Rings.Pending == 0 })
	// The first churn flow took the bucket the ager had freed; each later one evicted.
	if st.Evictions.Collision != churn || st.Rings.Exported+st.Rings.Drops != churn+1 {
		t.Errorf("evictions %d, exported %d, ring drops %d", st.Evictions.Collision, st.Rings.Exported, st.Rings.Drops)
	}
	cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	testutil.Eventually(t, 20*time.Second, "redis-server to accept a connection again", func() bool {
		rc, err = testutil.DialRedis(raddr, "", 0, time.Second)
		return err == nil
	})
	accounted := func(st flowCacheStats) uint64 {
		r := st.Redis
		return r.Sent["flow"] + r.Dropped["flow"]["queue_full"] + r.Dropped["flow"]["conn"]
	}
	st = waitRedis("reconnected and every record sent or dropped", func(st flowCacheStats) bool {
		return st.Redis.Connected && st.Redis.Queued == 0 && accounted(st) == st.Rings.Exported
	})
	p.FlowCache.Process(0, collectortest.FlowReport(7, now+churn+1, collectortest.FlowHop{9, 1, 1, 1})) // evicts the last churn flow
	p.FlowCache.Flush(0)
	st = waitRedis("the record after the restart sent", func(st flowCacheStats) bool {
		return st.Redis.Queued == 0 && accounted(st) == st.Rings.Exported && st.Rings.Pending == 0
	})
	if st.Redis.Dropped["flow"]["queue_full"] == 0 {
		t.Errorf("no queue_full drops with a 1000-command queue and %d records", churn)
	}
	// The restarted server has nothing persisted: it holds what was sent since the kill.
	if n := xlen("intake:flows"); uint64(n) != st.Redis.Sent["flow"]-sentAtKill {
		t.Errorf("restarted server holds %d records, sent since the kill %d", n, st.Redis.Sent["flow"]-sentAtKill)
	}
	t.Logf("redis down: %d evictions; sent %d, dropped queue_full %d, conn %d; reconnects %d",
		churn, st.Redis.Sent["flow"], st.Redis.Dropped["flow"]["queue_full"], st.Redis.Dropped["flow"]["conn"], st.Redis.Reconnects)
}

// flowCacheStats is the flow cache's stats with the Redis sink's counters typed.
type flowCacheStats struct {
	flowcache.Stats
	Redis *redis.Counts
}

func fcStats(c *collector.Collector) flowCacheStats {
	s := c.FlowCache.StatsJSON()
	rc, _ := s.Redis.(*redis.Counts)
	return flowCacheStats{s.Stats, rc}
}
