// Package cluster owns intake's partitioning across collectors (DART §3, DTA §3: each key
// belongs to one collector, chosen by a hash that reporters and queries agree on): the
// `cluster` configuration section (the members, in an order every member shares, and which
// one this process is), the reporters' --collectors lists, and the API routing that lets any
// member answer any query (router.go): key lookups are forwarded to the owner, aggregate
// queries are fanned out to every member and merged (merge.go). The hash that maps a key to
// its owner and the key each report is partitioned by are package partition's, which the
// generator and the emulated fabric share without this package's HTTP side.
package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/partition"
)

// Config is the `cluster` section (docs/config.md, docs/scale-out.md). No members: one
// collector alone, no routing.
type Config struct {
	// Self is the name of this collector among Members.
	Self string `yaml:"self"`
	// Members are the collectors of the cluster, in the order the hash indexes: every member
	// (and every reporter and load balancer) must have the same list in the same order.
	Members []Member `yaml:"members"`
	// Timeout bounds a request to another member (a forwarded lookup, a fan-out's part).
	// A member that does not answer within it is reported missing.
	Timeout time.Duration `yaml:"timeout"`
}

// Member is one collector of the cluster.
type Member struct {
	// Name identifies the member in answers ("missing": [names]) and in cluster.self.
	Name string `yaml:"name"`
	// API is the member's HTTP API, host:port or http(s)://host:port, as other members
	// reach it.
	API string `yaml:"api"`
	// Reports are the UDP addresses (host:port) where reporters send the member's reports,
	// one per listener it has (telemetry reports, DTA, INT-label): what a switch or load
	// balancer is configured with, shown by `intake status --cluster`.
	Reports []string `yaml:"reports"`
}

// DefaultTimeout is cluster.timeout's default.
const DefaultTimeout = 2 * time.Second

// DefaultConfig returns the documented defaults: no cluster.
func DefaultConfig() Config { return Config{Timeout: DefaultTimeout} }

// Enabled reports whether the collector is a member of a cluster.
func (c *Config) Enabled() bool { return len(c.Members) > 0 }

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if len(c.Members) == 0 {
		if c.Self != "" {
			return fmt.Errorf("self: %s: no cluster.members to be one of", c.Self)
		}
		return nil
	}
	if len(c.Members) > partition.MaxMembers {
		return fmt.Errorf("members: %d members: at most %d", len(c.Members), partition.MaxMembers)
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("timeout: %v: must be positive, e.g. %v", c.Timeout, DefaultTimeout)
	}
	seen := map[string]bool{}
	var names []string
	for i, m := range c.Members {
		if !validName(m.Name) {
			return fmt.Errorf("members[%d].name: %q: must be 1-64 letters, digits, '.', '_' or '-'", i, m.Name)
		}
		if seen[m.Name] {
			return fmt.Errorf("members[%d].name: %s: named twice", i, m.Name)
		}
		seen[m.Name] = true
		names = append(names, m.Name)
		if _, err := BaseURL(m.API); err != nil {
			return fmt.Errorf("members[%d].api: %q: %v", i, m.API, err)
		}
		for j, a := range m.Reports {
			if _, p, err := net.SplitHostPort(a); err != nil || !validPort(p) {
				return fmt.Errorf("members[%d].reports[%d]: %q: must be host:port", i, j, a)
			}
		}
	}
	if c.Self == "" {
		return fmt.Errorf("self: required with members (one of %s)", strings.Join(names, ", "))
	}
	if !seen[c.Self] {
		return fmt.Errorf("self: %s: not a member (one of %s)", c.Self, strings.Join(names, ", "))
	}
	return nil
}

// SelfIndex is Self's index in Members (-1 without a cluster).
func (c *Config) SelfIndex() int {
	for i, m := range c.Members {
		if m.Name == c.Self {
			return i
		}
	}
	return -1
}

// Names returns the members' names in order.
func (c *Config) Names() []string {
	ns := make([]string, len(c.Members))
	for i, m := range c.Members {
		ns[i] = m.Name
	}
	return ns
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

// BaseURL turns a member's api (host:port, or a URL with http:// or https://) into the URL
// requests are built on.
func BaseURL(a string) (string, error) {
	if a == "" {
		return "", fmt.Errorf("required: host:port of the member's HTTP API")
	}
	base := a
	if !strings.Contains(a, "://") {
		base = "http://" + a
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("must be host:port or http(s)://host:port")
	}
	if _, p, err := net.SplitHostPort(u.Host); err != nil || !validPort(p) {
		return "", fmt.Errorf("must be host:port or http(s)://host:port")
	}
	return u.Scheme + "://" + u.Host, nil
}

// ParseCollectors reads the --collectors flag of `intake gen` and `intake fabric`: a
// comma-separated list of the members' report addresses in cluster.members order, each
// HOST:PORT, or HOST alone for port defPort.
func ParseCollectors(s string, defPort int) ([]string, error) {
	var out []string
	for i, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("collector %d: empty (want HOST[:PORT],HOST[:PORT],...)", i+1)
		}
		if _, p, err := net.SplitHostPort(a); err == nil {
			if !validPort(p) {
				return nil, fmt.Errorf("collector %d: %q: port must be 1-65535", i+1, a)
			}
			out = append(out, a)
			continue
		}
		host := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if strings.Contains(host, ":") { // only an IPv6 address may have colons without a port
			if _, err := netip.ParseAddr(host); err != nil {
				return nil, fmt.Errorf("collector %d: %q: want HOST or HOST:PORT", i+1, a)
			}
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(defPort)))
	}
	if len(out) > partition.MaxMembers {
		return nil, fmt.Errorf("%d collectors: at most %d", len(out), partition.MaxMembers)
	}
	return out, nil
}

// AtPort reads a comma-separated list of hosts (the --collectors of `intake fabric`, in
// cluster.members order) and gives each the port of addr (host:port): the members listen on
// the same ports.
func AtPort(hosts, addr string) ([]string, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil || !validPort(p) {
		return nil, fmt.Errorf("%q: want host:port", addr)
	}
	port, _ := strconv.Atoi(p)
	out, err := ParseCollectors(hosts, port)
	if err != nil {
		return nil, err
	}
	for _, a := range out {
		if _, ap, _ := net.SplitHostPort(a); ap != p {
			return nil, fmt.Errorf("%s: hosts only (the ports are --label's and --report's)", a)
		}
	}
	return out, nil
}
