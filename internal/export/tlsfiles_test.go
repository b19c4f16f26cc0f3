//go:build unix

package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/smallfile/smallfiletest"
)

// TestTLSFilesRefusedAtOnce: a FIFO, /dev/zero or a file over 1 MiB as the Redis or Kafka
// CA, client certificate or key is refused by Validate (serve --check) at once, naming the
// path and what it is or the cap. Before, a FIFO blocked Validate forever and /dev/zero grew
// memory without end.
func TestTLSFilesRefusedAtOnce(t *testing.T) {
	fifo, big := smallfiletest.Fifo(t), smallfiletest.Big(t, 1<<20+1)
	key := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(key, []byte("not a key"), 0o600)
	why := map[string]string{
		fifo:        "open " + fifo + ": a FIFO, not a regular file",
		"/dev/zero": "open /dev/zero: a character device, not a regular file",
		big:         "read " + big + ": larger than 1048576 bytes",
	}
	for _, p := range []string{fifo, "/dev/zero", big} {
		for _, tc := range []struct {
			set  func(*config.Export)
			want string
		}{
			{func(c *config.Export) { c.Redis.Address, c.Redis.TLS, c.Redis.TLSCA = "h:1", true, p },
				fmt.Sprintf("redis.tls_ca: %q: must be a readable PEM file of CA certificates: %s", p, why[p])},
			{func(c *config.Export) {
				c.Redis.Address, c.Redis.TLS, c.Redis.TLSCert, c.Redis.TLSKey = "h:1", true, p, key
			},
				fmt.Sprintf("redis.tls_cert: %q: must be a PEM certificate with its key in redis.tls_key (%q): %s", p, key, why[p])},
			{func(c *config.Export) {
				c.Kafka.Brokers, c.Kafka.TLS.Enabled, c.Kafka.TLS.CA = []string{"127.0.0.1:9092"}, true, p
			},
				fmt.Sprintf("kafka.tls.ca: %q: must be a readable PEM file of CA certificates: %s", p, why[p])},
			{func(c *config.Export) {
				c.Kafka.Brokers, c.Kafka.TLS.Enabled, c.Kafka.TLS.Cert, c.Kafka.TLS.Key = []string{"127.0.0.1:9092"}, true, p, key
			}, fmt.Sprintf("kafka.tls.cert: %q: must be a PEM certificate with its key in kafka.tls.key (%q): %s", p, key, why[p])},
		} {
			cfg := config.DefaultExport()
			tc.set(&cfg)
			if err := smallfiletest.Within(t, 2*time.Second, tc.want, cfg.Validate); fmt.Sprint(err) != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		}
	}
}
