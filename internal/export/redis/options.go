package redis

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/intake-int/intake/internal/smallfile"
)

// universalOptions are go-redis's options for the configured server: one address or URL, a
// Sentinel-monitored master, or a cluster.
func (r *Config) universalOptions() (*goredis.UniversalOptions, error) {
	o := &goredis.UniversalOptions{
		ClientName: "intake",
		Username:   r.Username,
		Password:   r.Password,
		DB:         r.DB,
		// One writer: one connection (per node), the pipelines on it, not on a pool of their
		// own.
		PoolSize:         1,
		PipelinePoolSize: -1,
		// An XADD is not idempotent: a batch whose connection failed is dropped and counted,
		// never sent again.
		MaxRetries: -1,
		// The sink's own backoff paces the reconnects.
		DialerRetries: 1,
		DialTimeout:   r.Timeout,
		// A written command waits for its reply as long as the connection stands: the
		// server may execute it however late (see above). Operations are bounded by their
		// context instead: the PING's is redis.timeout, a pipeline's has no deadline.
		ReadTimeout:           -1,
		WriteTimeout:          -1,
		ContextTimeoutEnabled: true,
	}
	tlsOn := r.TLS
	var base *tls.Config
	switch {
	case r.URL != "":
		u, err := goredis.ParseURL(r.URL)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %w", err)
		}
		o.Addrs = []string{u.Addr}
		if o.Username == "" {
			o.Username = u.Username
		}
		if o.Password == "" {
			o.Password = u.Password
		}
		if o.DB == 0 {
			o.DB = u.DB
		}
		if u.ClientName != "" {
			o.ClientName = u.ClientName
		}
		o.Protocol = u.Protocol
		if u.TLSConfig != nil {
			tlsOn, base = true, u.TLSConfig
		}
	case r.Sentinel.Master != "":
		o.MasterName = r.Sentinel.Master
		o.Addrs = append([]string(nil), r.Sentinel.Addresses...)
		o.SentinelUsername, o.SentinelPassword = r.Sentinel.Username, r.Sentinel.Password
	case len(r.Cluster.Addresses) > 0:
		o.Addrs = append([]string(nil), r.Cluster.Addresses...)
		o.IsClusterMode = true
	default:
		o.Addrs = []string{r.Address}
	}
	tc, err := r.tlsConfig(tlsOn, base)
	if err != nil {
		return nil, err
	}
	o.TLSConfig = tc
	return o, nil
}

// tlsConfig is the client's TLS configuration (nil when on is false), from base (a rediss://
// URL's) or a new one, with the configured CA, client certificate, server name and
// verification.
func (r *Config) tlsConfig(on bool, base *tls.Config) (*tls.Config, error) {
	if !on {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		tc = base.Clone()
	}
	if r.TLSCA != "" {
		pem, err := smallfile.Read(r.TLSCA, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("redis.tls_ca: %q: must be a readable PEM file of CA certificates: %v", r.TLSCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls_ca: %q: must be a PEM file of CA certificates: none found", r.TLSCA)
		}
		tc.RootCAs = pool
	}
	if r.TLSCert != "" || r.TLSKey != "" {
		cert, err := smallfile.KeyPair(r.TLSCert, r.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("redis.tls_cert: %q: must be a PEM certificate with its key in redis.tls_key (%q): %v", r.TLSCert, r.TLSKey, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if r.TLSServerName != "" {
		tc.ServerName = r.TLSServerName
	}
	if r.TLSInsecureSkipVerify {
		tc.InsecureSkipVerify = true
	}
	return tc, nil
}
