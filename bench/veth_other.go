//go:build !linux

package bench

import (
	"errors"
	"os/exec"
)

// Veth: network namespaces and veth pairs are Linux's.
type Veth struct{ Namespace, Host, Peer string }

// NewVeth refuses off Linux.
func NewVeth() (*Veth, error) { return nil, errors.New("bench: --veth needs Linux") }

func (v *Veth) Command(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

func (v *Veth) Close() error { return nil }

func (v *Veth) Device() string { return "" }
