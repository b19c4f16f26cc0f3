package xdp

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// FloorName and FloorPassName are the floor programs' names in the kernel (bpftool prog
// show): the one that drops and the one that passes.
const (
	FloorName     = "intake_floor"
	FloorPassName = "intake_flr_pass"
)

// Floor is the floor of `intake bench ingest --mode kernel` (docs/xdp.md, "Measuring the
// modes"): an XDP program that counts every frame and drops it. With the same load sent to
// it, the whole machine's CPU is what the sender, the device and the least an XDP program
// can do cost; what a receive path costs above that is its own. It is built here with
// package asm (a map lookup and an add), not from the C object, so that it does nothing
// else. AttachFloorPass's counts and passes every frame instead: the floor of `intake bench
// sink` (docs/sink.md), under which the host's stack still delivers every packet, as it
// does under the INT sink.
type Floor struct {
	prog   *ebpf.Program
	count  *ebpf.Map // per-CPU, one u64
	lnk    link.Link
	mode   string
	percpu []uint64
}

// xdpPassAction is XDP_PASS (xdpDropAction, flowcache_linux.go, is XDP_DROP).
const xdpPassAction = 2

// newFloor loads the program that returns action (xdpDropAction or xdpPassAction) and its
// counter, not attached.
func newFloor(action int32) (_ *Floor, err error) {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	f := &Floor{percpu: make([]uint64, ncpu)}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	f.count, err = ebpf.NewMap(&ebpf.MapSpec{Name: "floor_count", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("the floor's counter: %w", err)
	}
	name := FloorName
	if action == xdpPassAction {
		name = FloorPassName
	}
	f.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{
			// count[0]++ (this CPU's), then the action.
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, f.count.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, action).WithSymbol("out"),
			asm.Return(),
		}})
	if err != nil {
		return nil, loadError(err)
	}
	return f, nil
}

// AttachFloor loads the floor program and attaches it to interface ifname, natively where
// the driver supports it, else in generic mode (Mode says which), as Attach does intake's.
// Every frame the interface receives is then dropped, until Close.
func AttachFloor(ifname string) (*Floor, error) { return attachFloor(ifname, xdpDropAction) }

// AttachFloorPass is AttachFloor with the program that counts every frame and passes it to
// the host's stack (XDP_PASS), as the INT sink passes every packet.
func AttachFloorPass(ifname string) (*Floor, error) { return attachFloor(ifname, xdpPassAction) }

func attachFloor(ifname string, action int32) (*Floor, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", ifname, err)
	}
	f, err := newFloor(action)
	if err != nil {
		return nil, err
	}
	if f.lnk, f.mode, err = attachLink(f.prog, ifc, ""); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Mode says how the floor is attached: ModeNative or ModeGeneric.
func (f *Floor) Mode() string { return f.mode }

// Count is the frames the program has counted (and dropped or passed), summed over CPUs.
func (f *Floor) Count() (uint64, error) {
	if f.count == nil {
		return 0, errors.New("xdp: floor closed")
	}
	if err := f.count.Lookup(uint32(0), f.percpu); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range f.percpu {
		n += v
	}
	return n, nil
}

// RunStats returns the program's run count and total run time while BPF statistics are
// on (EnableRunStats), as Program.RunStats does; zeros otherwise.
func (f *Floor) RunStats() (runs uint64, total time.Duration) {
	if f.prog == nil {
		return 0, 0
	}
	st, err := f.prog.Stats()
	if err != nil {
		return 0, 0
	}
	return st.RunCount, st.Runtime
}

// Close detaches the program and frees it and its counter.
func (f *Floor) Close() error {
	var errs []error
	if f.lnk != nil {
		errs = append(errs, f.lnk.Close())
		f.lnk = nil
	}
	if f.prog != nil {
		errs = append(errs, f.prog.Close())
		f.prog = nil
	}
	if f.count != nil {
		errs = append(errs, f.count.Close())
		f.count = nil
	}
	return errors.Join(errs...)
}
