package xdp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// DetectState is the kernel detector's state: its tables, rules, counters and event ring,
// BPF maps that outlive programs (a restart attaches a new program to the same state).
type DetectState struct {
	D                                 Detect
	flows, keys, rules, events, count *ebpf.Map
	lifts                             *ebpf.Map
	rd                                *ringbuf.Reader
	ncpu                              int
}


// NewDetectState creates the maps for d, with every rule off.
func NewDetectState(d Detect) (_ *DetectState, err error) {
	if d.MaxFlows < 1 || d.MaxKeys < 1 {
		return nil, fmt.Errorf("detection in the kernel: tables of %d flows and %d keys", d.MaxFlows, d.MaxKeys)
	}
	if len(d.DSCP) > MaxDSCP {
		return nil, fmt.Errorf("detection in the kernel: %d decoder.dscp entries: the XDP parser takes at most %d", len(d.DSCP), MaxDSCP)
	}
	if d.EventRing == 0 {
		d.EventRing = 4 << 20
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, fmt.Errorf("reading the XDP object: %w", err)
	}
	s := &DetectState{D: d}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.ncpu, err = ebpf.PossibleCPU(); err != nil {
		return nil, err
	}
	mk := func(name string, entries int) (*ebpf.Map, error) {
		ms := spec.Maps[name].Copy()
		if entries > 0 {
			ms.MaxEntries = uint32(entries)
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			return nil, fmt.Errorf("detection in the kernel: map %s of %d entries: %w", name, ms.MaxEntries, err)
		}
		return m, nil
	}
	if s.flows, err = mk("d_flows", d.MaxFlows); err != nil {
		return nil, err
	}
	if s.keys, err = mk("d_keys", d.MaxKeys); err != nil {
		return nil, err
	}
	if s.rules, err = mk("d_rules", 0); err != nil {
		return nil, err
	}
	if s.events, err = mk("d_events", d.EventRing); err != nil {
		return nil, err
	}
	if s.count, err = mk("d_counts", 0); err != nil {
		return nil, err
	}
	if s.lifts, err = mk("lifts", 0); err != nil {
		return nil, err
	}
	var off [2][event.NumMeasurements]uint64
	for i := range off {
		for m := range off[i] {
			off[i][m] = ^uint64(0)
		}
	}
	if err := s.rules.Put(uint32(0), off); err != nil {
		return nil, fmt.Errorf("detection in the kernel: rules: %w", err)
	}
	if s.rd, err = ringbuf.NewReader(s.events); err != nil {
		return nil, fmt.Errorf("detection in the kernel: event ring: %w", err)
	}
	return s, nil
}

// replacements are the maps load puts in the program.
func (s *DetectState) replacements() map[string]*ebpf.Map {
	return map[string]*ebpf.Map{"d_flows": s.flows, "d_keys": s.keys, "d_rules": s.rules,
		"d_events": s.events, "d_counts": s.count, "lifts": s.lifts}
}

// SetRules writes the rules in force: change and above levels by measurement, ^0 for a
// rule that is off (nothing exceeds it, as in package detect).
func (s *DetectState) SetRules(change, above *[event.NumMeasurements]uint64) error {
	v := [2][event.NumMeasurements]uint64{*change, *above}
	return s.rules.Put(uint32(0), v)
}

// ErrClosed is what Read returns once the state is closed.
var ErrClosed = errors.New("xdp: detection state closed")

// Read waits up to timeout for events and copies those in the ring (at most len(buf)) into
// buf; 0 and no error when none came in time.
func (s *DetectState) Read(buf []Event, timeout time.Duration) (int, error) {
	var rec ringbuf.Record
	n := 0
	s.rd.SetDeadline(time.Now().Add(timeout))
	for n < len(buf) {
		if n > 0 && s.rd.AvailableBytes() == 0 {
			break
		}
		if err := s.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if errors.Is(err, ringbuf.ErrClosed) {
				return n, ErrClosed
			}
			return n, err
		}
		if len(rec.RawSample) < int(unsafe.Sizeof(Event{})) {
			continue
		}
		buf[n] = *(*Event)(unsafe.Pointer(&rec.RawSample[0]))
		n++
	}
	return n, nil
}

