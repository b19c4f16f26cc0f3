package detect

import (
	"sync"
	"sync/atomic"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// Kernel is detection in the XDP program (detect.kernel, docs/xdp.md "Detection in the
// kernel") as the detector sees it: the program applies the same rules to the reports it
// parses, with its own state, and its events reach the bus without the detector. The
// detector keeps the program's rules equal to its own (SetThreshold, ClearThreshold) and
// adds the program's counters to its own (Stats).
type Kernel interface {
	// WriteRules writes the rules in force: levels by measurement, never for a rule that is
	// off.
	WriteRules(change, above *[event.NumMeasurements]uint64) error
	// Counts returns the program's counters.
	Counts() (KernelCounts, error)
	// Flows calls fn with every flow the program holds until fn returns false; Keys the
	// same for switch keys. Times are Unix ns.
	Flows(fn func(*KernelFlow) bool) error
	Keys(fn func(*KernelKey) bool) error
	// Flow returns flow k's state.
	Flow(k telemetry.FlowKey) (KernelFlow, bool)
	// DeleteFlow and DeleteKey forget a flow and a switch key (expiry).
	DeleteFlow(k telemetry.FlowKey) error
	DeleteKey(k *KernelKey) error
}

// KernelVal is one value's state in the kernel: V(t1) (the value last exported) and the
// latest value.
type KernelVal struct{ Ref, Cur uint64 }

// KernelFlow is a flow's state in the kernel, the fields of the detector's own flow entry.
type KernelFlow struct {
	Key                    telemetry.FlowKey
	First, Last            int64
	Dev, Reports, PathHash uint64
	NPath                  uint8
	HasLat                 bool
	HopOK                  uint8
	Above                  uint16
	Path                   [MaxTrackedHops]uint32
	Lat                    KernelVal
	Hop                    [MaxTrackedHops]KernelVal
}

// Switch-key kinds, as the kernel's keys name them.
const (
	KindQueue  = kQueue
	KindPort   = kPort
	KindBuffer = kBuffer
	KindDrop   = kDrop
	KindSeq    = kSeq
)

// KernelKey is a switch key's state in the kernel.
type KernelKey struct {
	Switch, ID uint32
	Kind       uint8
	Has, Above uint8
	Last       int64
	Dev        uint64
	V          [2]KernelVal
}

func (k *KernelFlow) entry() *flowEntry {
	en := &flowEntry{key: k.Key, first: k.First, last: k.Last, dev: k.Dev, reports: k.Reports,
		pathHash: k.PathHash, npath: k.NPath, hasLat: k.HasLat, hopOK: k.HopOK, above: k.Above,
		path: k.Path, lat: val{k.Lat.Ref, k.Lat.Cur}}
	for i, v := range k.Hop {
		en.hop[i] = val{v.Ref, v.Cur}
	}
	return en
}

func (k *KernelKey) entry() *swEntry {
	return &swEntry{key: swKey{sw: k.Switch, id: k.ID, kind: k.Kind}, has: k.Has, above: k.Above,
		last: k.Last, dev: k.Dev, v: [2]val{{k.V[0].Ref, k.V[0].Cur}, {k.V[1].Ref, k.V[1].Cur}}}
}

// KernelCounts are the kernel detector's counters.
type KernelCounts struct {
	Reports   uint64                 `json:"reports"`
	Values    uint64                 `json:"values"`
	NewFlows  uint64                 `json:"-"` // entries made: with those expired, the flows held
	NewKeys   uint64                 `json:"-"`
	Events    [event.NumKinds]uint64 `json:"-"`
	RingFull  uint64                 `json:"ring_full"`  // events lost: the ring to user space was full
	TableFull uint64                 `json:"table_full"` // key updates lost: a table was full
	// Lifted are the reports the program did not parse, by reason: they went up through
	// AF_XDP and were detected in user space.
	Lifted map[string]uint64 `json:"lifted"`
}

// kernelLink is the detector's Kernel and the lock that orders rule pushes.
type kernelLink struct {
	// mu guards k, and is held (read) while k is used: SetKernel waits for every use to end,
	// so that the state a Kernel reads can be freed once SetKernel has replaced it.
	mu sync.RWMutex
	k  Kernel
	// push orders the writes of the rules (pushRules).
	push sync.Mutex
	// expiredFlows and expiredKeys count the entries Snapshot deleted from the kernel's
	// tables (which count the entries they make: the difference is what they hold).
	expiredFlows, expiredKeys atomic.Uint64
}

// SetKernel makes the detector keep k's rules equal to its own, from now on, and add k's
// counters to its own. nil unlinks. It returns once no one uses the Kernel it replaces.
func (d *Detector) SetKernel(k Kernel) error {
	d.kern.mu.Lock()
	d.kern.k = k
	d.kern.mu.Unlock()
	return d.pushRules()
}

// withKernel calls fn with the kernel's detector, holding it in place; false without one.
func (d *Detector) withKernel(fn func(Kernel)) bool {
	d.kern.mu.RLock()
	defer d.kern.mu.RUnlock()
	if d.kern.k == nil {
		return false
	}
	fn(d.kern.k)
	return true
}

// pushRules writes the rules in force to the kernel's detector, if there is one.
func (d *Detector) pushRules() error {
	d.kern.push.Lock()
	defer d.kern.push.Unlock()
	var err error
	d.withKernel(func(k Kernel) {
		var ch, ab [event.NumMeasurements]uint64
		for m := range ch {
			ch[m], ab[m] = d.change[m].Load(), d.above[m].Load()
		}
		err = k.WriteRules(&ch, &ab)
	})
	return err
}

// kernelSnapshot is Snapshot's part for the kernel's tables: their values as periodic, and
// the keys last updated before cut as expiring, which it deletes. It returns the number of
// periodic values. A key the program updates between the walk's read and the delete
// loses that update (it is a new key at its next report).
func (d *Detector) kernelSnapshot(k Kernel, now, cut int64, fn func(*event.Event)) int {
	n := 0
	k.Flows(func(f *KernelFlow) bool {
		if f.Last < cut {
			flowValues(f.entry(), event.KindExpire, now, fn)
			if k.DeleteFlow(f.Key) == nil {
				d.kern.expiredFlows.Add(1)
			}
		} else {
			n += flowValues(f.entry(), event.KindPeriodic, now, fn)
		}
		return true
	})
	k.Keys(func(s *KernelKey) bool {
		if s.Last < cut {
			swValues(s.entry(), event.KindExpire, now, fn)
			if k.DeleteKey(s) == nil {
				d.kern.expiredKeys.Add(1)
			}
		} else {
			n += swValues(s.entry(), event.KindPeriodic, now, fn)
		}
		return true
	})
	return n
}

// kernelCounts returns the kernel's counters (zero without one).
func (d *Detector) kernelCounts() (c KernelCounts, ok bool) {
	d.withKernel(func(k Kernel) {
		var err error
		c, err = k.Counts()
		ok = err == nil
	})
	return c, ok
}

// Capacity is the most keys a table of max keys in shards shards holds (each shard has its
// share plus headroom): the size of the kernel's table of the same configuration.
func Capacity(max, shards int) int { return shardCap(max, shards) * shards }

// stoppedKernel is the kernel's detector once stopped: its last counters, no tables.
type stoppedKernel struct{ c KernelCounts }

func (k stoppedKernel) WriteRules(_, _ *[event.NumMeasurements]uint64) error { return nil }
func (k stoppedKernel) Counts() (KernelCounts, error)                        { return k.c, nil }
func (k stoppedKernel) Flows(func(*KernelFlow) bool) error                   { return nil }
func (k stoppedKernel) Keys(func(*KernelKey) bool) error                     { return nil }
func (k stoppedKernel) Flow(telemetry.FlowKey) (KernelFlow, bool)            { return KernelFlow{}, false }
func (k stoppedKernel) DeleteFlow(telemetry.FlowKey) error                   { return nil }
func (k stoppedKernel) DeleteKey(*KernelKey) error                           { return nil }
