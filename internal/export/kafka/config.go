package kafka

import (
	"fmt"
	"net"
	"time"
)

// Config is the export.kafka section: the Kafka sink (docs/kafka.md). No brokers turns it off.
type Config struct {
	// Brokers are seed brokers, host:port; the client learns the rest of the cluster.
	Brokers []string `yaml:"brokers"`
	// Topics name the topic of each kind of message; an empty name turns that kind off.
	Topics Topics `yaml:"topics"`
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
	SASL SASL `yaml:"sasl"`
	// TLS connects over TLS.
	TLS TLS `yaml:"tls"`
}

// Topics name the topic of each kind of message.
type Topics struct {
	Reports   string `yaml:"reports"`
	Events    string `yaml:"events"`
	Snapshots string `yaml:"snapshots"`
	Flows     string `yaml:"flows"`
}

// SASL is SASL authentication: mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty:
// none).
type SASL struct {
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
}

// TLS is TLS to the brokers: the server's certificate verified against CA (a PEM file;
// empty: the system's roots) and ServerName (empty: the host connected to); Cert and Key
// are a client certificate (PEM files); InsecureSkipVerify turns verification off (tests
// only).
type TLS struct {
	Enabled            bool   `yaml:"enabled"`
	CA                 string `yaml:"ca"`
	Cert               string `yaml:"cert"`
	Key                string `yaml:"key"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Enabled reports whether brokers are configured.
func (k *Config) Enabled() bool { return len(k.Brokers) > 0 }

// DefaultConfig returns the documented defaults: no brokers (the sink off).
func DefaultConfig() Config {
	return Config{Topics: Topics{Reports: "intake.reports", Events: "intake.events", Snapshots: "intake.snapshots",
		Flows: "intake.flows"}, Reports: "off", SampleEvery: 100, Encoding: "protobuf", Compression: "lz4", Acks: "all",
		BatchBytes: 1 << 20, Linger: 5 * time.Millisecond, Queue: 20000, Buffered: 100000, DeliveryTimeout: 30 * time.Second}
}

// Validate reports the first invalid setting as "kafka.key: value: what is allowed", the
// key relative to the export section.
func (k *Config) Validate() error {
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
	if _, ok := compression[k.Compression]; !ok {
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
