//go:build soak && linux

package export_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/internal/testutil"
)

// TestSoak is the one-hour soak (docs/security.md, "Soak"): a real `intake serve` exporting to
// a real influxd, redis-server and a Kafka cluster (kfake, its own process) at half the
// capacity measured at its start, for INTAKE_SOAK_DURATION (default 1h), with a sink outage
// every sixth of the run (InfluxDB and Redis stopped with SIGTERM and restarted on their
// data, the Kafka cluster stalled with SIGSTOP) and a flood of idle HTTP connections in the
// middle. It checks that the collector's RSS stays flat once every sink has been down once, that /healthz answers throughout, and that for every
// sink what the server holds is exactly what intake counted as sent, the rest counted as
// dropped by reason (Kafka: offered = stored + dropped).
//
//	go test -tags soak ./internal/export -run TestSoak -timeout 100m -v
//	INTAKE_SOAK_DURATION=6m go test -tags soak ./internal/export -run TestSoak -v   # a short try
func TestSoak(t *testing.T) {
	dur := time.Hour
	if s := os.Getenv("INTAKE_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("INTAKE_SOAK_DURATION: %v", err)
		}
		dur = d
	}
	floodConns := raiseNofile(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "intake")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/intake").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	influx := startInflux(t)
	rport := testutil.FreePort(t)
	rdir := t.TempDir()
	// Redis persists (an append-only file, which SIGTERM fsyncs), so that a stop and restart
	// loses nothing it executed: what it holds at the end is everything intake counted sent.
	redisArgs := []string{"--appendonly", "yes", "--appendfsync", "everysec", "--dir", rdir}
	redisReady := redisPong(rport)
	rs := startRedisWith(t, rport, redisReady, redisArgs...)
	kafka := kfaketest.StartTopics(t, 1, 4, "intake.events", "intake.snapshots", "intake.flows")

	cfgPath := filepath.Join(dir, "soak.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 2}
http: {address: '127.0.0.1:0'}
dta: {data_dir: %s}
flowcache: {idle_timeout: 20s}
export:
  period: 10s
  influxdb: {url: %s, database: soak}
  redis: {address: %s, maxlen: 1000000000, hash_period: 0}
  kafka: {brokers: [%s], topics: {reports: ''}}
`, filepath.Join(dir, "dta"), influx.url, redisAddr(rport), strings.Join(kafka.Brokers, ", "))), 0o600)
	if out, err := exec.Command(bin, "serve", "--config", cfgPath, "--check").CombinedOutput(); err != nil {
		t.Fatalf("serve --check: %v\n%s", err, out)
	} else {
		t.Logf("serve --check:\n%s", out)
	}
	srv := startServe(t, bin, cfgPath)
	t.Logf("serve pid %d: reports on %s, http on %s", srv.cmd.Process.Pid, srv.tr, srv.http)

	// Capacity: what the collector decodes when gen sends as fast as it can (both on this
	// machine, as in the soak itself).
	const measure = 20 * time.Second
	before := srv.decoded(t)
	if out, err := exec.Command(bin, "gen", "--to", srv.tr, "--flows", "256", "--vary", "0.0002", "--duration", measure.String()).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	time.Sleep(2 * time.Second)
	capacity := float64(srv.decoded(t)-before) / measure.Seconds()
	rate := int(capacity / 2)
	t.Logf("capacity %.0f reports/s; the soak sends %d reports/s for %s", capacity, rate, dur)

	// Values change in 0.02% of the reports (the draw model), so that every sink has events.
	gen := exec.Command(bin, "gen", "--to", srv.tr, "--flows", "256", "--vary", "0.0002", "--pps", strconv.Itoa(rate), "--duration", dur.String())
	genOut := &strings.Builder{}
	gen.Stdout, gen.Stderr = genOut, genOut
	if err := gen.Start(); err != nil {
		t.Fatal(err)
	}
	genDone := make(chan error, 1)
	go func() { genDone <- gen.Wait() }()

	start := time.Now()
	every := dur / 6
	outage := min(2*time.Minute, every/3)
	type sample struct {
		at  time.Duration
		rss int64
	}
	var rss []sample
	var mu sync.Mutex // healthFails: the sampler and the schedule both check
	var healthFails []string
	health := func(what string) {
		c := http.Client{Timeout: 2 * time.Second}
		t0 := time.Now()
		resp, err := c.Get("http://" + srv.http + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
		if err != nil {
			mu.Lock()
			healthFails = append(healthFails, fmt.Sprintf("%s at %s: %v (after %s)", what, time.Since(start).Round(time.Second), err, time.Since(t0).Round(time.Millisecond)))
			mu.Unlock()
		}
	}
	down := func(name string, stop, resume func()) {
		t.Logf("%s: %s down for %s", time.Since(start).Round(time.Second), name, outage)
		stop()
		for end := time.Now().Add(outage); time.Now().Before(end); time.Sleep(10 * time.Second) {
			health(name + " down")
		}
		resume()
		t.Logf("%s: %s back", time.Since(start).Round(time.Second), name)
	}
	// The schedule: an outage at every sixth of the run, InfluxDB, Redis and Kafka in turn,
	// and the flood between the third and the fourth.
	schedule := []func(){
		func() { down("influxdb", func() { influx.terminate(t) }, func() { influx.start(t, "/ping") }) },
		func() { down("redis", func() { rs.terminate(t) }, func() { restartRedis(t, rs, redisReady) }) },
		func() {
			down("kafka", func() { kafka.Signal(syscall.SIGSTOP) }, func() { kafka.Signal(syscall.SIGCONT) })
			time.Sleep(time.Until(start.Add(3*every + every/2)))
			flood(t, srv.http, floodConns, outage, health)
		},
	}
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		for k := 1; k <= 5; k++ {
			time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
			schedule[(k-1)%len(schedule)]()
		}
	}()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case err := <-genDone:
			if err != nil {
				t.Fatalf("gen: %v\n%s", err, genOut)
			}
			break loop
		case <-tick.C:
		}
		rss = append(rss, sample{time.Since(start), vmRSS(t, srv.cmd.Process.Pid)})
		health("tick")
		if len(rss)%6 == 0 {
			t.Logf("%s: rss %d MiB, decoded %d", time.Since(start).Round(time.Second), rss[len(rss)-1].rss>>20, srv.decoded(t))
		}
	}
	<-scheduled
	// Let the last evictions and retries go out, then stop: serve's summary has the final
	// counters, which no longer move.
	time.Sleep(30 * time.Second)
	summary := srv.stop(t)
	t.Logf("serve's summary:\n%s", summary)

	// RSS flat: once every sink has been down once (queues and buffers full, then drained),
	// the peak of the rest of the run (the flood, the second outages) stays within 10%
	// (+16 MiB) of the peak until then. The first sixth is the warm-up (tables filling).
	round := 3*every + outage
	var warm, first, second int64
	for _, s := range rss {
		switch {
		case s.at < every:
			warm = max(warm, s.rss)
		case s.at < round:
			first = max(first, s.rss)
		default:
			second = max(second, s.rss)
		}
	}
	t.Logf("RSS peak: warm-up %d MiB, first round of outages %d MiB, the rest %d MiB (%d samples)", warm>>20, first>>20, second>>20, len(rss))
	if second > first+first/10+16<<20 {
		t.Errorf("RSS grew: peak %d MiB after the first round of outages against %d MiB in it", second>>20, first>>20)
	}
	if len(healthFails) > 0 {
		t.Errorf("/healthz failed %d times:\n%s", len(healthFails), strings.Join(healthFails, "\n"))
	}

	// Every sink: stored = sent, and the summary counted the rest as dropped.
	sent := func(name string) uint64 {
		m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +(\d+) sent, (\d+) dropped`).FindStringSubmatch(summary)
		if m == nil {
			t.Fatalf("no line %q in the summary", name)
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		d, _ := strconv.ParseUint(m[2], 10, 64)
		t.Logf("%s: %d sent, %d dropped", name, n, d)
		return n
	}
	check := func(what string, stored, sent uint64) {
		if stored != sent {
			t.Errorf("%s: the server holds %d, intake counted %d sent", what, stored, sent)
		}
	}
	check("influxdb", influxCount(t, influx, "soak"), sent("export influxdb")+sent("export influxdb_records"))
	rc, err := testutil.DialRedis(redisAddr(rport), "", 0, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	check("redis events", uint64(do(t, rc, "XLEN", "intake:events").(int64)), sent("redis events"))
	if sent("redis events") == 0 {
		t.Error("no event went to Redis")
	}
	check("redis flows", uint64(do(t, rc, "XLEN", "intake:flows").(int64)), sent("redis flows"))
	high := kafkaHigh(t, kafka.Brokers, "intake.events", "intake.snapshots", "intake.flows")
	for kind, topic := range map[string]string{"event": "intake.events", "snapshot": "intake.snapshots", "flow": "intake.flows"} {
		m := regexp.MustCompile(`(?m)^  kafka ` + kind + `s +(\d+) sent, (\d+) dropped.* of (\d+) offered`).FindStringSubmatch(summary)
		if m == nil {
			t.Fatalf("no kafka %ss line in the summary", kind)
		}
		s, _ := strconv.ParseUint(m[1], 10, 64)
		d, _ := strconv.ParseUint(m[2], 10, 64)
		o, _ := strconv.ParseUint(m[3], 10, 64)
		check("kafka "+topic, high[topic], s)
		if high[topic]+d != o {
			t.Errorf("kafka %s: %d stored + %d dropped != %d offered", topic, high[topic], d, o)
		}
	}
}

