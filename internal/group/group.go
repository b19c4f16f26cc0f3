// Package group owns intake's scale-out on Kafka's own consumer groups (docs/scale-out.md,
// "Inlets and processors"): the `group` configuration section and its two roles. An inlet
// receives and decodes reports as a single collector does and produces every one, in
// telemetry.Report's binary form, to the raw topic, in the partition of its owner key
// (package partition: CRC-32C of the key issue 17 defined, modulo the topic's partitions),
// so that a flow and its DTA postcards stay together; reports travel in frames (frame.go).
// A processor joins the consumer group on that topic (the cooperative-sticky balancer) and
// hands the reports of the partitions it is assigned to the processors through ingest
// feeds, as a listener's worker would. Its state follows its partitions (state.go):
// snapshots of the flow cache and the detector's flows on a compacted topic, the DTA stores
// by replay. Queries find a key's owner from the group's assignment (Members, a
// cluster.Membership).
//
// The papers' collectors partition keys across collectors (DART §3, DTA §3); this package
// lets Kafka keep the partitions, their replicas and the group's membership instead of a
// static list.
package group

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The roles.
const (
	RoleInlet     = "inlet"
	RoleProcessor = "processor"
)

// Config is the `group` section (docs/config.md, "group"). No role: a single collector.
type Config struct {
	// Role is "" (one process does everything, the default), inlet or processor.
	Role string `yaml:"role"`
	// Brokers are the seed brokers; empty: export.kafka.brokers (whose TLS and SASL
	// settings the group uses too).
	Brokers []string `yaml:"brokers"`
	// Topic is the raw topic inlets produce to and processors consume.
	Topic string `yaml:"topic"`
	// GroupID is the processors' consumer group.
	GroupID string `yaml:"group_id"`
	// Name is this member's name in answers and status; default the host name.
	Name string `yaml:"name"`
	// Advertise is the API address (host:port) other members reach this one at; default
	// http.address.
	Advertise string `yaml:"advertise"`
	// Compression of the inlet's batches: none, gzip, snappy, lz4 or zstd.
	Compression string `yaml:"compression"`
	// Linger and BatchBytes shape the inlet's batches per partition.
	Linger     time.Duration `yaml:"linger"`
	BatchBytes int           `yaml:"batch_bytes"`
	// Buffered is the most reports an inlet holds unacknowledged; beyond it a report is
	// dropped and counted (the receive path never waits).
	Buffered int `yaml:"buffered"`
	// CommitInterval is how often a processor commits the offsets it has processed.
	CommitInterval time.Duration `yaml:"commit_interval"`
	// StateTopic is the compacted topic the processors' snapshots go to (state.go); empty:
	// no snapshots, a partition's next owner starts from the committed offset with no state.
	StateTopic string `yaml:"state_topic"`
	// SnapshotInterval is how often a processor snapshots its partitions' state besides
	// when it gives one up: what a processor killed outright leaves to be replayed.
	SnapshotInterval time.Duration `yaml:"snapshot_interval"`
	// SessionTimeout is how long the group waits for a silent processor before giving its
	// partitions to the others.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// Timeout bounds a query forwarded to another member.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultConfig returns the documented defaults: no role.
func DefaultConfig() Config {
	return Config{Topic: "intake.raw", GroupID: "intake", Compression: "snappy", Linger: 5 * time.Millisecond,
		BatchBytes: 1 << 20, Buffered: 100000, CommitInterval: time.Second, StateTopic: "intake.state",
		SnapshotInterval: 30 * time.Second, SessionTimeout: 6 * time.Second,
		Timeout: 2 * time.Second}
}

// Enabled reports whether this collector has a role in a group.
func (c *Config) Enabled() bool { return c.Role != "" }

// FillDefaults sets the name to the host's when it is empty.
func (c *Config) FillDefaults() {
	if c.Name == "" && c.Enabled() {
		c.Name, _ = os.Hostname()
	}
}

var compression = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	switch c.Role {
	case "", RoleInlet, RoleProcessor:
	default:
		return fmt.Errorf("role: %q: must be inlet or processor (or empty: one collector)", c.Role)
	}
	for i, b := range c.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return fmt.Errorf("brokers[%d]: %q: must be host:port", i, b)
		}
	}
	if c.Topic == "" {
		return fmt.Errorf("topic: \"\": must be set")
	}
	if c.GroupID == "" {
		return fmt.Errorf("group_id: \"\": must be set")
	}
	if strings.ContainsAny(c.Name, "@ \t\n") {
		return fmt.Errorf("name: %q: must not contain '@' or spaces", c.Name)
	}
	if c.Advertise != "" {
		if _, port, err := net.SplitHostPort(c.Advertise); err != nil || port == "" {
			return fmt.Errorf("advertise: %q: must be host:port", c.Advertise)
		}
	}
	if _, ok := compression[c.Compression]; !ok {
		return fmt.Errorf("compression: %q: must be none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	if c.Linger < 0 {
		return fmt.Errorf("linger: %s: must be 0 or positive", c.Linger)
	}
	if c.BatchBytes < 1024 || c.BatchBytes > 1<<30 {
		return fmt.Errorf("batch_bytes: %d: must be 1024-%d", c.BatchBytes, 1<<30)
	}
	if c.Buffered < 1 || c.Buffered > 1<<24 {
		return fmt.Errorf("buffered: %d: must be 1-%d", c.Buffered, 1<<24)
	}
	if c.CommitInterval < 10*time.Millisecond {
		return fmt.Errorf("commit_interval: %s: must be at least 10ms", c.CommitInterval)
	}
	if c.SnapshotInterval < 100*time.Millisecond {
		return fmt.Errorf("snapshot_interval: %s: must be at least 100ms", c.SnapshotInterval)
	}
	if c.StateTopic != "" && c.StateTopic == c.Topic {
		return fmt.Errorf("state_topic: %q: must differ from topic", c.StateTopic)
	}
	if c.SessionTimeout < time.Second || c.SessionTimeout > 30*time.Minute {
		return fmt.Errorf("session_timeout: %s: must be 1s-30m (the brokers' group.min/max.session.timeout.ms bound it too)", c.SessionTimeout)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("timeout: %s: must be positive", c.Timeout)
	}
	return nil
}

// clientID is how a processor names itself to the group: its name and the API address the
// other members reach it at, which queries read back from the group's description.
func clientID(name, advertise string) string { return "intake:" + name + "@" + advertise }

// parseClientID reverses clientID; ok is false for a member that is not an intake processor.
func parseClientID(id string) (name, advertise string, ok bool) {
	rest, ok := strings.CutPrefix(id, "intake:")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "@")
}
