//go:build unix

package smallfile

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/smallfile/smallfiletest"
)

// TestNotRegular: a FIFO, a device, a directory and a socket are refused at once, the error
// naming the path and what it is.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fifo := smallfiletest.Fifo(t)
	for path, want := range map[string]string{
		fifo:        "open " + fifo + ": a FIFO, not a regular file",
		"/dev/zero": "open /dev/zero: a character device, not a regular file",
		dir:         "open " + dir + ": a directory, not a regular file",
	} {
		for _, read := range []func(string, int64) ([]byte, error){Read, ReadPrivate} {
			err := smallfiletest.Within(t, 2*time.Second, path, func() error { _, err := read(path, MaxPEM); return err })
			if err == nil || err.Error() != want || !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want %s", path, err, want)
			}
		}
	}
	// A socket cannot be opened at all (ENXIO): refused by the open, at once.
	if err := smallfiletest.Within(t, 2*time.Second, sock, func() error { _, err := Read(sock, MaxPEM); return err }); err == nil {
		t.Errorf("socket: read")
	}
}

// TestCap: a file of max bytes is read; one byte more is refused, naming the cap.
func TestCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("0123456789"), 0o600)
	if b, err := Read(p, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("10 bytes, cap 10: %q %v", b, err)
	}
	_, err := Read(p, 9)
	var tl *TooLargeError
	if err == nil || err.Error() != "read "+p+": larger than 9 bytes" || !errors.As(err, &tl) || tl.Max != 9 {
		t.Errorf("10 bytes, cap 9: %v", err)
	}
	// The LimitReader holds where fstat's size is not the size read: /proc's files say 0.
	if _, err := Read("/proc/self/status", 16); err == nil || err.Error() != "read /proc/self/status: larger than 16 bytes" {
		t.Errorf("/proc/self/status, cap 16: %v", err)
	}
}

// TestPrivate: a secret's file readable by others, or writable by group or others, is
// refused with its mode and the chmod; 0600 and 0640 are read.
func TestPrivate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte("secret\n"), 0o600)
	for _, mode := range []fs.FileMode{0o644, 0o666, 0o604, 0o620, 0o602, 0o660} {
		os.Chmod(p, mode)
		_, err := ReadPrivate(p, 64)
		wantMsg := fmt.Sprintf("open %s: mode %04o lets other users read or change the secret: chmod 600 %s (or 640: the group may read)", p, mode, p)
		if err == nil || err.Error() != wantMsg {
			t.Errorf("%04o: %v, want %s", mode, err, wantMsg)
		}
		if b, err := Read(p, 64); err != nil || string(b) != "secret\n" {
			t.Errorf("%04o: Read (not private): %q %v", mode, b, err)
		}
	}
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o400, 0o440} {
		os.Chmod(p, mode)
		if b, err := ReadPrivate(p, 64); err != nil || string(b) != "secret\n" {
			t.Errorf("%04o: %q %v", mode, b, err)
		}
	}
}
