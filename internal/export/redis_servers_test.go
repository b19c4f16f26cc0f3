//go:build unix

package export_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/export"
	"github.com/intake-int/intake/internal/export/redis"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/record"
)

// BenchmarkRedisOffer measures the offerer's side (ingest's drain goroutine): encoding and
// queueing (the queue is full after the first offer, as under overload; the encoding is
// the same either way).
func BenchmarkRedisOffer(b *testing.B) {
	cfg := config.DefaultExport()
	cfg.Redis.Address, cfg.Redis.Queue = "127.0.0.1:1", 1
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
	ev := &event.Event{Time: 1000, Kind: event.KindChange, Scope: event.ScopeSwitch, Measurement: event.FlowHopLatency,
		Key: event.Key{Flow: testFlow(), Switch: 7}, Prev: 10, Value: 80, Threshold: 50}
	rec := testRecord()
	b.Run("event", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Offer(ev)
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.OfferRecord(rec)
		}
	})
	b.Run("latest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.OfferLatest(rec)
		}
	})
	h := &record.Histogram{Switch: "1", Metric: "hop_latency", Scale: "log", Bins: 64, Total: 3,
		Counts: []record.Bin{{Lo: 0, Count: 1}, {Lo: 8, Count: 2}}}
	b.Run("histogram", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.OfferHistogram(h)
		}
	})
}

// goRedis is a go-redis client for the test's own reads and set-up, closed at the test's end.
func goRedis(t *testing.T, o *goredis.Options) *goredis.Client {
	t.Helper()
	if o.DialTimeout == 0 {
		o.DialTimeout, o.ReadTimeout = time.Second, 2*time.Second
	}
	o.DialerRetries, o.PoolSize = 1, 2
	c := goredis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// pings reports whether the server behind c answers PING.
func pings(c goredis.UniversalClient) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}
}

// offerEach offers one write of each kind to s and waits until all four are sent.
func offerEach(t *testing.T, s *redis.Sink) {
	t.Helper()
	s.Offer(&event.Event{Time: 42, Kind: event.KindAbove, Scope: event.ScopeSwitch, Measurement: event.QueueOccupancy,
		Key: event.Key{Switch: 3, Queue: 1}, Prev: 5, Value: 300, Threshold: 200})
	s.OfferRecord(testRecord())
	s.OfferLatest(testRecord())
	s.OfferHistogram(&record.Histogram{Switch: "3", Metric: "hop_latency", Scale: "log", Bins: 64, Total: 3,
		Counts: []record.Bin{{Lo: 0, Count: 1}, {Lo: 8, Count: 2}}})
	testutil.Eventually(t, 10*time.Second, "one write of each kind sent", func() bool {
		c := s.Counts()
		return c.Sent["event"] == 1 && c.Sent["flow"] == 1 && c.Sent["hash"] == 1 && c.Sent["histogram"] == 1
	})
}

// checkEach checks, through c, what offerEach wrote (into database 0 unless c selects
// another).
func checkEach(t *testing.T, c goredis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	ev, err := c.XRange(ctx, "intake:events", "-", "+").Result()
	if err != nil || len(ev) != 1 || ev[0].Values["value"] != "300" || ev[0].Values["queue_id"] != "1" {
		t.Errorf("events stream %v, %v", ev, err)
	}
	fl, err := c.XRange(ctx, "intake:flows", "-", "+").Result()
	if err != nil || len(fl) != 1 || fl[0].Values["reason"] != "collision" || fl[0].Values["path"] != "1:2" {
		t.Errorf("flows stream %v, %v", fl, err)
	}
	key := "intake:flow:10.0.0.1,10.0.0.2,5000,80,17"
	h, err := c.HGetAll(ctx, key).Result()
	if err != nil || h["packets"] != "3" || h["h2_node_id"] != "2" {
		t.Errorf("hash %v, %v", h, err)
	}
	if ttl, err := c.TTL(ctx, key).Result(); err != nil || ttl < 290*time.Second || ttl > 300*time.Second {
		t.Errorf("hash TTL %s, %v", ttl, err)
	}
	hist, err := c.HGetAll(ctx, "intake:hist:3:hop_latency").Result()
	if want := map[string]string{"scale": "log", "bins": "64", "total": "3", "0": "1", "8": "2"}; err != nil || !reflect.DeepEqual(hist, want) {
		t.Errorf("histogram hash %v, %v; want %v", hist, err, want)
	}
}

