package dta

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// Faults on the mapped stores. A store is a file mapped shared: when the file is truncated
// under the mapping (by anyone who can write it), or its filesystem cannot supply a page
// (CreateRegion allocates every page up front, but a file changed behind intake's back
// may have holes), the next access to the missing page gets SIGBUS, which kills a Go
// program. So every goroutine that touches a mapping does it with debug.SetPanicOnFault
// set, at a call boundary (a receive batch, a query, a timer's tick, a poll of the event
// bus), never per report: the fault becomes a panic that guard recovers into a *FaultError,
// counted (Stores.Faults), logged once, and the data directory's stores go offline. Offline,
// queries answer the error, and writes are not attempted but counted (BadOffline); the rest
// of the collector carries on. A restart, after the file is put right (or the stores are
// reset: intake dta reset), brings them back.

// FaultError is a memory fault on a mapped store: the stores of Dir are offline.
type FaultError struct {
	Dir  string // the data directory
	File string // the region file whose mapping faulted
	Off  uint64 // the offset in the file of the faulting address
	Op   string // what was being done: "write", "query", ...
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("DTA stores of %s offline: memory fault at offset %d of %s (%s): the file was truncated or its filesystem could not supply the page; check the file and restart, or reset the stores (intake dta reset)",
		e.Dir, e.Off, e.File, e.Op)
}

// Offline returns the fault that took the stores offline, or nil.
func (s *Stores) Offline() error {
	if f := s.fault.Load(); f != nil {
		return f
	}
	return nil
}

// Faults counts the memory faults recovered on the stores' mappings.
func (s *Stores) Faults() uint64 { return s.faults.Load() }

// faultState is the part of Stores that guard keeps.
type faultState struct {
	fault  atomic.Pointer[FaultError]
	faults atomic.Uint64
	log    *slog.Logger // nil: slog.Default()
}

// catchFaults makes a memory fault on this goroutine a panic that guard can recover, and
// returns the previous setting for guard to restore. Use as
//
//	defer s.guard(s.catchFaults(), "write", nil)
func (s *Stores) catchFaults() bool { return debug.SetPanicOnFault(true) }

// guard is deferred at a call boundary where mappings are touched: it restores the
// goroutine's fault setting, recovers a memory fault on one of the stores' mappings into
// a *FaultError (stored in *err when err is set) and takes the stores offline. Any other
// panic goes on.
func (s *Stores) guard(prev bool, op string, err *error) {
	debug.SetPanicOnFault(prev)
	v := recover()
	if v == nil {
		return
	}
	f := s.recovered(v, op)
	if f == nil {
		panic(v)
	}
	if err != nil {
		*err = f
	}
}

// recovered turns a recovered panic v into the stores' fault, or returns nil when v is not
// a memory fault on one of their mappings (a panic of offline is the fault itself).
func (s *Stores) recovered(v any, op string) *FaultError {
	if v == errOffline {
		return s.fault.Load()
	}
	fa, ok := v.(interface{ Addr() uintptr })
	if !ok {
		return nil
	}
	addr := fa.Addr()
	for _, r := range s.regions {
		// The data is checked second: it is inside the mapping of the whole file, unless
		// memory held elsewhere holds it (useKernel), whose offset 0 is the file's headerSize.
		for i, m := range [][]byte{r.mem, r.Data} {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
			if len(m) == 0 || addr < base || addr >= base+uintptr(len(m)) {
				continue
			}
			off := uint64(addr - base)
			if i == 1 {
				off += headerSize
			}
			return s.takeOffline(&FaultError{Dir: s.Dir, File: r.Path, Off: off, Op: op})
		}
	}
	return nil
}

// takeOffline records fault f (the first one stays), counts it and logs it the first time.
func (s *Stores) takeOffline(f *FaultError) *FaultError {
	s.faults.Add(1)
	if !s.fault.CompareAndSwap(nil, f) {
		return s.fault.Load()
	}
	log := s.log
	if log == nil {
		log = slog.Default()
	}
	log.Error("dta: memory fault on a mapped store: the DTA stores are offline", "dir", f.Dir, "file", f.File, "offset", f.Off, "op", f.Op, "error", f.Error())
	return f
}

// errOffline is panicked by a writer that finds the stores gone offline where it cannot
// return (PostcardCache.lock, waiting on an entry whose holder faulted).
var errOffline = &offlinePanic{}

type offlinePanic struct{}

func (*offlinePanic) Error() string { return "dta: stores offline" }
