package export

import (
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is the `export` section of the configuration file.
type Config struct {
	// Period is the periodic push (INTCollector §III-E1): every Period the latest value of
	// every live key goes to the sinks, so that a silent key is known to be alive. 0 turns
	// it off (events only).
	Period time.Duration `yaml:"period"`
	// Queue is the number of events (and periodic values) each sink buffers; when a sink is
	// slower than that, new ones are dropped and counted, ingest never waits.
	Queue int `yaml:"queue"`
	// Flush is the longest a point waits in a sink's queue for a fuller batch.
	Flush time.Duration `yaml:"flush"`
	// BackoffMin and BackoffMax bound the exponential backoff between retries of a failed
	// batch.
	BackoffMin time.Duration `yaml:"backoff_min"`
	BackoffMax time.Duration `yaml:"backoff_max"`
	// InfluxDB is the InfluxDB line-protocol sink (1.x /write or 2.x /api/v2/write).
	InfluxDB InfluxDB `yaml:"influxdb"`
	// Prometheus is the /metrics gauges and the remote-write sink.
	Prometheus Prometheus `yaml:"prometheus"`
	// Redis is the flow cache's Redis export (SmartNIC sink §III-D): events and evicted flow
	// records to streams, the latest per-flow aggregates as hashes.
	Redis Redis `yaml:"redis"`
}

// Redis configures the Redis sink (export/redis.go). The server is one of: address (or
// url), a Sentinel-monitored master (sentinel), or a cluster (cluster); none of them turns
// the sink off.
type Redis struct {
	// Address is the server's host:port.
	Address string `yaml:"address"`
	// URL is the server as a redis:// (or rediss://: TLS) URL,
	// redis://[user[:password]@]host[:port][/db] (go-redis's ParseURL; its query options
	// client_name, protocol and skip_verify are used, the connection's timeouts and retries
	// are the keys below). Exclusive with Address; Username, Password and DB, when set,
	// override the URL's.
	URL string `yaml:"url"`
	// Username is the ACL user (Redis 6 and later) authenticated with Password; Password
	// alone authenticates the default user (requirepass). Sent on every connection (HELLO
	// AUTH, or AUTH). DB is SELECTed when not 0.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	DB       int    `yaml:"db"`
	// TLS connects over TLS (also on with a rediss:// URL), verifying the server's
	// certificate against TLSCA (a PEM file; empty: the system's roots) and the name
	// TLSServerName (empty: the host connected to). TLSCert and TLSKey are the client
	// certificate and its key (PEM files) for servers that ask for one (tls-auth-clients).
	// TLSInsecureSkipVerify turns verification off (tests only).
	TLS                   bool   `yaml:"tls"`
	TLSCA                 string `yaml:"tls_ca"`
	TLSCert               string `yaml:"tls_cert"`
	TLSKey                string `yaml:"tls_key"`
	TLSServerName         string `yaml:"tls_server_name"`
	TLSInsecureSkipVerify bool   `yaml:"tls_insecure_skip_verify"`
	// Sentinel finds the master through Redis Sentinel (go-redis's failover client).
	Sentinel RedisSentinel `yaml:"sentinel"`
	// Cluster writes to a Redis Cluster (go-redis's cluster client).
	Cluster RedisCluster `yaml:"cluster"`
	// EventsStream receives the threshold and change events (XADD).
	EventsStream string `yaml:"events_stream"`
	// FlowsStream receives every evicted flow record (XADD).
	FlowsStream string `yaml:"flows_stream"`
	// MaxLen trims both streams to about this many entries (XADD MAXLEN ~).
	MaxLen int `yaml:"maxlen"`
	// HashPrefix starts the key of each flow's hash: prefix + "src,dst,sport,dport,proto".
	HashPrefix string `yaml:"hash_prefix"`
	// HistogramPrefix starts the key of each per-switch histogram's hash: prefix +
	// "<switch>:<metric>" (switch "e2e", metric "latency": the end-to-end histogram).
	HistogramPrefix string `yaml:"histogram_prefix"`
	// HashPeriod is how often the flows updated since the last time, and the histograms, are
	// written as hashes; 0 turns the hashes off.
	HashPeriod time.Duration `yaml:"hash_period"`
	// TTL expires a flow's hash this long after its last write (EXPIRE, whole seconds).
	TTL time.Duration `yaml:"ttl"`
	// Queue is the number of commands waiting to be sent; when full, new ones are dropped
	// and counted.
	Queue int `yaml:"queue"`
	// Batch is the most commands per pipelined write.
	Batch int `yaml:"batch"`
	// Timeout bounds a connect and the PING that checks the server. A pipeline, once
	// written, waits for its replies as long as the connection stands (redis.go).
	Timeout time.Duration `yaml:"timeout"`
}

// RedisSentinel names the master and the sentinels that know where it is.
type RedisSentinel struct {
	// Master is the master's name in the sentinels' configuration (sentinel monitor NAME).
	Master string `yaml:"master"`
	// Addresses are the sentinels' host:port.
	Addresses []string `yaml:"addresses"`
	// Username and Password authenticate to the sentinels (the master and replicas take
	// redis.username and redis.password).
	Username string `yaml:"username"`
	Password string `yaml:"password"`
}

// RedisCluster lists nodes of a Redis Cluster to learn the cluster's layout from.
type RedisCluster struct {
	// Addresses are some (or all) of the cluster's nodes, host:port.
	Addresses []string `yaml:"addresses"`
}

// Enabled reports whether a server is configured (address, url, sentinel or cluster).
func (r *Redis) Enabled() bool {
	return r.Address != "" || r.URL != "" || r.Sentinel.Master != "" || len(r.Sentinel.Addresses) > 0 ||
		len(r.Cluster.Addresses) > 0
}

// InfluxDB configures the line-protocol sink.
type InfluxDB struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8086; empty turns the sink off.
	URL string `yaml:"url"`
	// Database is the 1.x database (created when missing) or the 2.x bucket.
	Database string `yaml:"database"`
	// API is "v1" (POST /write?db=) or "v2" (POST /api/v2/write?bucket=&org=).
	API string `yaml:"api"`
	// Org and Token are for the 2.x API (Token also works as a 1.x password-less token).
	Org   string `yaml:"org"`
	Token string `yaml:"token"`
	// Schema is "intake" (the measurements of docs/export.md) or "intcollector"
	// (INTCollector's flow_stat, flow_hop_latency, port_tx_utilize, queue_occupancy).
	Schema string `yaml:"schema"`
	// Timestamp is "receive" (the collector's receive time) or "int" (the INT data's own
	// timestamp: hop egress time, report ingress time; receive time where there is none).
	Timestamp string `yaml:"timestamp"`
	// Batch is the most lines per request (at most 5000).
	Batch int `yaml:"batch"`
	// Gzip compresses request bodies.
	Gzip bool `yaml:"gzip"`
}

