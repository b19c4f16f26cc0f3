//go:build !linux

package ingest

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/cbpf"
)

// The UDP receive path is Linux's (socket_linux.go): one SO_REUSEPORT socket per worker,
// spread by the kernel's flow hash, read in batches with recvmmsg, its drops counted with
// SO_RXQ_OVFL and SO_MEMINFO. Elsewhere Start refuses with CheckReceivePath's error; what
// needs no socket still works: RunCapture (serve --pcap), the decoders, the processors.

// CheckReceivePath reports whether this system has the UDP receive path: an error naming
// the system, off Linux.
func CheckReceivePath() error {
	return fmt.Errorf("ingest: the UDP receive path needs Linux (recvmmsg, SO_REUSEPORT, SO_RXQ_OVFL); this is %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// socket is what the rest of the package reads of one; openSocket never returns one here.
type socket struct {
	local         *net.UDPAddr
	rcvbufGranted int
	ino           uint64
}

// openSocket refuses: see CheckReceivePath.
func openSocket(network, address string, rcvbuf, batch, size int, gro, names bool) (*socket, error) {
	return nil, CheckReceivePath()
}

func (s *socket) close() error { return nil }

func (s *socket) attachSpread([]cbpf.Raw) error { return CheckReceivePath() }

func (s *socket) wake() {}

// run and finish are the socket worker's; with no socket opened, Start never calls them.
func (w *worker) run(stopping *atomic.Bool) {}

func (w *worker) finish() {}

func sleepThread(d time.Duration) { time.Sleep(d) }
