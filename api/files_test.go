//go:build unix

package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/smallfile/smallfiletest"
)

// TestFilesRefusedAtOnce: a FIFO, /dev/zero or an oversized file as the token file, the TLS
// certificate or key, INTAKE_CA or INTAKE_TOKEN_FILE is refused at once, naming the path and
// what it is or the cap. Before, a FIFO blocked Validate (and so serve --check) forever,
// /dev/zero as a certificate or CA grew memory without end, and a 2 MiB CA was read.
func TestFilesRefusedAtOnce(t *testing.T) {
	cert, key := selfSigned(t)
	fifo, big := smallfiletest.Fifo(t), smallfiletest.Big(t, 1<<20+1)
	fifoErr := "open " + fifo + ": a FIFO, not a regular file"
	zeroErr := "open /dev/zero: a character device, not a regular file"
	for _, tc := range []struct {
		cfg  api.Config
		want string
	}{
		{api.Config{TokenFile: fifo}, "token_file: " + fifo + ": " + fifoErr},
		{api.Config{TokenFile: "/dev/zero"}, "token_file: /dev/zero: " + zeroErr},
		{api.Config{TLS: api.TLSConfig{Cert: fifo, Key: key}}, "tls.cert: " + fifo + ": " + fifoErr},
		{api.Config{TLS: api.TLSConfig{Cert: cert, Key: fifo}}, "tls.cert: " + cert + ": " + fifoErr},
		{api.Config{TLS: api.TLSConfig{Cert: "/dev/zero", Key: key}}, "tls.cert: /dev/zero: " + zeroErr},
		{api.Config{TLS: api.TLSConfig{Cert: big, Key: key}}, "tls.cert: " + big + ": read " + big + ": larger than 1048576 bytes"},
	} {
		err := smallfiletest.Within(t, 2*time.Second, fmt.Sprintf("%+v", tc.cfg), tc.cfg.Validate)
		if fmt.Sprint(err) != tc.want {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, tc := range []struct{ env, path, want string }{
		{api.EnvCA, fifo, "INTAKE_CA: " + fifoErr},
		{api.EnvCA, "/dev/zero", "INTAKE_CA: " + zeroErr},
		{api.EnvCA, big, "INTAKE_CA: read " + big + ": larger than 1048576 bytes"},
		{api.EnvTokenFile, fifo, "INTAKE_TOKEN_FILE " + fifo + ": " + fifoErr},
	} {
		t.Setenv(tc.env, tc.path)
		err := smallfiletest.Within(t, 2*time.Second, tc.env+"="+tc.path, func() error { _, err := api.NewClient("127.0.0.1:1", time.Second); return err })
		if fmt.Sprint(err) != tc.want {
			t.Errorf("%s=%s: %v, want %q", tc.env, tc.path, err, tc.want)
		}
		t.Setenv(tc.env, "")
	}
}

// TestTokenFileMode: a token file others may read, or the group or others write, is refused
// with its mode and the chmod that fixes it, by the collector (http.token_file) and by the
// commands (INTAKE_TOKEN_FILE); 0600 and 0640 (the group may read) are accepted. Before,
// 0644 and 0666 were read silently.
func TestTokenFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte(testToken+"\n"), 0o600)
	for _, mode := range []os.FileMode{0o644, 0o666, 0o620} {
		os.Chmod(p, mode)
		hint := fmt.Sprintf("open %s: mode %04o lets other users read or change the secret: chmod 600 %s (or 640: the group may read)", p, mode, p)
		cfg := api.Config{TokenFile: p}
		if err := cfg.Validate(); fmt.Sprint(err) != "token_file: "+p+": "+hint {
			t.Errorf("%04o: %v", mode, err)
		}
		t.Setenv(api.EnvTokenFile, p)
		if _, err := api.NewClient("127.0.0.1:1", time.Second); fmt.Sprint(err) != "INTAKE_TOKEN_FILE "+p+": "+hint {
			t.Errorf("%04o: client: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o640, 0o400} {
		os.Chmod(p, mode)
		cfg := api.Config{TokenFile: p}
		if tok, err := cfg.BearerToken(); err != nil || tok != testToken || cfg.Validate() != nil {
			t.Errorf("%04o: %q %v %v", mode, tok, err, cfg.Validate())
		}
		t.Setenv(api.EnvTokenFile, p)
		if _, err := api.NewClient("127.0.0.1:1", time.Second); err != nil {
			t.Errorf("%04o: client: %v", mode, err)
		}
	}
}
