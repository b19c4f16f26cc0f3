package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// ProgramName is the XDP program's name in the kernel (bpftool prog show).
const ProgramName = intakeProgIntakeXdp

// MaxQueues is the most receive queues a program redirects (the XSKMAP's size).
const MaxQueues = 256

// Program is intake's XDP program attached to one interface.
type Program struct {
	ifname  string
	ifindex int
	mode    string
	coll    *ebpf.Collection
	xsks    *ebpf.Map
	counts  *ebpf.Map
	lnk     link.Link
	percpu  []uint64 // scratch for per-CPU lookups
	ncpu    int
	closed  bool
	ownPort uint16
}

// Mode values: how the program is attached.
const (
	ModeNative  = "native"  // in the driver's receive path (XDP_FLAGS_DRV_MODE)
	ModeGeneric = "generic" // after the kernel built its socket buffer (XDP_FLAGS_SKB_MODE)
)

// Options choose how Attach attaches.
type Options struct {
	// Mode is "" (native where the driver has it, generic otherwise), ModeNative or
	// ModeGeneric.
	Mode string
	// Stores, when set, makes the program write DTA reports into them (DTA, NewDTAStores).
	Stores *DTAStores
	// Detect, when set, makes the program detect the reports it can parse with this
	// state (detect.kernel; NewDetectState).
	Detect *DetectState
	// FlowCache, when set, makes the program keep the flow cache of the reports it can
	// parse in this state (flowcache.kernel; NewFlowCacheState).
	FlowCache *FlowCacheState
}

// DTAStores are the kernel-written DTA stores: BPF_F_MMAPABLE arrays of 8-byte slots, mapped
// into this process. KW, KI and AP are their memory: the data of a Key-Write, a
// Key-Increment and an Append region (docs/dta-layout.md) that the program writes and user
// space reads and writes too (the translator's own reports, queries). They outlive programs: a restart
// attaches a new program to the same stores.
type DTAStores struct {
	D          DTA
	KW, KI, AP []byte
	kw, ki, ap *ebpf.Map
}

// NewDTAStores creates the arrays for d and maps them.
func NewDTAStores(d DTA) (_ *DTAStores, err error) {
	if err := d.Check(); err != nil {
		return nil, fmt.Errorf("dta in the kernel: %w", err)
	}
	s := &DTAStores{D: d}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	mk := func(name string, slots int) (*ebpf.Map, []byte, error) {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8,
			MaxEntries: uint32(max(slots, 1)), Flags: unix.BPF_F_MMAPABLE})
		if err != nil {
			return nil, nil, fmt.Errorf("%s array of %d slots: %w", name, slots, err)
		}
		mem, err := unix.Mmap(m.FD(), 0, max(slots, 1)*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("mapping %s: %w", name, err)
		}
		return m, mem[:slots*8], nil
	}
	if s.kw, s.KW, err = mk(intakeMapKwStore, d.KWSlots); err != nil {
		return nil, err
	}
	if s.ki, s.KI, err = mk(intakeMapKiStore, d.KISlots); err != nil {
		return nil, err
	}
	if s.ap, s.AP, err = mk(intakeMapApStore, d.APBytes()/8); err != nil {
		return nil, err
	}
	return s, nil
}

// KWID, KIID and APID are the arrays' ids (for readers: dta's region headers name them).
func (s *DTAStores) KWID() uint32 { return mapID(s.kw) }
func (s *DTAStores) KIID() uint32 { return mapID(s.ki) }
func (s *DTAStores) APID() uint32 { return mapID(s.ap) }

func mapID(m *ebpf.Map) uint32 {
	info, err := m.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return uint32(id)
}

// Close unmaps and releases the arrays (a program still attached keeps them alive).
func (s *DTAStores) Close() error {
	var errs []error
	for _, m := range []*[]byte{&s.KW, &s.KI, &s.AP} {
		if cap(*m) > 0 {
			errs = append(errs, unix.Munmap((*m)[:cap(*m)]))
			*m = nil
		}
	}
	for _, m := range []*ebpf.Map{s.kw, s.ki, s.ap} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// Attach loads the program for UDP port and attaches it to interface ifname: natively
// where the driver supports it, else in generic mode (Program.Mode says which). A load the
// verifier refuses returns an error holding the verifier's log.
func Attach(ifname string, port uint16, opt Options) (*Program, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", ifname, err)
	}
	coll, err := load(port, opt)
	if err != nil {
		return nil, err
	}
	p := &Program{ifname: ifname, ifindex: ifc.Index, coll: coll, xsks: coll.Maps[intakeMapXsks], counts: coll.Maps[intakeMapOutcomes], ownPort: port}
	p.ncpu, err = ebpf.PossibleCPU()
	if err != nil {
		coll.Close()
		return nil, err
	}
	p.percpu = make([]uint64, p.ncpu)
	if p.lnk, p.mode, err = attachLink(coll.Programs[ProgramName], ifc, opt.Mode); err != nil {
		coll.Close()
		return nil, err
	}
	return p, nil
}