// Prometheus configures the Prometheus outputs.
type Prometheus struct {
	// Gauges exposes the latest value of every live key as a gauge on /metrics.
	Gauges bool `yaml:"gauges"`
	// SeriesLimit bounds the gauge series; values of further keys are dropped and counted.
	SeriesLimit int `yaml:"series_limit"`
	// RemoteWrite is the remote-write receiver's URL (e.g.
	// http://127.0.0.1:9090/api/v1/write); empty turns remote write off.
	RemoteWrite string `yaml:"remote_write"`
	// Batch is the most samples per remote-write request.
	Batch int `yaml:"batch"`
}

// MaxInfluxBatch is the largest line batch (the InfluxDB documentation's recommended 5000).
const MaxInfluxBatch = 5000

// DefaultConfig returns the documented defaults: no network sink configured, gauges on.
func DefaultConfig() Config {
	return Config{
		Period:     10 * time.Second,
		Queue:      20000,
		Flush:      time.Second,
		BackoffMin: 100 * time.Millisecond,
		BackoffMax: 10 * time.Second,
		InfluxDB: InfluxDB{Database: "intake", API: "v1", Schema: "intake", Timestamp: "receive",
			Batch: MaxInfluxBatch, Gzip: true},
		Prometheus: Prometheus{Gauges: true, SeriesLimit: 10000, Batch: 2000},
		Redis: Redis{EventsStream: "intake:events", FlowsStream: "intake:flows", MaxLen: 100000,
			HashPrefix: "intake:flow:", HistogramPrefix: "intake:hist:", HashPeriod: 10 * time.Second, TTL: 5 * time.Minute,
			Queue: 20000, Batch: 512, Timeout: 2 * time.Second},
	}
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if c.Period < 0 {
		return fmt.Errorf("period: %s: must be 0 (off) or positive", c.Period)
	}
	if c.Period > 0 && c.Period < 10*time.Millisecond {
		return fmt.Errorf("period: %s: must be at least 10ms (or 0: off)", c.Period)
	}
	if c.Queue < 1 || c.Queue > 1<<22 {
		return fmt.Errorf("queue: %d: must be 1-%d", c.Queue, 1<<22)
	}
	if c.Flush < time.Millisecond {
		return fmt.Errorf("flush: %s: must be at least 1ms", c.Flush)
	}
	if c.BackoffMin <= 0 || c.BackoffMax < c.BackoffMin {
		return fmt.Errorf("backoff_max: %s: must be positive and at least backoff_min (%s)", c.BackoffMax, c.BackoffMin)
	}
	in := &c.InfluxDB
	if in.URL != "" {
		if u, err := url.Parse(in.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("influxdb.url: %q: must be an http:// or https:// URL", in.URL)
		}
	}
	if in.Database == "" {
		return fmt.Errorf("influxdb.database: \"\": must not be empty")
	}
	if in.API != "v1" && in.API != "v2" {
		return fmt.Errorf("influxdb.api: %q: must be v1 (/write) or v2 (/api/v2/write)", in.API)
	}
	if in.Schema != "intake" && in.Schema != "intcollector" {
		return fmt.Errorf("influxdb.schema: %q: must be intake or intcollector", in.Schema)
	}
	if in.Timestamp != "receive" && in.Timestamp != "int" {
		return fmt.Errorf("influxdb.timestamp: %q: must be receive or int", in.Timestamp)
	}
	if in.Batch < 1 || in.Batch > MaxInfluxBatch {
		return fmt.Errorf("influxdb.batch: %d: must be 1-%d lines", in.Batch, MaxInfluxBatch)
	}
	p := &c.Prometheus
	if p.SeriesLimit < 0 {
		return fmt.Errorf("prometheus.series_limit: %d: must be 0 or more", p.SeriesLimit)
	}
	if p.RemoteWrite != "" {
		if u, err := url.Parse(p.RemoteWrite); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("prometheus.remote_write: %q: must be an http:// or https:// URL", p.RemoteWrite)
		}
	}
	if p.Batch < 1 || p.Batch > 100000 {
		return fmt.Errorf("prometheus.batch: %d: must be 1-100000 samples", p.Batch)
	}
	return c.Redis.validate()
}

