package redis

import (
	"fmt"
	"net"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Config is the export.redis section: the Redis sink (redis.go). The server is one of: address (or
// url), a Sentinel-monitored master (sentinel), or a cluster (cluster); none of them turns
// the sink off.
type Config struct {
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
	Sentinel Sentinel `yaml:"sentinel"`
	// Cluster writes to a Redis Cluster (go-redis's cluster client).
	Cluster Cluster `yaml:"cluster"`
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

// Sentinel names the master and the sentinels that know where it is.
type Sentinel struct {
	// Master is the master's name in the sentinels' configuration (sentinel monitor NAME).
	Master string `yaml:"master"`
	// Addresses are the sentinels' host:port.
	Addresses []string `yaml:"addresses"`
	// Username and Password authenticate to the sentinels (the master and replicas take
	// redis.username and redis.password).
	Username string `yaml:"username"`
	Password string `yaml:"password"`
}

// Cluster lists nodes of a Redis Cluster to learn the cluster's layout from.
type Cluster struct {
	// Addresses are some (or all) of the cluster's nodes, host:port.
	Addresses []string `yaml:"addresses"`
}

// Enabled reports whether a server is configured (address, url, sentinel or cluster).
func (r *Config) Enabled() bool {
	return r.Address != "" || r.URL != "" || r.Sentinel.Master != "" || len(r.Sentinel.Addresses) > 0 ||
		len(r.Cluster.Addresses) > 0
}

// DefaultConfig returns the documented defaults: no server (the sink off).
func DefaultConfig() Config {
	return Config{EventsStream: "intake:events", FlowsStream: "intake:flows", MaxLen: 100000,
		HashPrefix: "intake:flow:", HistogramPrefix: "intake:hist:", HashPeriod: 10 * time.Second, TTL: 5 * time.Minute,
		Queue: 20000, Batch: 512, Timeout: 2 * time.Second}
}

// Validate reports the first invalid setting as "redis.key: value: what is allowed", the
// key relative to the export section.
func (r *Config) Validate() error {
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
func (r *Config) validateServer() error {
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
		o, err := goredis.ParseURL(r.URL)
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