// attachLink attaches prog to interface ifc through a bpf_link, in mode: ModeNative,
// ModeGeneric, or "" for native where the driver supports it and generic otherwise. It
// returns the link and the mode used; its error says why each mode tried failed.
func attachLink(prog *ebpf.Program, ifc *net.Interface, mode string) (link.Link, string, error) {
	try := []struct {
		mode  string
		flags link.XDPAttachFlags
	}{{ModeNative, link.XDPDriverMode}, {ModeGeneric, link.XDPGenericMode}}
	var errs []error
	for _, t := range try {
		if mode != "" && mode != t.mode {
			continue
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: t.flags})
		if err == nil {
			return l, t.mode, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", t.mode, err))
	}
	// A bpf_link ends with the process that holds it: intake's program still attached
	// means another collector is running on the interface, not one that crashed.
	if ids, _ := Attached(ifc.Index); len(ids) > 0 {
		return nil, "", fmt.Errorf("attaching XDP to %s: intake's program is already attached by another running process (bpf_link %v): one collector per interface", ifc.Name, ids)
	}
	if errors.Is(errors.Join(errs...), unix.EBUSY) || errors.Is(errors.Join(errs...), unix.EEXIST) {
		return nil, "", fmt.Errorf("attaching XDP to %s: another XDP program is attached (bpftool net show dev %s): %w", ifc.Name, ifc.Name, errors.Join(errs...))
	}
	return nil, "", fmt.Errorf("attaching XDP to %s: %w", ifc.Name, errors.Join(errs...))
}

// objectSpec reads the program's object (embedded by bpf2go's intake_bpfel.go): its
// programs, maps and constants, not loaded.
func objectSpec() (*ebpf.CollectionSpec, error) {
	spec, err := loadIntake()
	if err != nil {
		return nil, fmt.Errorf("reading the XDP object: %w", err)
	}
	return spec, nil
}

// load loads the program and its maps for UDP port, writing DTA reports into opt.Stores,
// detecting with opt.Detect and keeping the flow cache in opt.FlowCache when set, not
// attached.
func load(port uint16, opt Options) (*ebpf.Collection, error) {
	st := opt.Stores
	spec, err := objectSpec()
	if err != nil {
		return nil, err
	}
	delete(spec.Programs, intakeProgIntakeFcAge) // the flow cache's ager: FlowCacheState loads it
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], port)
	if err := spec.Variables[intakeVarListenPort].Set(binary.NativeEndian.Uint16(be[:])); err != nil {
		return nil, fmt.Errorf("setting the port: %w", err)
	}
	var opts ebpf.CollectionOptions
	if st != nil {
		d := &st.D
		cm := uint32(uint64(1)<<d.KWCheckBits - 1)
		for name, v := range map[string]any{
			intakeVarDtaKernel: uint8(1), intakeVarDtaHdrLen: uint8(d.HeaderLen), intakeVarDtaKeyLen: uint8(d.KeyLen),
			intakeVarDtaDataLen: uint8(d.DataLen), intakeVarDtaSeed: d.Seed,
			intakeVarKwMask: uint32(max(d.KWSlots, 1) - 1), intakeVarKwMaxn: uint32(d.KWMaxN), intakeVarKwCmask: cm, intakeVarKwVbytes: uint32(d.KWValueBytes),
			intakeVarKiMask: uint32(max(d.KISlots, 1) - 1), intakeVarKiMaxn: uint32(d.KIMaxN),
			intakeVarApLists: uint32(d.APLists), intakeVarApMask: uint32(max(d.APEntries, 1) - 1),
		} {
			if err := spec.Variables[name].Set(v); err != nil {
				return nil, fmt.Errorf("setting %s: %w", name, err)
			}
		}
		if d.KWSlots == 0 {
			spec.Variables[intakeVarKwMaxn].Set(uint32(0))
		}
		if d.KISlots == 0 {
			spec.Variables[intakeVarKiMaxn].Set(uint32(0))
		}
		spec.Maps[intakeMapKwStore].MaxEntries = uint32(max(d.KWSlots, 1))
		spec.Maps[intakeMapKiStore].MaxEntries = uint32(max(d.KISlots, 1))
		spec.Maps[intakeMapApStore].MaxEntries = uint32(max(d.APBytes()/8, 1))
		opts.MapReplacements = map[string]*ebpf.Map{intakeMapKwStore: st.kw, intakeMapKiStore: st.ki, intakeMapApStore: st.ap}
	}
	if ds := opt.Detect; ds != nil {
		if err := setDetect(spec, ds); err != nil {
			return nil, err
		}
		if opts.MapReplacements == nil {
			opts.MapReplacements = map[string]*ebpf.Map{}
		}
		for name, m := range ds.replacements() {
			spec.Maps[name].MaxEntries = m.MaxEntries()
			opts.MapReplacements[name] = m
		}
	}
	if fs := opt.FlowCache; fs != nil {
		if err := fs.prepare(spec, &opts, opt.Detect != nil); err != nil {
			return nil, err
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return nil, loadError(err)
	}
	return coll, nil
}