// served is a running `intake serve`.
type served struct {
	cmd      *exec.Cmd
	tr, http string
	mu       sync.Mutex
	out, err strings.Builder
	done     chan error
}

func startServe(t *testing.T, bin, cfg string) *served {
	t.Helper()
	s := &served{cmd: exec.Command(bin, "serve", "--config", cfg), done: make(chan error, 1)}
	s.cmd.Stdout = writerFunc(func(p []byte) { s.mu.Lock(); s.out.Write(p); s.mu.Unlock() })
	pr, pw := io.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.err.WriteString(line + "\n")
			if a, ok := strings.CutPrefix(line, "intake serve: listening for report on udp "); ok && s.tr == "" {
				s.tr, _, _ = strings.Cut(a, " ")
			}
			if a, ok := strings.CutPrefix(line, "intake serve: http on "); ok {
				s.http, _, _ = strings.Cut(a, " ")
			}
			s.mu.Unlock()
			if strings.Contains(line, "ready;") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { s.done <- s.cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
		}
		if t.Failed() {
			s.mu.Lock()
			t.Logf("serve's stderr (end):\n%s", tail(s.err.String(), 6000))
			s.mu.Unlock()
		}
	})
	select {
	case <-ready:
	case err := <-s.done:
		t.Fatalf("serve exited: %v\n%s", err, s.err.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve not ready after 30s:\n%s", s.err.String())
	}
	return s
}

