package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// FlowCacheState is the kernel flow cache's state: its table, histograms, counters and
// eviction ring, BPF maps that outlive programs (a restart attaches a new program to the
// same state), and the ager that sweeps the table (a program of its own, run through
// BPF_PROG_TEST_RUN).
type FlowCacheState struct {
	F                                       FlowCache
	table, hist, swidx, glob, counts, evict *ebpf.Map
	mem                                     []byte // the table, mapped read-only
	ager                                    *ebpf.Program
	rd                                      *ringbuf.Reader
	ncpu                                    int
	rec                                     ringbuf.Record
	buf                                     []uint64
	off, offAt                              atomic.Int64 // ClockOffset's, and when it was read
}

// agerRows is how many rows one run of the ager sweeps: a run holds the CPU with bottom
// halves off, so the sweep goes in slices.
const agerRows = 1024

// NewFlowCacheState creates the maps for f (every row, histogram and counter zero), maps
// the table and loads the ager.
func NewFlowCacheState(f FlowCache) (_ *FlowCacheState, err error) {
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("flow cache in the kernel: %w", err)
	}
	if f.EvictRing == 0 {
		f.EvictRing = 4096
		for f.EvictRing < 16384*(16+f.bucketBytes()) {
			f.EvictRing <<= 1
		}
	}
	spec, err := objectSpec()
	if err != nil {
		return nil, err
	}
	s := &FlowCacheState{F: f}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.ncpu, err = ebpf.PossibleCPU(); err != nil {
		return nil, err
	}
	sizeFlowCacheMaps(spec, &f, s.ncpu)
	mk := func(name string) (*ebpf.Map, error) {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			ms := spec.Maps[name]
			return nil, fmt.Errorf("flow cache in the kernel: map %s of %d entries of %d bytes: %w", name, ms.MaxEntries, ms.ValueSize, err)
		}
		return m, nil
	}
	for _, p := range []struct {
		m    **ebpf.Map
		name string
	}{{&s.table, intakeMapFcTable}, {&s.hist, intakeMapFcHist}, {&s.swidx, intakeMapFcSwidx}, {&s.glob, intakeMapFcGlob}, {&s.counts, intakeMapFcCounts}, {&s.evict, intakeMapFcEvict}} {
		if *p.m, err = mk(p.name); err != nil {
			return nil, err
		}
	}
	if s.mem, err = unix.Mmap(s.table.FD(), 0, f.Rows*f.RowBytes(), unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("flow cache in the kernel: mapping the table: %w", err)
	}
	if err := setFlowCache(spec, &f); err != nil {
		return nil, err
	}
	var objs struct {
		Ager *ebpf.Program `ebpf:"intake_fc_age"`
	}
	opts := ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{intakeMapFcTable: s.table, intakeMapFcCounts: s.counts, intakeMapFcEvict: s.evict}}
	if err := spec.LoadAndAssign(&objs, &opts); err != nil {
		return nil, loadError(err)
	}
	s.ager = objs.Ager
	if s.rd, err = ringbuf.NewReader(s.evict); err != nil {
		return nil, fmt.Errorf("flow cache in the kernel: eviction ring: %w", err)
	}
	s.buf = make([]uint64, (8+f.bucketBytes())/8)
	return s, nil
}

// sizeFlowCacheMaps sizes the flow cache's maps in spec for f: the program's declarations
// are placeholders of one row of one bucket of one hop.
func sizeFlowCacheMaps(spec *ebpf.CollectionSpec, f *FlowCache, ncpu int) {
	size := func(name string, entries, value int) {
		ms := spec.Maps[name]
		if entries > 0 {
			ms.MaxEntries = uint32(entries)
		}
		if value > 0 {
			ms.ValueSize = uint32(value)
			ms.Key, ms.Value = nil, nil // the declared types are the placeholders'
		}
	}
	size(intakeMapFcTable, f.Rows, f.RowBytes())
	size(intakeMapFcHist, f.MaxSwitches+1, 3*f.Bins*8)
	size(intakeMapFcSwidx, f.MaxSwitches+ncpu, 0) // room for the switches CPUs number at once past the last
	size(intakeMapFcEvict, f.EvictRing, 0)
}