func noDrops(t *testing.T, s *redis.Sink) {
	t.Helper()
	for kind, m := range s.Counts().Dropped {
		for r, n := range m {
			if n != 0 {
				t.Errorf("dropped %s %s: %d", kind, r, n)
			}
		}
	}
}

// TestRedisURL configures the server as a redis:// URL with a password (requirepass) and a
// database: the writes land in that database.
func TestRedisURL(t *testing.T) {
	port := testutil.FreePort(t)
	check := goRedis(t, &goredis.Options{Addr: redisAddr(port), Password: "s3cret", DB: 2})
	startRedisWith(t, port, pings(check), "--requirepass", "s3cret")
	cfg := redisCfg(port)
	cfg.Redis.Address = ""
	cfg.Redis.URL = fmt.Sprintf("redis://:s3cret@127.0.0.1:%d/2", port)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startRedisSink(t, cfg)
	offerEach(t, s)
	checkEach(t, check)
	if n := goRedis(t, &goredis.Options{Addr: redisAddr(port), Password: "s3cret"}).DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("database 0 holds %d keys, want none (the URL selects 2)", n)
	}
	noDrops(t, s)
	if c := s.Counts(); c.LastError != "" || c.LastErrorTime != "" {
		t.Errorf("last error %q at %q without any error", c.LastError, c.LastErrorTime)
	}
}

// TestRedisACL authenticates as an ACL user (username and password); a user without HSET
// gets its hashes refused (rejected, NOPERM in last_error) and the rest through; a wrong
// password is kept as last_error (WRONGPASS) while the writes are counted as dropped.
func TestRedisACL(t *testing.T) {
	port := testutil.FreePort(t)
	admin := goRedis(t, &goredis.Options{Addr: redisAddr(port)})
	startRedisWith(t, port, pings(admin))
	ctx := t.Context()
	for _, acl := range [][]any{
		{"ACL", "SETUSER", "intake", "on", ">pw-intake", "~intake:*", "+@all"},
		{"ACL", "SETUSER", "nohash", "on", ">pw-nohash", "~intake:*", "+@all", "-hset"},
	} {
		if err := admin.Do(ctx, acl...).Err(); err != nil {
			t.Fatalf("%v: %v", acl, err)
		}
	}
	cfg := redisCfg(port)
	cfg.Redis.Username, cfg.Redis.Password = "intake", "pw-intake"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	offerEach(t, s)
	checkEach(t, admin)
	noDrops(t, s)
	if clients := admin.ClientList(ctx).Val(); !strings.Contains(clients, "name=intake ") || !strings.Contains(clients, "user=intake ") {
		t.Errorf("no connection of user intake named intake:\n%s", clients)
	}
	s.Stop(ctx)

	t.Run("nohash", func(t *testing.T) {
		admin.FlushAll(ctx)
		cfg.Redis.Username, cfg.Redis.Password = "nohash", "pw-nohash"
		s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
		s.Start(context.Background())
		defer s.Stop(ctx)
		s.OfferLatest(testRecord())
		s.OfferRecord(testRecord())
		testutil.Eventually(t, 10*time.Second, "the hash rejected, the record sent", func() bool {
			c := s.Counts()
			return c.Dropped["hash"]["rejected"] == 1 && c.Sent["flow"] == 1
		})
		c := s.Counts()
		if !strings.Contains(c.LastError, "NOPERM") || !c.Connected || c.Sent["hash"] != 0 {
			t.Errorf("counts %+v, want last_error NOPERM, connected", c)
		}
		if n := admin.XLen(ctx, "intake:flows").Val(); n != 1 {
			t.Errorf("flows stream holds %d", n)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		cfg.Redis.Username, cfg.Redis.Password = "intake", "not-the-password"
		cfg.Redis.Queue = 10
		s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
		start := time.Now()
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			s.Offer(&event.Event{Time: int64(i), Kind: event.KindChange, Measurement: event.FlowLatency})
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("100 offers with a wrong password took %s", d)
		}
		testutil.Eventually(t, 10*time.Second, "last_error WRONGPASS", func() bool { return strings.Contains(s.Counts().LastError, "WRONGPASS") })
		c := s.Counts()
		at, err := time.Parse(time.RFC3339, c.LastErrorTime)
		if err != nil || at.Before(start.Add(-time.Second)) || at.After(time.Now()) {
			t.Errorf("last_error_time %q: %v", c.LastErrorTime, err)
		}
		if c.Connected || c.Sent["event"] != 0 || c.Dropped["event"]["queue_full"] != 90 || c.Queued != 10 {
			t.Errorf("counts %+v, want not connected, 90 dropped (queue full), 10 Queued", c)
		}
		stop, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		s.Stop(stop)
		c = s.Counts()
		if c.Dropped["event"]["shutdown"] != 10 || c.Queued != 0 {
			t.Errorf("after Stop: counts %+v, want the 10 Queued dropped at shutdown", c)
		}
		b, _ := json.Marshal(c)
		if !strings.Contains(string(b), `"last_error":"`) || !strings.Contains(string(b), `"last_error_time":"`) {
			t.Errorf("counts JSON lacks the last error: %s", b)
		}
		t.Logf("wrong password: %s", b)
	})
}

