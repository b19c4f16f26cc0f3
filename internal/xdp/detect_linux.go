package xdp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
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
	// The tables' memory (the arrays, mapped) and their slots (powers of two).
	flowMem, keyMem     []byte
	flowSlots, keySlots int
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
	spec, err := objectSpec()
	if err != nil {
		return nil, err
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
	s.flowSlots, s.keySlots = tableSlots(d.MaxFlows), tableSlots(d.MaxKeys)
	if s.flows, err = mk(intakeMapD_flows, s.flowSlots); err != nil {
		return nil, err
	}
	if s.keys, err = mk(intakeMapD_keys, s.keySlots); err != nil {
		return nil, err
	}
	mmap := func(m *ebpf.Map, n int) ([]byte, error) {
		mem, err := unix.Mmap(m.FD(), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("detection in the kernel: mapping a table: %w", err)
		}
		return mem, nil
	}
	if s.flowMem, err = mmap(s.flows, s.flowSlots*int(unsafe.Sizeof(KernelFlow{}))); err != nil {
		return nil, err
	}
	if s.keyMem, err = mmap(s.keys, s.keySlots*int(unsafe.Sizeof(KernelKeyEntry{}))); err != nil {
		return nil, err
	}
	if s.rules, err = mk(intakeMapD_rules, 0); err != nil {
		return nil, err
	}
	if s.events, err = mk(intakeMapD_events, d.EventRing); err != nil {
		return nil, err
	}
	if s.count, err = mk(intakeMapD_counts, 0); err != nil {
		return nil, err
	}
	if s.lifts, err = mk(intakeMapLifts, 0); err != nil {
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
	return map[string]*ebpf.Map{intakeMapD_flows: s.flows, intakeMapD_keys: s.keys, intakeMapD_rules: s.rules,
		intakeMapD_events: s.events, intakeMapD_counts: s.count, intakeMapLifts: s.lifts}
}

// WriteRules writes the rules in force: change and above levels by measurement, ^0 for a
// rule that is off (nothing exceeds it, as in package detect).
func (s *DetectState) WriteRules(change, above *[event.NumMeasurements]uint64) error {
	v := [2][event.NumMeasurements]uint64{*change, *above}
	return s.rules.Put(uint32(0), v)
}

// ErrClosed is what a Read returns once its state (detection, the sink's ring) is closed.
var ErrClosed = errors.New("xdp: closed")

// Read copies the events in the ring (at most len(buf)) into buf, after waiting timeout
// when there were none: the program does not wake the reader (a wakeup per event would
// cost it an irq_work and the reader a context switch), so a reader polls.
func (s *DetectState) Read(buf []Event, timeout time.Duration) (int, error) {
	var rec ringbuf.Record
	n := 0
	if s.rd.AvailableBytes() == 0 {
		s.rd.SetDeadline(time.Now().Add(timeout))
	} else {
		s.rd.SetDeadline(time.Now())
	}
	for n < len(buf) {
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

// The states of a table slot (bpf/detect.h's ST_*).
const (
	stEmpty uint32 = iota
	stBusy
	stReady
	stDeleted
)

// probes is the longest probe sequence (PROBES).
const probes = 32

// mix64 is the tables' hash step (bpf/detect.h's mix64).
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func flowHome(k *flowKey) uint64 {
	w := (*[5]uint64)(unsafe.Pointer(k))
	h := uint64(0x9E3779B97F4A7C15)
	for _, x := range w {
		h = mix64(h ^ x)
	}
	return h
}

func keyHome(k *KernelKey) uint64 {
	return mix64((uint64(k.Switch)<<32 | uint64(k.ID)) ^ uint64(k.Kind)<<56 ^ 0x9E3779B97F4A7C15)
}

// flowAt and keyAt are slot i of the tables, in the mapped memory.
func (s *DetectState) flowAt(i int) *KernelFlow {
	return (*KernelFlow)(unsafe.Pointer(&s.flowMem[i*int(unsafe.Sizeof(KernelFlow{}))]))
}

func (s *DetectState) keyAt(i int) *KernelKeyEntry {
	return (*KernelKeyEntry)(unsafe.Pointer(&s.keyMem[i*int(unsafe.Sizeof(KernelKeyEntry{}))]))
}

// lockEntry takes an entry's lock word (the program's take); false when it stayed taken.
func lockEntry(l *uint32) bool {
	for i := 0; i < 1<<16; i++ {
		if atomic.CompareAndSwapUint32(l, 0, 1) {
			return true
		}
		if i > 64 {
			runtime.Gosched()
		}
	}
	return false
}

// readFlow copies slot i's entry under its lock; false when the slot holds no flow.
func (s *DetectState) readFlow(i int, e *KernelFlow) bool {
	f := s.flowAt(i)
	if atomic.LoadUint32(&f.State) != stReady || !lockEntry(&f.Lock) {
		return false
	}
	*e = *f
	atomic.StoreUint32(&f.Lock, 0)
	return e.State == stReady
}

func (s *DetectState) readKey(i int, e *KernelKeyEntry) bool {
	k := s.keyAt(i)
	if atomic.LoadUint32(&k.State) != stReady || !lockEntry(&k.Lock) {
		return false
	}
	*e = *k
	atomic.StoreUint32(&k.Lock, 0)
	return e.State == stReady
}

// Flows calls fn with every flow entry of the kernel's table (read under its lock) until fn
// returns false.
func (s *DetectState) Flows(fn func(k *telemetry.FlowKey, e *KernelFlow) bool) error {
	var e KernelFlow
	for i := range s.flowSlots {
		if s.readFlow(i, &e) && !fn(&e.Key.K, &e) {
			return nil
		}
	}
	return nil
}

// findFlow returns flow k's slot, -1 when the table does not hold it.
func (s *DetectState) findFlow(k *flowKey) int {
	h := flowHome(k)
	for p := range probes {
		i := int((h + uint64(p)) & uint64(s.flowSlots-1))
		f := s.flowAt(i)
		switch atomic.LoadUint32(&f.State) {
		case stEmpty:
			return -1
		case stReady:
			if f.Key == *k {
				return i
			}
		}
	}
	return -1
}

// Flow returns flow k's entry.
func (s *DetectState) Flow(k telemetry.FlowKey) (KernelFlow, bool) {
	var e KernelFlow
	fk := flowKey{K: k}
	i := s.findFlow(&fk)
	if i < 0 || !s.readFlow(i, &e) || e.Key != fk {
		return KernelFlow{}, false
	}
	return e, true
}

// DeleteFlow forgets flow k.
func (s *DetectState) DeleteFlow(k telemetry.FlowKey) error {
	fk := flowKey{K: k}
	i := s.findFlow(&fk)
	if i < 0 {
		return ErrNotHeld
	}
	f := s.flowAt(i)
	if !lockEntry(&f.Lock) {
		return ErrNotHeld
	}
	ok := f.State == stReady && f.Key == fk
	if ok {
		atomic.StoreUint32(&f.State, stDeleted)
	}
	atomic.StoreUint32(&f.Lock, 0)
	if !ok {
		return ErrNotHeld
	}
	s.sweep(i, s.flowSlots, func(j int) *uint32 { return &s.flowAt(j).State })
	return nil
}

// ErrNotHeld is what a delete returns for a key the table does not hold.
var ErrNotHeld = errors.New("xdp: the kernel's table does not hold the key")

// sweep turns the tombstones that end at slot i back into empty slots where no probe
// sequence runs through them: a tombstone followed by an empty slot, and so on backwards.
// A program making an entry claims a tombstone with a compare-and-swap from the state it
// saw, so one turned empty meanwhile makes it look again.
func (s *DetectState) sweep(i, slots int, state func(int) *uint32) {
	next := (i + 1) & (slots - 1)
	if atomic.LoadUint32(state(next)) != stEmpty {
		return
	}
	for n := 0; n < slots && atomic.CompareAndSwapUint32(state(i), stDeleted, stEmpty); n++ {
		i = (i - 1) & (slots - 1)
	}
}

// Keys calls fn with every switch key and its entry until fn returns false.
func (s *DetectState) Keys(fn func(k *KernelKey, e *KernelKeyEntry) bool) error {
	var e KernelKeyEntry
	for i := range s.keySlots {
		if s.readKey(i, &e) && !fn(&e.Key, &e) {
			return nil
		}
	}
	return nil
}

// DeleteKey forgets switch key k.
func (s *DetectState) DeleteKey(k KernelKey) error {
	h := keyHome(&k)
	for p := range probes {
		i := int((h + uint64(p)) & uint64(s.keySlots-1))
		e := s.keyAt(i)
		st := atomic.LoadUint32(&e.State)
		if st == stEmpty {
			break
		}
		if st != stReady || e.Key != k {
			continue
		}
		if !lockEntry(&e.Lock) {
			return ErrNotHeld
		}
		ok := e.State == stReady && e.Key == k
		if ok {
			atomic.StoreUint32(&e.State, stDeleted)
		}
		atomic.StoreUint32(&e.Lock, 0)
		if ok {
			s.sweep(i, s.keySlots, func(j int) *uint32 { return &s.keyAt(j).State })
			return nil
		}
	}
	return ErrNotHeld
}

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
	for _, m := range []*[]byte{&s.flowMem, &s.keyMem} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	for _, m := range []*ebpf.Map{s.flows, s.keys, s.rules, s.events, s.count, s.lifts} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
