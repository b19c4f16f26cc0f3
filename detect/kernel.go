package detect

import (
	"sync"

	"github.com/intake-int/intake/event"
)

// Kernel is detection in the XDP program (detect.kernel, docs/xdp.md "Detection in the
// kernel") as the detector sees it: the program applies the same rules to the reports it
// parses, with its own state, and its events reach the bus without the detector. The
// detector keeps the program's rules equal to its own (SetThreshold, ClearThreshold) and
// adds the program's counters to its own (Stats).
type Kernel interface {
	// SetRules writes the rules in force: levels by measurement, never for a rule that is
	// off.
	SetRules(change, above *[event.NumMeasurements]uint64) error
	// Counts returns the program's counters.
	Counts() (KernelCounts, error)
}

// KernelCounts are the kernel detector's counters.
type KernelCounts struct {
	Reports   uint64                 `json:"reports"`
	Values    uint64                 `json:"values"`
	Events    [event.NumKinds]uint64 `json:"-"`
	RingFull  uint64                 `json:"ring_full"`  // events lost: the ring to user space was full
	TableFull uint64                 `json:"table_full"` // key updates lost: a table was full
	// Lifted are the reports the program did not parse, by reason: they went up through
	// AF_XDP and were detected in user space.
	Lifted map[string]uint64 `json:"lifted"`
}

// kernelLink is the detector's Kernel and the lock that orders rule pushes.
type kernelLink struct {
	mu sync.Mutex
	k  Kernel
}

// SetKernel makes the detector keep k's rules equal to its own, from now on, and add k's
// counters to its own. nil unlinks.
func (d *Detector) SetKernel(k Kernel) error {
	d.kern.mu.Lock()
	d.kern.k = k
	d.kern.mu.Unlock()
	return d.pushRules()
}

// pushRules writes the rules in force to the kernel's detector, if there is one.
func (d *Detector) pushRules() error {
	d.kern.mu.Lock()
	defer d.kern.mu.Unlock()
	if d.kern.k == nil {
		return nil
	}
	var ch, ab [event.NumMeasurements]uint64
	for m := range ch {
		ch[m], ab[m] = d.change[m].Load(), d.above[m].Load()
	}
	return d.kern.k.SetRules(&ch, &ab)
}

// kernelCounts returns the kernel's counters (zero without one).
func (d *Detector) kernelCounts() (KernelCounts, bool) {
	d.kern.mu.Lock()
	k := d.kern.k
	d.kern.mu.Unlock()
	if k == nil {
		return KernelCounts{}, false
	}
	c, err := k.Counts()
	return c, err == nil
}

// Capacity is the most keys a table of max keys in shards shards holds (each shard has its
// share plus headroom): the size of the kernel's table of the same configuration.
func Capacity(max, shards int) int { return shardCap(max, shards) * shards }