// testCA is a self-signed CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testCA struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "intake test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, certName, keyName string) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(certName, "CERTIFICATE", der), write(keyName, "PRIVATE KEY", kder)
	}
	var c testCA
	c.ca = write("ca.pem", "CERTIFICATE", caDER)
	c.serverCert, c.serverKey = leaf(2, "redis", x509.ExtKeyUsageServerAuth, "server.pem", "server-key.pem")
	c.clientCert, c.clientKey = leaf(3, "intake", x509.ExtKeyUsageClientAuth, "client.pem", "client-key.pem")
	return c
}

func (c testCA) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(c.ca)
	pool.AppendCertsFromPEM(b)
	cert, err := tls.LoadX509KeyPair(c.clientCert, c.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
}

// TestRedisTLS runs redis-server with TLS only (--port 0 --tls-port, client certificates
// required) and a CA made here: the sink connects with tls: true or a rediss:// URL and the
// CA and client certificate; without the CA it cannot (last_error: the unknown authority).
func TestRedisTLS(t *testing.T) {
	port := testutil.FreePort(t)
	ca := newTestCA(t)
	check := goRedis(t, &goredis.Options{Addr: redisAddr(port), TLSConfig: ca.clientTLS(t)})
	startRedisWith(t, port, pings(check), "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", ca.serverCert, "--tls-key-file", ca.serverKey, "--tls-ca-cert-file", ca.ca)
	for _, useURL := range []bool{false, true} {
		t.Run(fmt.Sprintf("url=%v", useURL), func(t *testing.T) {
			check.FlushAll(t.Context())
			cfg := redisCfg(port)
			if useURL {
				cfg.Redis.Address, cfg.Redis.URL = "", fmt.Sprintf("rediss://127.0.0.1:%d", port)
			} else {
				cfg.Redis.TLS = true
			}
			cfg.Redis.TLSCA, cfg.Redis.TLSCert, cfg.Redis.TLSKey = ca.ca, ca.clientCert, ca.clientKey
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			s := startRedisSink(t, cfg)
			offerEach(t, s)
			checkEach(t, check)
			noDrops(t, s)
		})
	}
	t.Run("unknown CA", func(t *testing.T) {
		cfg := redisCfg(port)
		cfg.Redis.TLS, cfg.Redis.TLSCert, cfg.Redis.TLSKey = true, ca.clientCert, ca.clientKey
		s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
		s.Start(context.Background())
		defer s.Stop(t.Context())
		testutil.Eventually(t, 10*time.Second, "a certificate error", func() bool {
			return strings.Contains(s.Counts().LastError, "certificate signed by unknown authority")
		})
		if c := s.Counts(); c.Connected {
			t.Errorf("connected without trusting the server's CA: %+v", c)
		}
		t.Logf("unknown CA: %s", s.Counts().LastError)
	})
	t.Run("plain to a TLS port", func(t *testing.T) {
		s := redis.New(redisCfg(port).Redis, redisCfg(port).Retry(), export.SinkDeps{})
		s.Start(context.Background())
		defer s.Stop(t.Context())
		testutil.Eventually(t, 10*time.Second, "an error", func() bool { return s.Counts().LastError != "" })
		if c := s.Counts(); c.Connected || c.Reconnects != 0 {
			t.Errorf("counts %+v", c)
		}
		t.Logf("plain connection to the TLS port: %s", s.Counts().LastError)
	})
}