func (r *Redis) validate() error {
	if err := r.validateServer(); err != nil {
		return err
	}
	if r.EventsStream == "" {
		return fmt.Errorf("redis.events_stream: \"\": must not be empty")
	}
	if r.FlowsStream == "" {
		return fmt.Errorf("redis.flows_stream: \"\": must not be empty")
	}
	if r.MaxLen < 1 {
		return fmt.Errorf("redis.maxlen: %d: must be at least 1", r.MaxLen)
	}
	if r.HashPeriod < 0 || r.HashPeriod > 0 && r.HashPeriod < 10*time.Millisecond {
		return fmt.Errorf("redis.hash_period: %s: must be 0 (off) or at least 10ms", r.HashPeriod)
	}
	if r.TTL < time.Second {
		return fmt.Errorf("redis.ttl: %s: must be at least 1s", r.TTL)
	}
	if r.Queue < 1 || r.Queue > 1<<22 {
		return fmt.Errorf("redis.queue: %d: must be 1-%d", r.Queue, 1<<22)
	}
	if r.Batch < 1 || r.Batch > 10000 {
		return fmt.Errorf("redis.batch: %d: must be 1-10000 commands", r.Batch)
	}
	if r.Timeout < time.Millisecond {
		return fmt.Errorf("redis.timeout: %s: must be at least 1ms", r.Timeout)
	}
	return nil
}

