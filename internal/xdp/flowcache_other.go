//go:build !linux

package xdp

// FlowCacheState is the kernel flow cache's state (Linux only).
type FlowCacheState struct{ F FlowCache }

// NewFlowCacheState refuses: BPF maps are Linux's.
func NewFlowCacheState(FlowCache) (*FlowCacheState, error) { return nil, errNotLinux }

func (s *FlowCacheState) ClockOffset() int64                             { return 0 }
func (s *FlowCacheState) Table() []uint64                                { return nil }
func (s *FlowCacheState) Age(int64) (int, error)                         { return 0, errNotLinux }
func (s *FlowCacheState) ReadEvicted(func([]uint64, uint8)) (int, error) { return 0, ErrClosed }
func (s *FlowCacheState) Pending() int                                   { return 0 }
func (s *FlowCacheState) Switches() ([]uint32, error)                    { return nil, errNotLinux }
func (s *FlowCacheState) Hist(uint32, []uint64) (bool, error)            { return false, errNotLinux }
func (s *FlowCacheState) E2E([]uint64) error                             { return errNotLinux }
func (s *FlowCacheState) Counts() (FlowCacheCounts, error)               { return FlowCacheCounts{}, errNotLinux }
func (s *FlowCacheState) Close() error                                   { return nil }