// TestRedisSentinel finds the master through a real Sentinel (redis-server --sentinel, with
// a password of its own) monitoring a master on loopback.
func TestRedisSentinel(t *testing.T) {
	mport, sport := testutil.FreePort(t), testutil.FreePort(t)
	master := goRedis(t, &goredis.Options{Addr: redisAddr(mport)})
	startRedisWith(t, mport, pings(master))
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	err := os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\nrequirepass sentinel-pw\n"+
		"sentinel monitor intake-master 127.0.0.1 %d 1\nsentinel down-after-milliseconds intake-master 5000\n", sport, mport)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	sentinel := goredis.NewSentinelClient(&goredis.Options{Addr: redisAddr(sport), Password: "sentinel-pw", DialTimeout: time.Second, DialerRetries: 1})
	defer sentinel.Close()
	bin := need(t, "redis-server", "redis-server")
	srv := newServer(t, bin, []string{conf, "--sentinel"}, sport)
	srv.cmd = exec.Command(srv.bin, srv.args...)
	srv.cmd.Stdout, srv.cmd.Stderr = srv.log, srv.log
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the sentinel naming the master", func() bool {
		a, err := sentinel.GetMasterAddrByName(t.Context(), "intake-master").Result()
		return err == nil && len(a) == 2 && a[1] == strconv.Itoa(mport)
	})
	cfg := redisCfg(mport)
	cfg.Redis.Address = ""
	cfg.Redis.Sentinel = redis.Sentinel{Master: "intake-master", Addresses: []string{redisAddr(sport)}, Password: "sentinel-pw"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startRedisSink(t, cfg)
	offerEach(t, s)
	checkEach(t, master)
	noDrops(t, s)

	t.Run("wrong sentinel password", func(t *testing.T) {
		cfg.Redis.Sentinel.Password = "wrong"
		s := redis.New(cfg.Redis, cfg.Retry(), export.SinkDeps{})
		s.Start(context.Background())
		defer s.Stop(t.Context())
		testutil.Eventually(t, 10*time.Second, "an error", func() bool { return s.Counts().LastError != "" })
		if c := s.Counts(); c.Connected {
			t.Errorf("connected through a sentinel refusing the password: %+v", c)
		}
		t.Logf("wrong sentinel password: %s", s.Counts().LastError)
	})
}

// TestRedisCluster writes to a one-node Redis Cluster holding every slot (the streams and
// hashes are in different slots; the cluster client routes each command).
func TestRedisCluster(t *testing.T) {
	port := testutil.FreePort(t)
	node := goRedis(t, &goredis.Options{Addr: redisAddr(port)})
	startRedisWith(t, port, pings(node), "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"))
	if err := node.Do(t.Context(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "cluster_state:ok", func() bool {
		return strings.Contains(node.ClusterInfo(t.Context()).Val(), "cluster_state:ok")
	})
	cfg := redisCfg(port)
	cfg.Redis.Address = ""
	cfg.Redis.Cluster.Addresses = []string{redisAddr(port)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := startRedisSink(t, cfg)
	offerEach(t, s)
	cl := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{redisAddr(port)}})
	defer cl.Close()
	checkEach(t, cl)
	noDrops(t, s)
}