// setFlowCache sets the program's constants of the flow cache in the kernel.
func setFlowCache(spec *ebpf.CollectionSpec, f *FlowCache) error {
	for name, v := range map[string]any{
		intakeVarFcMask: uint32(f.Rows - 1), intakeVarFcBuckets: uint32(f.Buckets), intakeVarFcHops: uint32(f.MaxHops),
		intakeVarFcHdr: uint32(f.rowHeader()), intakeVarFcBkt: uint32(f.bucketBytes()), intakeVarFcBins: uint32(f.Bins),
		intakeVarFcHlog: b2u8(f.LogBins), intakeVarFcWidth: f.Widths, intakeVarFcMaxsw: uint32(f.MaxSwitches),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

// prepare readies spec for load with the flow cache in this state: its constants, the
// parser's when detection (which sets them from the same listener's decoder) is off, and
// the state's maps in opts.
func (s *FlowCacheState) prepare(spec *ebpf.CollectionSpec, opts *ebpf.CollectionOptions, detect bool) error {
	f := &s.F
	if err := setFlowCache(spec, f); err != nil {
		return err
	}
	vars := map[string]any{intakeVarFcKernel: uint8(1)}
	if f.Lift {
		vars[intakeVarKernelLift] = uint8(1)
	}
	if !detect {
		if err := setParser(spec, &f.Parser); err != nil {
			return err
		}
	}
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	if opts.MapReplacements == nil {
		opts.MapReplacements = map[string]*ebpf.Map{}
	}
	for name, m := range map[string]*ebpf.Map{intakeMapFcTable: s.table, intakeMapFcHist: s.hist, intakeMapFcSwidx: s.swidx,
		intakeMapFcGlob: s.glob, intakeMapFcCounts: s.counts, intakeMapFcEvict: s.evict} {
		ms := spec.Maps[name]
		ms.MaxEntries, ms.ValueSize = m.MaxEntries(), m.ValueSize()
		opts.MapReplacements[name] = m
	}
	return nil
}

// setParser sets the report parser's constants: where it looks for INT.
func setParser(spec *ebpf.CollectionSpec, p *Parser) error {
	var val, mask [MaxDSCP]uint8
	for i, m := range p.DSCP {
		val[i], mask[i] = m.Value, m.Mask
	}
	for name, v := range map[string]any{
		intakeVarDecDscpN: uint8(len(p.DSCP)), intakeVarDecDscpVal: val, intakeVarDecDscpMask: mask, intakeVarDecProbe: b2u8(p.Probe),
		intakeVarDecQuirks: b2u8(p.Quirks), intakeVarDecGpePort: p.GPEPort, intakeVarDecGenevePort: p.GenevePort, intakeVarDecIntPort: p.INTPort,
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Table returns the kernel's table, mapped read-only: F.Rows rows of package flowcache's
// layout (F.RowBytes each), a row's first 32-bit word a sequence count that is odd while the
// program writes the row. Its times are CLOCK_MONOTONIC ns (MonoOffset makes them Unix
// time).
func (s *FlowCacheState) Table() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&s.mem[0])), len(s.mem)/8)
}

// ClockOffset returns what turns the table's times into Unix ns: CLOCK_REALTIME less
// CLOCK_MONOTONIC, read again once a second, as a worker does for its frames' times. A new
// reading replaces the last one only when the clocks really moved apart (beyond the
// reading's own uncertainty), so that a report's time reads the same in every answer.
func (s *FlowCacheState) ClockOffset() int64 {
	now := time.Now().UnixNano()
	if at := s.offAt.Load(); at != 0 && now-at < int64(time.Second) {
		return s.off.Load()
	}
	off, unc := monoOffset()
	if old := s.off.Load(); s.offAt.Load() == 0 || off-old > unc || old-off > unc {
		s.off.Store(off)
	}
	s.offAt.Store(now)
	return s.off.Load()
}

// monoOffset is MonoOffset, the best of three readings: the offset from the one whose
// monotonic reads were closest together, and half that gap (its uncertainty).
func monoOffset() (off, unc int64) {
	unc = -1
	for range 3 {
		var a, b unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		now := time.Now().UnixNano()
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if gap := (b.Nano() - a.Nano()) / 2; unc < 0 || gap < unc {
			off, unc = now-(a.Nano()+b.Nano())/2, gap
		}
	}
	return off, unc
}

// Age evicts every flow last updated before cut (CLOCK_MONOTONIC ns) into the eviction ring
// (reason idle) and returns how many.
func (s *FlowCacheState) Age(cut int64) (int, error) {
	var in, out [64]byte
	n := 0
	for first := 0; first < s.F.Rows; first += agerRows {
		binary.NativeEndian.PutUint64(in[0:], uint64(cut))
		binary.NativeEndian.PutUint32(in[8:], uint32(first))
		binary.NativeEndian.PutUint32(in[12:], uint32(min(agerRows, s.F.Rows-first)))
		ret, err := s.ager.Run(&ebpf.RunOptions{Data: in[:], DataOut: out[:]})
		if err != nil {
			return n, fmt.Errorf("flow cache in the kernel: the ager: %w", err)
		}
		if ret != xdpDropAction {
			return n, fmt.Errorf("flow cache in the kernel: the ager refused rows %d-%d", first, first+agerRows-1)
		}
		n += int(binary.NativeEndian.Uint32(out[16:]))
	}
	return n, nil
}