// validateServer checks the keys that say where the server is and how to connect to it.
func (r *Redis) validateServer() error {
	hostPort := func(key, a string) error {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("%s: %q: must be host:port", key, a)
		}
		return nil
	}
	if r.Address != "" {
		if err := hostPort("redis.address", r.Address); err != nil {
			return err
		}
	}
	rediss, urlPassword := false, ""
	if r.URL != "" {
		shown := r.URL
		u, err := url.Parse(r.URL)
		if err == nil {
			shown = u.Redacted()
		}
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return fmt.Errorf("redis.url: %q: must be a redis:// or rediss:// URL", shown)
		}
		if r.Address != "" {
			return fmt.Errorf("redis.url: %q: must not be set with redis.address (%q): one of them names the server", shown, r.Address)
		}
		o, err := redis.ParseURL(r.URL)
		if err != nil {
			return fmt.Errorf("redis.url: %q: must be a redis:// or rediss:// URL, redis://[user[:password]@]host[:port][/db]: %v", shown, err)
		}
		if r.DB == 0 && (o.DB < 0 || o.DB > 15) {
			return fmt.Errorf("redis.url: %q: database %d: must be 0-15", shown, o.DB)
		}
		rediss, urlPassword = u.Scheme == "rediss", o.Password
	}
	if r.DB < 0 || r.DB > 15 {
		return fmt.Errorf("redis.db: %d: must be 0-15", r.DB)
	}
	if r.Username != "" && r.Password == "" && urlPassword == "" {
		return fmt.Errorf("redis.username: %q: needs redis.password (an ACL user with nopass takes any password)", r.Username)
	}
	sn := &r.Sentinel
	if sn.Master != "" || len(sn.Addresses) > 0 || sn.Username != "" || sn.Password != "" {
		if sn.Master == "" {
			return fmt.Errorf("redis.sentinel.master: \"\": must name the master the sentinels monitor")
		}
		if len(sn.Addresses) == 0 {
			return fmt.Errorf("redis.sentinel.addresses: []: must list at least one sentinel, host:port")
		}
		for i, a := range sn.Addresses {
			if err := hostPort(fmt.Sprintf("redis.sentinel.addresses[%d]", i), a); err != nil {
				return err
			}
		}
		if sn.Username != "" && sn.Password == "" {
			return fmt.Errorf("redis.sentinel.username: %q: needs redis.sentinel.password", sn.Username)
		}
		if r.Address != "" || r.URL != "" {
			return fmt.Errorf("redis.sentinel.master: %q: must not be set with redis.address or redis.url: the sentinels name the master's address", sn.Master)
		}
	}
	if cl := r.Cluster.Addresses; len(cl) > 0 {
		for i, a := range cl {
			if err := hostPort(fmt.Sprintf("redis.cluster.addresses[%d]", i), a); err != nil {
				return err
			}
		}
		if r.Address != "" || r.URL != "" || sn.Master != "" {
			return fmt.Errorf("redis.cluster.addresses: %q: must not be set with redis.address, redis.url or redis.sentinel", cl)
		}
		if r.DB != 0 {
			return fmt.Errorf("redis.db: %d: must be 0 with redis.cluster (a cluster has database 0 only)", r.DB)
		}
	}
	if !r.TLS && !rediss {
		for _, k := range []struct{ key, v string }{{"tls_ca", r.TLSCA}, {"tls_cert", r.TLSCert}, {"tls_key", r.TLSKey},
			{"tls_server_name", r.TLSServerName}} {
			if k.v != "" {
				return fmt.Errorf("redis.%s: %q: needs redis.tls: true (or a rediss:// redis.url)", k.key, k.v)
			}
		}
		if r.TLSInsecureSkipVerify {
			return fmt.Errorf("redis.tls_insecure_skip_verify: true: needs redis.tls: true (or a rediss:// redis.url)")
		}
	}
	if (r.TLSCert == "") != (r.TLSKey == "") {
		if r.TLSCert == "" {
			return fmt.Errorf("redis.tls_cert: \"\": must be set with redis.tls_key (%q)", r.TLSKey)
		}
		return fmt.Errorf("redis.tls_key: \"\": must be set with redis.tls_cert (%q)", r.TLSCert)
	}
	_, err := r.tlsConfig(r.TLS || rediss, nil)
	return err
}
