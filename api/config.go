package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/smallfile"
)

// DefaultAddress is http.address's default: loopback only.
const DefaultAddress = "127.0.0.1:8040"

// MaxTokenFile bounds the size of http.token_file.
const MaxTokenFile = 4096

// Config is the `http` section of the configuration file (docs/config.md, docs/security.md).
type Config struct {
	// Address is host:port to listen on; empty disables the server.
	Address string `yaml:"address"`
	// Token, when set, is the bearer token every request but /healthz must carry
	// (Authorization: Bearer <token>); reads only with TokenReads. Empty: no token.
	Token string `yaml:"token"`
	// TokenFile names a file holding the token (its first line), instead of Token: the
	// file can be readable by the collector's user alone, the configuration by more.
	TokenFile string `yaml:"token_file"`
	// TokenReads: the token is required for reads (GET, /metrics) too, not only for writes.
	TokenReads bool `yaml:"token_reads"`
	// AllowedHosts are host names, beyond the bound address, loopback addresses and
	// localhost, that a request's Host header may name (a name the collector is reached
	// by, e.g. behind a reverse proxy). Any other name is refused: a page whose name
	// resolves to the collector (DNS rebinding) must not reach the API.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TLS serves HTTPS when Cert and Key are set.
	TLS TLSConfig `yaml:"tls"`
	// MaxConnections bounds the connections open at once, and MaxConnectionsPerSource those
	// from one source (an IPv4 address or an IPv6 /64). A connection over a cap displaces
	// the cap's oldest idle one, or is closed at once when none is idle (conns.go).
	MaxConnections          int `yaml:"max_connections"`
	MaxConnectionsPerSource int `yaml:"max_connections_per_source"`
	// HeaderTimeout bounds reading a request's header; ReadTimeout the whole request (0:
	// none); WriteTimeout writing its answer (0: none; an event stream sets its own
	// deadline per write); IdleTimeout a keep-alive connection's wait for the next request.
	// The caps, HeaderTimeout and IdleTimeout take their default when 0.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	ReadTimeout   time.Duration `yaml:"read_timeout"`
	WriteTimeout  time.Duration `yaml:"write_timeout"`
	IdleTimeout   time.Duration `yaml:"idle_timeout"`
}

// TLSConfig is the server's certificate.
type TLSConfig struct {
	// Cert and Key are PEM files: the certificate (chain) and its private key.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// keyPair reads the certificate and key (capped, refusing what is not a regular file).
func (t TLSConfig) keyPair() (tls.Certificate, error) { return smallfile.KeyPair(t.Cert, t.Key) }

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{Address: DefaultAddress, TokenReads: true,
		MaxConnections: DefaultMaxConnections, MaxConnectionsPerSource: DefaultMaxConnectionsPerSource,
		HeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
}

// The connection caps' defaults: 1024 connections cost about 20 MiB at most (a goroutine
// and its buffers each, docs/config.md), and a source (a browser, Prometheus, `intake`
// commands, a cluster peer) needs a handful.
const (
	DefaultMaxConnections          = 1024
	DefaultMaxConnectionsPerSource = 64
	// MaxConnections is the most http.max_connections may be.
	MaxConnections = 1 << 16
)

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section. It reads the token file and the TLS files.
func (c *Config) Validate() error {
	if a := c.Address; a != "" {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("address: %s: must be host:port, e.g. %s", a, DefaultAddress)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("address: %s: port must be 0-65535", a)
		}
		if host != "" && host != "localhost" {
			if _, err := netip.ParseAddr(host); err != nil {
				return fmt.Errorf("address: %s: host must be an IP address, localhost or empty", a)
			}
		}
	}
	if c.MaxConnections < 0 || c.MaxConnections > MaxConnections {
		return fmt.Errorf("max_connections: %d: must be 1-%d (0: the default, %d)", c.MaxConnections, MaxConnections, DefaultMaxConnections)
	}
	if n := c.MaxConnectionsPerSource; n < 0 || c.MaxConnections > 0 && n > c.MaxConnections {
		return fmt.Errorf("max_connections_per_source: %d: must be 1-%d, at most max_connections (0: the default, %d)", n, MaxConnections, DefaultMaxConnectionsPerSource)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"header_timeout", c.HeaderTimeout}, {"read_timeout", c.ReadTimeout}, {"write_timeout", c.WriteTimeout}, {"idle_timeout", c.IdleTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s: %s: must not be negative", d.key, d.v)
		}
	}
	if c.Token != "" && c.TokenFile != "" {
		return fmt.Errorf("token_file: %s: not with token (one or the other)", c.TokenFile)
	}
	if c.Token != "" {
		if err := checkToken(c.Token); err != nil {
			return fmt.Errorf("token: %w", err)
		}
	}
	if c.TokenFile != "" {
		if _, err := ReadTokenFile(c.TokenFile); err != nil {
			return fmt.Errorf("token_file: %s: %w", c.TokenFile, err)
		}
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/: \t") {
			return fmt.Errorf("allowed_hosts[%d]: %q: must be a host name or address without a port", i, h)
		}
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		return errors.New("tls: cert and key must be given together")
	}
	if c.TLS.Cert != "" {
		if _, err := c.TLS.keyPair(); err != nil {
			return fmt.Errorf("tls.cert: %s: %w", c.TLS.Cert, err)
		}
	}
	return nil
}

// BearerToken returns the token in force: Token, or the contents of TokenFile.
func (c *Config) BearerToken() (string, error) {
	if c.TokenFile != "" {
		return ReadTokenFile(c.TokenFile)
	}
	return c.Token, nil
}

// ReadTokenFile reads a token: the file's first line, which must not be empty. The file
// must be a regular file of at most MaxTokenFile bytes that others cannot read and only
// its owner can write (smallfile.ReadPrivate: the group may read).
func ReadTokenFile(path string) (string, error) {
	b, err := smallfile.ReadPrivate(path, MaxTokenFile)
	if err != nil {
		return "", err
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSuffix(tok, "\r")
	if err := checkToken(tok); err != nil {
		return "", err
	}
	return tok, nil
}

// checkToken: a token goes in a header, so it must be printable, without spaces.
func checkToken(tok string) error {
	if tok == "" {
		return errors.New("empty token")
	}
	if len(tok) < 16 {
		return errors.New("must be at least 16 characters")
	}
	for _, r := range tok {
		if r <= ' ' || r > '~' {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}
