package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
)

// SinkProgramName is the sink program's name in the kernel (bpftool prog show).
const SinkProgramName = sinkProgIntakeSink

// Sink is the INT sink program attached to one interface, with its ring buffer's reader.
type Sink struct {
	ifname  string
	ifindex int
	mode    string
	coll    *ebpf.Collection
	counts  *ebpf.Map
	rd      *ringbuf.Reader
	rec     ringbuf.Record
	lnk     link.Link
	percpu  []uint64
	closed  bool
}

// sinkCollection loads the sink program and its maps for c, not attached.
func sinkCollection(c SinkConfig) (*ebpf.Collection, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	spec, err := loadSink() // bpf2go's: the embedded object
	if err != nil {
		return nil, fmt.Errorf("reading the sink's XDP object: %w", err)
	}
	var val, mask [MaxSinkDSCP]uint8
	for i, m := range c.DSCP {
		val[i], mask[i] = m.Value, m.Mask
	}
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], c.Port)
	var before uint8
	if c.TCPBeforeOptions || c.HostINT {
		before = 1
	}
	for name, v := range map[string]any{
		sinkVarSinkDscpN: uint8(len(c.DSCP)), sinkVarSinkDscpVal: val, sinkVarSinkDscpMask: mask,
		sinkVarSinkPort: binary.NativeEndian.Uint16(be[:]), sinkVarSinkVersions: c.versions(),
		sinkVarSinkTcpBeforeOpts: before,
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	ring := c.RingBytes
	if ring == 0 {
		ring = DefaultSinkRing
	}
	spec.Maps[sinkMapSinkRing].MaxEntries = uint32(ring)
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, loadError(err)
	}
	return coll, nil
}

// newSink loads the program for c and opens its ring, not attached (tests run it with
// BPF_PROG_TEST_RUN).
func newSink(c SinkConfig) (_ *Sink, err error) {
	coll, err := sinkCollection(c)
	if err != nil {
		return nil, err
	}
	s := &Sink{coll: coll, counts: coll.Maps[sinkMapSinkCounts]}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	s.percpu = make([]uint64, ncpu)
	if s.rd, err = ringbuf.NewReader(coll.Maps[sinkMapSinkRing]); err != nil {
		return nil, fmt.Errorf("the sink's ring buffer: %w", err)
	}
	return s, nil
}

// AttachSink loads the sink program for c and attaches it to interface ifname, natively
// where the driver supports it, else in generic mode (Mode says which).
func AttachSink(ifname string, c SinkConfig) (*Sink, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", ifname, err)
	}
	s, err := newSink(c)
	if err != nil {
		return nil, err
	}
	s.ifname, s.ifindex = ifname, ifc.Index
	if s.lnk, s.mode, err = attachLink(s.coll.Programs[SinkProgramName], ifc, c.Mode); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Mode says how the program is attached: ModeNative or ModeGeneric.
func (s *Sink) Mode() string { return s.mode }

// Interface is the interface's name; Ifindex its index.
func (s *Sink) Interface() string { return s.ifname }
func (s *Sink) Ifindex() int      { return s.ifindex }

// Read calls f with each record the ring holds, at most limit, after waiting up to timeout
// when it held none (the program does not wake the reader: a reader polls). A record's
// Frame is valid only during f. It returns how many records it read.
func (s *Sink) Read(limit int, timeout time.Duration, f func(*SinkRecord)) (int, error) {
	if s.rd.AvailableBytes() == 0 {
		s.rd.SetDeadline(time.Now().Add(timeout))
	} else {
		s.rd.SetDeadline(time.Now())
	}
	var r SinkRecord
	n := 0
	for n < limit {
		if err := s.rd.ReadInto(&s.rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if errors.Is(err, ringbuf.ErrClosed) {
				return n, ErrClosed
			}
			return n, err
		}
		b := s.rec.RawSample
		if len(b) < SinkRecordHeader {
			continue
		}
		r.Time = binary.NativeEndian.Uint64(b)
		r.Ifindex = binary.NativeEndian.Uint32(b[8:])
		l := int(binary.NativeEndian.Uint16(b[12:]))
		r.WireLen = int(binary.NativeEndian.Uint16(b[14:]))
		r.Frame = b[SinkRecordHeader:min(len(b), SinkRecordHeader+l)]
		f(&r)
		n++
	}
	return n, nil
}

// Wake makes a Read that waits return at once (Stop).
func (s *Sink) Wake() { s.rd.SetDeadline(time.Now()) }

// Counts adds the per-CPU outcome counters up into c (a system call per outcome: call it at
// scrape time).
func (s *Sink) Counts(c *[NumSinkOutcomes]uint64) error {
	if s.closed {
		return errors.New("xdp: sink closed")
	}
	for o := range NumSinkOutcomes {
		if err := s.counts.Lookup(uint32(o), s.percpu); err != nil {
			return err
		}
		var n uint64
		for _, v := range s.percpu {
			n += v
		}
		c[o] = n
	}
	return nil
}

// RunStats returns the program's run count and total run time while BPF statistics are on
// (EnableRunStats), as Program.RunStats does.
func (s *Sink) RunStats() (runs uint64, total time.Duration) {
	if s.closed {
		return 0, 0
	}
	st, err := s.coll.Programs[SinkProgramName].Stats()
	if err != nil {
		return 0, 0
	}
	return st.RunCount, st.Runtime
}

// Close detaches the program and frees it, its maps and the reader.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.lnk != nil {
		errs = append(errs, s.lnk.Close())
	}
	if s.rd != nil {
		errs = append(errs, s.rd.Close())
	}
	s.coll.Close()
	return errors.Join(errs...)
}
