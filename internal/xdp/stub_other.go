//go:build !linux

package xdp

import (
	"errors"
	"fmt"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
	"io"
	"time"
)

// errNotLinux is every stub's refusal; it wraps errors.ErrUnsupported.
var errNotLinux = fmt.Errorf("xdp: XDP and AF_XDP need Linux: %w", errors.ErrUnsupported)

// Program is intake's XDP program attached to one interface (Linux only).
type Program struct{}

// Options choose how Attach attaches.
type Options struct {
	Mode      string
	Stores    *DTAStores
	Detect    *DetectState
	FlowCache *FlowCacheState
}

// Mode values: how the program is attached.
const (
	ModeNative  = "native"
	ModeGeneric = "generic"
	MaxQueues   = 256
	MaxDatagram = 4096 - 256 - 14 - 4 - 40 - 8
	FrameSize   = 4096
)

// Frames is the UMEM frames a socket of umemBytes would get on Linux.
func Frames(umemBytes int) int { return max(64, min(1<<16, umemBytes/FrameSize)) }

// Attach refuses: XDP is Linux's.
func Attach(string, uint16, Options) (*Program, error) { return nil, errNotLinux }

func (p *Program) Mode() string                      { return "" }
func (p *Program) Ifindex() int                      { return 0 }
func (p *Program) Register(int, *Socket) error       { return errNotLinux }
func (p *Program) Unregister(int)                    {}
func (p *Program) Counts(*[NumOutcomes]uint64) error { return errNotLinux }
func (p *Program) Close() error                      { return nil }

// RxQueues is 1 where there is no sysfs.
func RxQueues(string) int { return 1 }

// Socket is an AF_XDP socket (Linux only).
type Socket struct{}

// Open refuses: AF_XDP is Linux's.
func Open(int, int, int) (*Socket, error) { return nil, errNotLinux }

func (s *Socket) ZeroCopy() bool       { return false }
func (s *Socket) Peek(int) int         { return 0 }
func (s *Socket) Frame(int) []byte     { return nil }
func (s *Socket) FrameTime(int) uint64 { return 0 }
func (s *Socket) Release()             {}
func (s *Socket) Wait(int) bool        { return true }
func (s *Socket) Wake()                {}
func (s *Socket) Drops() uint64        { return 0 }
func (s *Socket) Close() error         { return nil }

// DTAStores are kernel-written DTA stores (Linux only).
type DTAStores struct {
	D          DTA
	KW, KI, AP []byte
}

// NewDTAStores refuses: BPF arrays are Linux's.
func NewDTAStores(DTA) (*DTAStores, error) { return nil, errNotLinux }

func (s *DTAStores) KWID() uint32 { return 0 }
func (s *DTAStores) KIID() uint32 { return 0 }
func (s *DTAStores) APID() uint32 { return 0 }
func (s *DTAStores) Close() error { return nil }

func (p *Program) RunStats() (uint64, time.Duration) { return 0, 0 }

// EnableRunStats refuses: BPF is Linux's.
func EnableRunStats() (io.Closer, error) { return nil, errNotLinux }

// DetectState is the kernel detector's state (Linux only).
type DetectState struct{ D Detect }

// NewDetectState refuses: BPF maps are Linux's.
func NewDetectState(Detect) (*DetectState, error) { return nil, errNotLinux }

func (s *DetectState) WriteRules(_, _ *[event.NumMeasurements]uint64) error { return errNotLinux }
func (s *DetectState) Read([]Event, time.Duration) (int, error)             { return 0, ErrClosed }
func (s *DetectState) Counts() (DetectCounts, [NumLifts]uint64, error) {
	return DetectCounts{}, [NumLifts]uint64{}, errNotLinux
}
func (s *DetectState) Close() error { return nil }

// ErrClosed is what a Read returns once its state (detection, the sink's ring) is closed.
var ErrClosed = errors.New("xdp: closed")

// MonoOffset is never needed here: there are no program times without XDP.
func MonoOffset() int64 { return 0 }

func (s *DetectState) Flows(func(*telemetry.FlowKey, *KernelFlow) bool) error { return errNotLinux }
func (s *DetectState) Flow(telemetry.FlowKey) (KernelFlow, bool)              { return KernelFlow{}, false }
func (s *DetectState) DeleteFlow(telemetry.FlowKey) error                     { return errNotLinux }
func (s *DetectState) Keys(func(*KernelKey, *KernelKeyEntry) bool) error      { return errNotLinux }
func (s *DetectState) DeleteKey(KernelKey) error                              { return errNotLinux }