func (s *served) decoded(t *testing.T) uint64 {
	var st struct {
		ReportsDecoded uint64 `json:"reports_decoded"`
	}
	getJSON(t, "http://"+s.http+"/api/v1/status", &st)
	return st.ReportsDecoded
}

// stop sends SIGTERM and returns the summary serve prints on stdout.
func (s *served) stop(t *testing.T) string {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve exited: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("serve did not stop within 3 minutes of SIGTERM")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// flood holds n idle connections to the HTTP API for d: 64 per source address, from
// 127.0.0.4 on (the soak found that 20,000 stopped the API), checking /healthz every ten
// seconds meanwhile. Connections the collector refuses or closes are simply gone.
func flood(t *testing.T, addr string, n int, d time.Duration, health func(string)) {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	var conns []net.Conn
	for src := 2; len(conns) < n && src < 2000; src++ {
		dl := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(src/250), byte(2+src%250))}}
		for range 64 {
			c, err := dl.Dial("tcp", "127.0.0.1:"+port)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
	}
	t.Logf("flood: %d idle connections held for %s", len(conns), d)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Second) {
		health("flood")
	}
	for _, c := range conns {
		c.Close()
	}
}

// raiseNofile raises RLIMIT_NOFILE as far as it goes (to 65536 where the hard limit may be
// raised) and returns how many connections the flood may hold: up to 20,000, the rest of
// the limit kept for the test's other descriptors.
func raiseNofile(t *testing.T) int {
	var l syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	want := l
	want.Max = max(l.Max, 65536)
	want.Cur = want.Max
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		want = l
		want.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want)
	}
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	n := min(20000, int(l.Cur)-1024)
	if n < 8192 {
		t.Skipf("RLIMIT_NOFILE %d: the flood needs at least 9216 descriptors", l.Cur)
	}
	return n
}

func vmRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func restartRedis(t *testing.T, s *server, ready func() bool) {
	t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, "redis-server back", ready)
}

// influxCount counts the points in db: per measurement (one query for all would leave out
// those whose field types clash), the count of the one field every point has: value, or for
// an event point value or path.
func influxCount(t *testing.T, s *server, db string) uint64 {
	t.Helper()
	query := func(q string) influxResult {
		var r influxResult
		getJSON(t, s.url+"/query?"+url.Values{"db": {db}, "q": {q}}.Encode(), &r)
		for _, res := range r.Results {
			if res.Error != "" {
				t.Fatalf("%s: %s", q, res.Error)
			}
		}
		return r
	}
	var n uint64
	for _, res := range query("SHOW MEASUREMENTS").Results {
		for _, se := range res.Series {
			for _, m := range se.Values {
				name := m[0].(string)
				var most, events uint64
				for _, res := range query(`SELECT COUNT(*) FROM "` + strings.ReplaceAll(name, `"`, `\"`) + `"`).Results {
					for _, se := range res.Series {
						for i, c := range se.Columns {
							if i == 0 || len(se.Values) == 0 {
								continue
							}
							v, _ := se.Values[0][i].(json.Number).Int64()
							most = max(most, uint64(v))
							if c == "count_value" || c == "count_path" {
								events += uint64(v)
							}
						}
					}
				}
				if name == "events" {
					most = events
				}
				n += most
			}
		}
	}
	return n
}
