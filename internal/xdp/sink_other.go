//go:build !linux

package xdp

import "time"

// Sink is the INT sink program attached to one interface (Linux only).
type Sink struct{}

// AttachSink refuses: XDP is Linux's.
func AttachSink(string, SinkConfig) (*Sink, error) { return nil, errNotLinux }

func (s *Sink) Mode() string                                            { return "" }
func (s *Sink) Interface() string                                       { return "" }
func (s *Sink) Ifindex() int                                            { return 0 }
func (s *Sink) Read(int, time.Duration, func(*SinkRecord)) (int, error) { return 0, errNotLinux }
func (s *Sink) Wake()                                                   {}
func (s *Sink) Counts(*[NumSinkOutcomes]uint64) error                   { return errNotLinux }
func (s *Sink) RunStats() (uint64, time.Duration)                       { return 0, 0 }
func (s *Sink) Close() error                                            { return nil }
