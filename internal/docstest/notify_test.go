//go:build linux

package docstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestServeNotify: `intake serve` under systemd's Type=notify (deploy/intake.service) sends
// READY=1 to $NOTIFY_SOCKET once it is up and STOPPING=1 when SIGTERM starts its stop, to a
// socket path and to an abstract name (@...). Before, serve sent nothing and the unit had to
// be Type=simple.
func TestServeNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a collector")
	}
	bin := intakeBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "intake.yaml")
	os.WriteFile(cfg, []byte("listeners:\n  - {format: report, address: 127.0.0.1, port: 0}\nhttp: {address: '127.0.0.1:0'}\ndta: {data_dir: "+filepath.Join(dir, "dta")+"}\n"), 0o644)
	for _, name := range []string{filepath.Join(dir, "notify"), fmt.Sprintf("@intake-docstest-%d", os.Getpid())} {
		addr := name
		if addr[0] == '@' {
			addr = "\x00" + addr[1:]
		}
		sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", "--config", cfg)
		cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		read := func(want string) {
			t.Helper()
			sock.SetReadDeadline(time.Now().Add(30 * time.Second))
			b := make([]byte, 256)
			n, err := sock.Read(b)
			if err != nil || string(b[:n]) != want {
				t.Errorf("NOTIFY_SOCKET=%s: %q %v, want %q", name, b[:n], err, want)
			}
		}
		read("READY=1")
		cmd.Process.Signal(syscall.SIGTERM)
		read("STOPPING=1")
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
		sock.Close()
	}
}
