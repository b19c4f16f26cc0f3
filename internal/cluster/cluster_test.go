package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Self: "b", Timeout: time.Second, Members: []Member{
		{Name: "a", API: "127.0.0.1:8041", Reports: []string{"127.0.0.1:32766"}},
		{Name: "b", API: "https://10.0.0.2:8040"},
	}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.SelfIndex() != 1 || strings.Join(ok.Names(), ",") != "a,b" {
		t.Error(ok.SelfIndex(), ok.Names())
	}
	none := DefaultConfig()
	if err := none.Validate(); err != nil || none.Enabled() || none.SelfIndex() != -1 {
		t.Errorf("no cluster: %v", err)
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Members = nil }, "self: b: no cluster.members to be one of"},
		{func(c *Config) { c.Self = "" }, "self: required with members (one of a, b)"},
		{func(c *Config) { c.Self = "z" }, "self: z: not a member (one of a, b)"},
		{func(c *Config) { c.Timeout = 0 }, "timeout: 0s: must be positive, e.g. 2s"},
		{func(c *Config) { c.Members[1].Name = "a" }, "members[1].name: a: named twice"},
		{func(c *Config) { c.Members[0].Name = "a b" }, `members[0].name: "a b": must be 1-64 letters, digits, '.', '_' or '-'`},
		{func(c *Config) { c.Members[0].API = "" }, `members[0].api: "": required: host:port of the member's HTTP API`},
		{func(c *Config) { c.Members[0].API = "ftp://x:1" }, `members[0].api: "ftp://x:1": must be host:port or http(s)://host:port`},
		{func(c *Config) { c.Members[0].API = "127.0.0.1" }, `members[0].api: "127.0.0.1": must be host:port or http(s)://host:port`},
		{func(c *Config) { c.Members[0].Reports = []string{"x:0"} }, `members[0].reports[0]: "x:0": must be host:port`},
	} {
		cfg := ok
		cfg.Members = append([]Member(nil), ok.Members...)
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

func TestParseCollectors(t *testing.T) {
	got, err := ParseCollectors("127.0.0.1:9000, 127.0.0.2,[::1]:7,::1", 40040)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "127.0.0.1:9000 127.0.0.2:40040 [::1]:7 [::1]:40040" {
		t.Errorf("%q", got)
	}
	if got, err := AtPort("127.0.0.2,::1", "127.0.0.1:40050"); err != nil || strings.Join(got, " ") != "127.0.0.2:40050 [::1]:40050" {
		t.Errorf("AtPort: %q %v", got, err)
	}
	if _, err := AtPort("127.0.0.2:9", "127.0.0.1:40050"); err == nil || err.Error() != "127.0.0.2:9: hosts only (the ports are --label's and --report's)" {
		t.Errorf("AtPort with a port: %v", err)
	}
	if _, err := AtPort("127.0.0.2", "x"); err == nil || err.Error() != `"x": want host:port` {
		t.Errorf("AtPort of a bad address: %v", err)
	}
	for in, want := range map[string]string{
		"a,,b":   "collector 2: empty (want HOST[:PORT],HOST[:PORT],...)",
		"a:0":    `collector 1: "a:0": port must be 1-65535`,
		"a:x":    `collector 1: "a:x": port must be 1-65535`,
		"h:1:2]": `collector 1: "h:1:2]": want HOST or HOST:PORT`,
	} {
		if _, err := ParseCollectors(in, 1); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", in, err, want)
		}
	}
}
