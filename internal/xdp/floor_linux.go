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

// FloorName is the floor program's name in the kernel (bpftool prog show).
const FloorName = "intake_floor"

// Floor is the floor of `intake bench ingest --mode kernel` (docs/xdp.md, "Measuring the
// modes"): an XDP program that counts every frame and drops it. With the same load sent to
// it, the whole machine's CPU is what the sender, the device and the least an XDP program
// can do cost; what a receive path costs above that is its own. It is built here with
// package asm (a map lookup and an add), not from the C object, so that it does nothing
// else.
type Floor struct {
	prog   *ebpf.Program
	count  *ebpf.Map // per-CPU, one u64
	lnk    link.Link
	mode   string
	percpu []uint64
}

// newFloor loads the program and its counter, not attached.
func newFloor() (_ *Floor, err error) {
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
	const drop = 1 // XDP_DROP
	f.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: FloorName, Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{
			// count[0]++ (this CPU's), then drop.
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, f.count.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "drop"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, drop).WithSymbol("drop"),
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
func AttachFloor(ifname string) (*Floor, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", ifname, err)
	}
	f, err := newFloor()
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

// Count is the frames the program has counted (and dropped), summed over CPUs.
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