const xdpDropAction = 1

// ReadEvicted calls fn with every record waiting in the eviction ring, without waiting for
// more: the bucket (package flowcache's layout, its times CLOCK_MONOTONIC ns) and why it
// was evicted (flowcache.Reason: 1 collision, 2 idle). fn must not keep b. It returns how
// many records it read. One reader at a time.
func (s *FlowCacheState) ReadEvicted(fn func(b []uint64, why uint8)) (int, error) {
	n := 0
	s.rd.SetDeadline(time.Now())
	w := unsafe.Slice((*byte)(unsafe.Pointer(&s.buf[0])), len(s.buf)*8)
	for {
		if err := s.rd.ReadInto(&s.rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return n, nil
			}
			if errors.Is(err, ringbuf.ErrClosed) {
				return n, ErrClosed
			}
			return n, err
		}
		if len(s.rec.RawSample) < len(w) {
			continue
		}
		copy(w, s.rec.RawSample)
		fn(s.buf[1:], uint8(s.buf[0]))
		n++
	}
}

// Pending returns the records waiting in the eviction ring.
func (s *FlowCacheState) Pending() int {
	return s.rd.AvailableBytes() / (8 + 8 + s.F.bucketBytes()) // a record has an 8-byte header
}

// Switches returns the switch ids with histograms, ascending.
func (s *FlowCacheState) Switches() ([]uint32, error) {
	var ids []uint32
	var sw, v uint32
	it := s.swidx.Iterate()
	for it.Next(&sw, &v) {
		if v != 0 && int(v) <= s.F.MaxSwitches {
			ids = append(ids, sw)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids, it.Err()
}

// Hist adds switch sw's histograms, summed over CPUs, into dst (3 × F.Bins counters: hop
// latency, queue occupancy, tx utilization); false when sw has none.
func (s *FlowCacheState) Hist(sw uint32, dst []uint64) (bool, error) {
	var v uint32
	if err := s.swidx.Lookup(sw, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return false, nil
		}
		return false, err
	}
	if v == 0 || int(v) > s.F.MaxSwitches {
		return false, nil
	}
	return true, s.histAt(v-1, dst)
}

// E2E adds the end-to-end latency histogram, summed over CPUs, into dst (F.Bins counters).
func (s *FlowCacheState) E2E(dst []uint64) error {
	return s.histAt(uint32(s.F.MaxSwitches), dst)
}

func (s *FlowCacheState) histAt(i uint32, dst []uint64) error {
	b, err := s.hist.LookupBytes(i) // every CPU's counters, one after the other
	if err != nil {
		return err
	}
	per := 3 * s.F.Bins
	for cpu := 0; (cpu+1)*per*8 <= len(b); cpu++ {
		for j := range min(len(dst), per) {
			dst[j] += binary.NativeEndian.Uint64(b[(cpu*per+j)*8:])
		}
	}
	return nil
}

// Counts returns the counters, summed over CPUs.
func (s *FlowCacheState) Counts() (FlowCacheCounts, error) {
	var c FlowCacheCounts
	dst := []*uint64{&c.Reports, &c.NoHops, &c.NoFlow, &c.Truncated, &c.Updates, &c.Inserts, &c.New,
		&c.Collisions, &c.Idle, &c.Pushed, &c.RingFull, &c.Overflow, &c.LockBusy}
	per := make([]uint64, s.ncpu)
	for i, p := range dst {
		if err := s.counts.Lookup(uint32(i), per); err != nil {
			return c, err
		}
		for _, v := range per {
			*p += v
		}
	}
	var g uint32
	if err := s.glob.Lookup(uint32(0), &g); err != nil {
		return c, err
	}
	c.Switches = min(int(g), s.F.MaxSwitches)
	return c, nil
}

// Close unmaps the table, frees the maps and the ager (a program still attached keeps the
// maps alive) and ends ReadEvicted.
func (s *FlowCacheState) Close() error {
	var errs []error
	if s.rd != nil {
		errs = append(errs, s.rd.Close())
	}
	if s.mem != nil {
		errs = append(errs, unix.Munmap(s.mem))
		s.mem = nil
	}
	if s.ager != nil {
		errs = append(errs, s.ager.Close())
	}
	for _, m := range []*ebpf.Map{s.table, s.hist, s.swidx, s.glob, s.counts, s.evict} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
