package group

import (
	"testing"
	"time"
)

// TestConfig: every key is checked, with a message that names it, the value and what is
// allowed; the defaults are valid.
func TestConfig(t *testing.T) {
	d := DefaultConfig()
	if err := d.Validate(); err != nil || d.Enabled() {
		t.Fatalf("defaults: %v (enabled %v)", err, d.Enabled())
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Role = "outlet" }, `role: "outlet": must be inlet or processor (or empty: one collector)`},
		{func(c *Config) { c.Brokers = []string{"kafka"} }, `brokers[0]: "kafka": must be host:port`},
		{func(c *Config) { c.Topic = "" }, `topic: "": must be set`},
		{func(c *Config) { c.GroupID = "" }, `group_id: "": must be set`},
		{func(c *Config) { c.Name = "a@b" }, `name: "a@b": must not contain '@' or spaces`},
		{func(c *Config) { c.Advertise = "host" }, `advertise: "host": must be host:port`},
		{func(c *Config) { c.Compression = "brotli" }, `compression: "brotli": must be none, gzip, snappy, lz4 or zstd`},
		{func(c *Config) { c.BatchBytes = 10 }, `batch_bytes: 10: must be 1024-1073741824`},
		{func(c *Config) { c.Buffered = 0 }, `buffered: 0: must be 1-16777216`},
		{func(c *Config) { c.CommitInterval = time.Millisecond }, `commit_interval: 1ms: must be at least 10ms`},
		{func(c *Config) { c.SessionTimeout = 0 }, `session_timeout: 0s: must be 1s-30m (the brokers' group.min/max.session.timeout.ms bound it too)`},
		{func(c *Config) { c.Timeout = 0 }, `timeout: 0s: must be positive`},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// TestClientID: a processor's client id carries its name and API address, and only an
// intake processor's parses.
func TestClientID(t *testing.T) {
	id := clientID("p1", "10.0.0.1:8040")
	if id != "intake:p1@10.0.0.1:8040" {
		t.Fatalf("clientID %q", id)
	}
	if n, a, ok := parseClientID(id); !ok || n != "p1" || a != "10.0.0.1:8040" {
		t.Errorf("parse %q: %q %q %v", id, n, a, ok)
	}
	for _, bad := range []string{"kgo", "intake:p1", "consumer-1@host"} {
		if _, _, ok := parseClientID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
