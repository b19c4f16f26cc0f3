// Package smallfile reads the small files a user names in the configuration, the flags or
// the environment: the configuration itself, tokens, PEM certificates, keys and CA bundles.
//
// Such a name may point at anything: /dev/zero (an endless read that grows memory without
// bound), a FIFO (an open that blocks until a writer comes, so `serve --check` never
// returns), a directory or a socket. Read opens without blocking, looks at what it opened
// (fstat on the descriptor, not the name, so the answer is about the file read), refuses
// anything but a regular file and a file over the cap the caller gives, and reads through a
// LimitReader as well, since a regular file may grow between the fstat and the read.
package smallfile

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Caps by kind of file. A PEM bundle of the system's CA certificates is about 200 KiB; a
// certificate chain or key a few KiB.
const (
	// MaxPEM bounds a PEM file: a certificate (chain), a private key or a CA bundle.
	MaxPEM = 1 << 20
)

// ErrNotRegular is Read's refusal of what is not a regular file (errors.Is), inside an
// *fs.PathError naming the file: "open /x: a FIFO, not a regular file".
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is Read's refusal of a file over the cap (errors.As), inside an
// *fs.PathError naming the file: "read /x: larger than 1048576 bytes".
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Max) }

// Read returns the contents of the regular file at path, refusing a file larger than max
// bytes (the error says the cap) and anything that is not a regular file (the error says
// what it is), at once: a FIFO without a writer does not block it.
func Read(path string, max int64) ([]byte, error) { return read(path, max, false) }

// ReadPrivate is Read for a secret (a bearer token), refusing as well a file that others
// may read or that the group or others may write, as ssh does a private key: anyone who
// reads the file holds the secret, anyone who writes it chooses it. The group may read
// (0640): a file owned by root and readable by the service's group is the usual way to hand
// a service its secret. The error gives the chmod that fixes it. Off Unix, where the
// permission bits do not say who may read, the checks are Read's.
func ReadPrivate(path string, max int64) ([]byte, error) { return read(path, max, true) }

// read opens path, checks the opened file's kind, size and (private) mode, then reads at
// most max bytes of it.
func read(path string, max int64, private bool) ([]byte, error) {
	f, err := openNonblock(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s, %w", kind(fi.Mode()), ErrNotRegular)}
	}
	if private {
		if err := checkPrivate(fi.Mode(), path); err != nil {
			return nil, err
		}
	}
	if fi.Size() > max {
		return nil, tooLarge(path, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooLarge(path, max)
	}
	return b, nil
}

func tooLarge(path string, max int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
}

// kind names a file that is not a regular one.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// KeyPair reads a PEM certificate (chain) and its private key through Read, as
// tls.LoadX509KeyPair would without a cap.
func KeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := Read(certFile, MaxPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := Read(keyFile, MaxPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}
