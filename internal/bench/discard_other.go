//go:build !linux

package bench

import (
	"errors"
	"time"
)

// discard is bench sink's receiving application (discard_linux.go); bench sink needs Linux.
type discard struct{}

func newDiscard(string) (*discard, error) { return nil, errors.ErrUnsupported }

func (d *discard) Addr() string         { return "" }
func (d *discard) Count() uint64        { return 0 }
func (d *discard) Close() time.Duration { return 0 }