// Counts returns the detector's counters and the lifted reports by reason, summed over CPUs.
func (s *DetectState) Counts() (DetectCounts, [NumLifts]uint64, error) {
	var c DetectCounts
	var l [NumLifts]uint64
	per := make([]uint64, s.ncpu)
	sum := func(m *ebpf.Map, i int) (uint64, error) {
		if err := m.Lookup(uint32(i), per); err != nil {
			return 0, err
		}
		var n uint64
		for _, v := range per {
			n += v
		}
		return n, nil
	}
	dst := []*uint64{&c.Reports, &c.Values, &c.Events, &c.RingFull, &c.TableFull, &c.NewFlows, &c.NewKeys}
	for i := range c.ByKind {
		dst = append(dst, &c.ByKind[i])
	}
	for i, p := range dst {
		v, err := sum(s.count, i)
		if err != nil {
			return c, l, err
		}
		*p = v
	}
	for i := range l {
		v, err := sum(s.lifts, i)
		if err != nil {
			return c, l, err
		}
		l[i] = v
	}
	return c, l, nil
}

// Flows calls fn with every flow entry of the kernel's table (read under its lock) until fn
// returns false.
func (s *DetectState) Flows(fn func(k *telemetry.FlowKey, e *KernelFlow) bool) error {
	var k, next flowKey
	var e KernelFlow
	var kp unsafe.Pointer // nil: the first key
	for {
		if err := s.flows.NextKey(kp, unsafe.Pointer(&next)); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil
			}
			return err
		}
		k = next
		kp = unsafe.Pointer(&k)
		if err := s.flows.LookupWithFlags(unsafe.Pointer(&k), unsafe.Pointer(&e), ebpf.LookupLock); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) { // deleted since: the walk goes on from it
				continue
			}
			return err
		}
		if !fn(&k.K, &e) {
			return nil
		}
	}
}

// Flow returns flow k's entry.
func (s *DetectState) Flow(k telemetry.FlowKey) (KernelFlow, bool) {
	var e KernelFlow
	fk := flowKey{K: k}
	err := s.flows.LookupWithFlags(unsafe.Pointer(&fk), unsafe.Pointer(&e), ebpf.LookupLock)
	return e, err == nil
}

// DeleteFlow forgets flow k.
func (s *DetectState) DeleteFlow(k telemetry.FlowKey) error {
	fk := flowKey{K: k}
	return s.flows.Delete(unsafe.Pointer(&fk))
}

// Keys calls fn with every switch key and its entry until fn returns false.
func (s *DetectState) Keys(fn func(k *KernelKey, e *KernelKeyEntry) bool) error {
	var k, next KernelKey
	var e KernelKeyEntry
	var kp unsafe.Pointer
	for {
		if err := s.keys.NextKey(kp, unsafe.Pointer(&next)); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil
			}
			return err
		}
		k = next
		kp = unsafe.Pointer(&k)
		if err := s.keys.LookupWithFlags(unsafe.Pointer(&k), unsafe.Pointer(&e), ebpf.LookupLock); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			}
			return err
		}
		if !fn(&k, &e) {
			return nil
		}
	}
}

// DeleteKey forgets switch key k.
func (s *DetectState) DeleteKey(k KernelKey) error { return s.keys.Delete(unsafe.Pointer(&k)) }

// MonoOffset returns CLOCK_REALTIME less CLOCK_MONOTONIC in ns: what turns the program's
// times (bpf_ktime_get_ns, monotonic: a frame's, an event's) into Unix time. The
// monotonic clock is read on both sides of the real one, and the midpoint taken.
func MonoOffset() int64 {
	var a, b unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
	now := time.Now().UnixNano()
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
	return now - (a.Nano()+b.Nano())/2
}

// Close frees the maps (a program still attached keeps them alive) and ends Read.
func (s *DetectState) Close() error {
	var errs []error
	if s.rd != nil {
		errs = append(errs, s.rd.Close())
	}
	for _, m := range []*ebpf.Map{s.flows, s.keys, s.rules, s.events, s.count, s.lifts} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
