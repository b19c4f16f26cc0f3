//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/smallfile/smallfiletest"
)

// TestServeCheckFiles: `serve --check` with a FIFO as --config, http.token_file or
// http.tls.cert, or /dev/zero as either, ends at once with an error naming the file and
// what it is; a token file others may read is refused with the chmod. Before, a FIFO held
// --check forever, and 0644 and 0666 token files were accepted silently.
func TestServeCheckFiles(t *testing.T) {
	fifo := smallfiletest.Fifo(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("0123456789abcdef-token\n"), 0o600)
	fifoErr := "open " + fifo + ": a FIFO, not a regular file"
	zeroErr := "open /dev/zero: a character device, not a regular file"
	cfg := func(http string) string {
		return writeFile(t, "intake.yaml", "listeners:\n  - {format: report, port: 9999}\nhttp: {address: '127.0.0.1:0', "+http+"}\n")
	}
	check := func(config, want string) {
		t.Helper()
		r := smallfiletest.Within(t, 5*time.Second, "--check "+config, func() [3]any {
			code, out, errs := runVerb("serve", "--config", config, "--check")
			return [3]any{code, out, errs}
		})
		if r[0] != 2 || r[2] != want { // a configuration refused exits 2 (issue 31)
			t.Errorf("--check %s: %d %q %q, want %q", config, r[0], r[1], r[2], want)
		}
	}
	check(fifo, "intake serve: "+fifoErr+"\n")
	check("/dev/zero", "intake serve: "+zeroErr+"\n")
	c := cfg("token_file: " + fifo)
	check(c, "intake serve: "+c+": http.token_file: "+fifo+": "+fifoErr+"\n")
	c = cfg("token_file: /dev/zero")
	check(c, "intake serve: "+c+": http.token_file: /dev/zero: "+zeroErr+"\n")
	c = cfg("tls: {cert: " + fifo + ", key: " + fifo + "}")
	check(c, "intake serve: "+c+": http.tls.cert: "+fifo+": "+fifoErr+"\n")
	c = cfg("tls: {cert: /dev/zero, key: /dev/zero}")
	check(c, "intake serve: "+c+": http.tls.cert: /dev/zero: "+zeroErr+"\n")
	for _, mode := range []os.FileMode{0o644, 0o666} {
		os.Chmod(tok, mode)
		c = cfg("token_file: " + tok)
		check(c, fmt.Sprintf("intake serve: %s: http.token_file: %s: open %s: mode %04o lets other users read or change the secret: chmod 600 %s (or 640: the group may read)\n", c, tok, tok, mode, tok))
	}
	os.Chmod(tok, 0o600)
	c = cfg("token_file: " + tok)
	if code, out, errs := runVerb("serve", "--config", c, "--check"); code != 0 || errs != "" {
		t.Errorf("token file 0600: %d %q %q", code, out, errs)
	}
}
