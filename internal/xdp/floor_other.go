//go:build !linux

package xdp

import "time"

// FloorName and FloorPassName are the floor programs' names in the kernel.
const (
	FloorName     = "intake_floor"
	FloorPassName = "intake_flr_pass"
)

// Floor is bench ingest's XDP drop floor and bench sink's pass floor (Linux only).
type Floor struct{}

// AttachFloor refuses: XDP is Linux's.
func AttachFloor(string) (*Floor, error) { return nil, errNotLinux }

// AttachFloorPass refuses: XDP is Linux's.
func AttachFloorPass(string) (*Floor, error) { return nil, errNotLinux }

func (f *Floor) Mode() string                      { return "" }
func (f *Floor) Count() (uint64, error)            { return 0, errNotLinux }
func (f *Floor) RunStats() (uint64, time.Duration) { return 0, 0 }
func (f *Floor) Close() error                      { return nil }
