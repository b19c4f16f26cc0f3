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
	// Kafka is the Kafka output (export/kafka.go, docs/kafka.md): decoded reports, events,
	// periodic snapshots and evicted flow records, each to its own topic.
	Kafka Kafka `yaml:"kafka"`
}

// Kafka configures the Kafka sink. No brokers turns it off.
type Kafka struct {
	// Brokers are seed brokers, host:port; the client learns the rest of the cluster.
	Brokers []string `yaml:"brokers"`
	// Topics name the topic of each kind of message; an empty name turns that kind off.
	Topics KafkaTopics `yaml:"topics"`
	// CreateTopics creates, at start, a topic the brokers do not have (their default
	// partitions and replication); without it a missing topic stops the start.
	CreateTopics bool `yaml:"create_topics"`
	// Reports is which decoded reports go to topics.reports: off, sampled (one in
	// SampleEvery per ingest worker) or full.
	Reports     string `yaml:"reports"`
	SampleEvery int    `yaml:"sample_every"`
	// Encoding is protobuf (kafkapb.Message, binary) or json (the same message as protojson).
	Encoding string `yaml:"encoding"`
	// Compression of produced batches: none, gzip, snappy, lz4 or zstd.
	Compression string `yaml:"compression"`
	// Acks is all (every in-sync replica; idempotent writes), leader or none.
	Acks string `yaml:"acks"`
	// BatchBytes is the largest batch sent to one partition (the broker's
	// message.max.bytes bounds it); Linger is how long a partition's batch waits to fill
	// (0: sent as soon as the connection is free).
	BatchBytes int           `yaml:"batch_bytes"`
	Linger     time.Duration `yaml:"linger"`
	// Queue is the number of messages of each kind waiting for the producer; when full, new
	// ones are dropped and counted (ingest never waits). Buffered is the most messages of
	// one kind (topic) the producer holds in flight and retrying: each topic has its own, so
	// that one topic in trouble cannot take another's room.
	Queue    int `yaml:"queue"`
	Buffered int `yaml:"buffered"`
	// DeliveryTimeout is how long the producer retries a message (a broker down, a leader
	// moving) before it is dropped and counted (reason failed).
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
	// SASL authenticates to the brokers.
	SASL KafkaSASL `yaml:"sasl"`
	// TLS connects over TLS.
	TLS KafkaTLS `yaml:"tls"`
}

// KafkaTopics name the topic of each kind of message.
type KafkaTopics struct {
	Reports   string `yaml:"reports"`
	Events    string `yaml:"events"`
	Snapshots string `yaml:"snapshots"`
	Flows     string `yaml:"flows"`
}

// KafkaSASL is SASL authentication: mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty:
// none).
type KafkaSASL struct {
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// KafkaTLS is TLS to the brokers: the server's certificate verified against CA (a PEM file;
// empty: the system's roots) and ServerName (empty: the host connected to); Cert and Key
// are a client certificate (PEM files); InsecureSkipVerify turns verification off (tests
// only).
type KafkaTLS struct {
	Enabled            bool   `yaml:"enabled"`
	CA                 string `yaml:"ca"`
	Cert               string `yaml:"cert"`
	Key                string `yaml:"key"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Enabled reports whether brokers are configured.
func (k *Kafka) Enabled() bool { return len(k.Brokers) > 0 }

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
		Kafka: Kafka{Topics: KafkaTopics{Reports: "intake.reports", Events: "intake.events", Snapshots: "intake.snapshots",
			Flows: "intake.flows"}, Reports: "off", SampleEvery: 100, Encoding: "protobuf", Compression: "lz4", Acks: "all",
			BatchBytes: 1 << 20, Linger: 5 * time.Millisecond, Queue: 20000, Buffered: 100000, DeliveryTimeout: 30 * time.Second},
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
	if err := c.Redis.validate(); err != nil {
		return err
	}
	return c.Kafka.validate()
}

func (k *Kafka) validate() error {
	for i, b := range k.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return fmt.Errorf("kafka.brokers[%d]: %q: must be host:port", i, b)
		}
	}
	switch k.Reports {
	case "off", "sampled", "full":
	default:
		return fmt.Errorf("kafka.reports: %q: must be off, sampled or full", k.Reports)
	}
	if k.SampleEvery < 1 {
		return fmt.Errorf("kafka.sample_every: %d: must be at least 1", k.SampleEvery)
	}
	if k.Encoding != "protobuf" && k.Encoding != "json" {
		return fmt.Errorf("kafka.encoding: %q: must be protobuf or json", k.Encoding)
	}
	if _, ok := kafkaCompression[k.Compression]; !ok {
		return fmt.Errorf("kafka.compression: %q: must be none, gzip, snappy, lz4 or zstd", k.Compression)
	}
	if k.Acks != "all" && k.Acks != "leader" && k.Acks != "none" {
		return fmt.Errorf("kafka.acks: %q: must be all, leader or none", k.Acks)
	}
	if k.BatchBytes < 1024 || k.BatchBytes > 1<<30 {
		return fmt.Errorf("kafka.batch_bytes: %d: must be 1024-%d", k.BatchBytes, 1<<30)
	}
	if k.Linger < 0 {
		return fmt.Errorf("kafka.linger: %s: must be 0 or positive", k.Linger)
	}
	if k.Queue < 1 || k.Queue > 1<<22 {
		return fmt.Errorf("kafka.queue: %d: must be 1-%d", k.Queue, 1<<22)
	}
	if k.Buffered < 1 || k.Buffered > 1<<24 {
		return fmt.Errorf("kafka.buffered: %d: must be 1-%d", k.Buffered, 1<<24)
	}
	if k.DeliveryTimeout < time.Millisecond {
		return fmt.Errorf("kafka.delivery_timeout: %s: must be at least 1ms", k.DeliveryTimeout)
	}
	switch k.SASL.Mechanism {
	case "":
		if k.SASL.Username != "" || k.SASL.Password != "" {
			return fmt.Errorf("kafka.sasl.mechanism: \"\": must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with kafka.sasl.username")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if k.SASL.Username == "" {
			return fmt.Errorf("kafka.sasl.username: \"\": must be set with kafka.sasl.mechanism %s", k.SASL.Mechanism)
		}
	default:
		return fmt.Errorf("kafka.sasl.mechanism: %q: must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", k.SASL.Mechanism)
	}
	t := &k.TLS
	if !t.Enabled && (t.CA != "" || t.Cert != "" || t.Key != "" || t.ServerName != "" || t.InsecureSkipVerify) {
		return fmt.Errorf("kafka.tls.enabled: false: must be true with the other kafka.tls keys")
	}
	if (t.Cert == "") != (t.Key == "") {
		return fmt.Errorf("kafka.tls.cert: %q, kafka.tls.key: %q: must be set together", t.Cert, t.Key)
	}
	_, err := t.config()
	return err
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
