//go:build !linux

package bench

import (
	"errors"
	"fmt"
	"os/exec"
)

// Veth: network namespaces and veth pairs are Linux's.
type Veth struct{ Namespace, Host, Peer string }

// NewVeth refuses off Linux.
func NewVeth() (*Veth, error) {
	return nil, fmt.Errorf("bench: --veth needs Linux: %w", errors.ErrUnsupported)
}

func (v *Veth) Command(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

func (v *Veth) Close() error { return nil }

func (v *Veth) Device() string { return "" }

func (v *Veth) PeerDevice() string { return "" }
