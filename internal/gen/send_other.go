//go:build !linux

package gen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
)

// The Sender is Linux's (send_linux.go): batches of datagrams per sendmmsg call, several
// sockets in parallel. Elsewhere NewSender refuses; the Generator itself (building the
// stream, Truth) works everywhere.

// CheckSend reports whether this system has the Sender: an error naming the system, off
// Linux.
func CheckSend() error {
	return fmt.Errorf("gen: the UDP sender needs Linux (sendmmsg); this is %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Sender is Linux's; NewSender never returns one here.
type Sender struct{}

// NewSender refuses: see CheckSend.
func NewSender(g *Generator, cfg SendConfig) (*Sender, error) { return nil, CheckSend() }

// LocalAddrs returns nothing: there are no sockets.
func (s *Sender) LocalAddrs() []net.Addr { return nil }

// Close closes nothing.
func (s *Sender) Close() error { return nil }

// Run refuses: see CheckSend.
func (s *Sender) Run(ctx context.Context) (Stats, error) { return Stats{}, CheckSend() }