// setDetect sets the program's constants of detection in the kernel.
func setDetect(spec *ebpf.CollectionSpec, ds *DetectState) error {
	if err := setParser(spec, &ds.D.Parser); err != nil {
		return err
	}
	for name, v := range map[string]any{
		intakeVarDetKernel: uint8(1), intakeVarKernelLift: b2u8(ds.D.Lift),
		intakeVarFlowMask: uint32(ds.flowSlots - 1), intakeVarKeyMask: uint32(ds.keySlots - 1),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

// loadError wraps a load failure, with the verifier's whole log when the verifier refused.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the kernel's verifier refused the XDP program: %+v", ve)
	}
	return fmt.Errorf("loading the XDP program: %w", err)
}

// Mode says how the program is attached: ModeNative or ModeGeneric.
func (p *Program) Mode() string { return p.mode }

// Interface is the interface's name.
func (p *Program) Interface() string { return p.ifname }

// Ifindex is the interface's index.
func (p *Program) Ifindex() int { return p.ifindex }

// Register makes the program redirect frames of receive queue q into s.
func (p *Program) Register(q int, s *Socket) error {
	if err := p.xsks.Put(uint32(q), uint32(s.fd)); err != nil {
		return fmt.Errorf("XSKMAP[%d]: %w", q, err)
	}
	return nil
}

// Unregister stops redirecting queue q: its frames pass to the kernel.
func (p *Program) Unregister(q int) { p.xsks.Delete(uint32(q)) }

// Counts adds the per-CPU outcome counters up into c. It makes a system call per outcome;
// call it at scrape time, not per packet.
func (p *Program) Counts(c *[NumOutcomes]uint64) error {
	if p.closed {
		return errors.New("xdp: program closed")
	}
	for o := range NumOutcomes {
		if err := p.counts.Lookup(uint32(o), p.percpu); err != nil {
			return err
		}
		var n uint64
		for _, v := range p.percpu {
			n += v
		}
		c[o] = n
	}
	return nil
}

// RunStats returns the program's run count and total run time, which the kernel keeps
// while BPF statistics are on (sysctl kernel.bpf_stats_enabled, or EnableRunStats); zeros
// otherwise.
func (p *Program) RunStats() (runs uint64, total time.Duration) {
	if p.closed {
		return 0, 0
	}
	st, err := p.coll.Programs[ProgramName].Stats()
	if err != nil {
		return 0, 0
	}
	return st.RunCount, st.Runtime
}

// EnableRunStats turns the kernel's BPF run-time statistics on until the returned closer is
// closed (they cost a clock read per run, so they are off by default).
func EnableRunStats() (io.Closer, error) { return ebpf.EnableStats(unix.BPF_STATS_RUN_TIME) }

// Close detaches the program from the interface and frees it.
func (p *Program) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.lnk.Close()
	p.coll.Close()
	return err
}

// RxQueues returns the number of receive queues of interface ifname, from sysfs (1 when
// sysfs does not say).
func RxQueues(ifname string) int {
	ents, err := os.ReadDir("/sys/class/net/" + ifname + "/queues")
	if err != nil {
		return 1
	}
	n := 0
	for _, e := range ents {
		if s, ok := strings.CutPrefix(e.Name(), "rx-"); ok {
			if _, err := strconv.Atoi(s); err == nil {
				n++
			}
		}
	}
	return max(n, 1)
}

// Attached returns the ids of the XDP links on interface ifindex whose program is intake's,
// for tests and diagnostics (a link ends with the process holding it).
func Attached(ifindex int) ([]int, error) {
	var ids []int
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		l := it.Take()
		info, err := l.Info()
		l.Close()
		if err != nil || info.Type != link.XDPType {
			continue
		}
		x := info.XDP()
		if x == nil || int(x.Ifindex) != ifindex {
			continue
		}
		if prog, err := ebpf.NewProgramFromID(info.Program); err == nil {
			pi, err := prog.Info()
			prog.Close()
			if err == nil && pi.Name == ProgramName {
				ids = append(ids, int(info.ID))
			}
		}
	}
	return ids, it.Err()
}
