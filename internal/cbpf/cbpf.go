// Package cbpf assembles classic BPF programs (the socket filter language of Linux's
// Documentation/networking/filter.rst) from instructions with named jump targets. Package
// ingest builds its SO_REUSEPORT program with it (docs/ingest.md, "Spreading one exporter").
// Classic BPF, unlike eBPF, may be attached by any user: the program needs no privilege.
//
// A conditional jump reaches at most 255 instructions forward; Assemble inserts an
// unconditional jump where a target is farther, so that a program may jump to any label
// after the jump. Backward jumps do not exist in classic BPF.
package cbpf

import "fmt"

// Instruction classes, sizes, modes and operations (linux/filter.h, linux/bpf_common.h).
const (
	ld   = 0x00
	ldx  = 0x01
	st   = 0x02
	stx  = 0x03
	alu  = 0x04
	jmp  = 0x05
	ret  = 0x06
	misc = 0x07

	w = 0x00
	h = 0x08
	b = 0x10

	imm     = 0x00
	abs     = 0x20
	ind     = 0x40
	mem     = 0x60
	lenMode = 0x80

	jeq  = 0x10
	jgt  = 0x20
	jge  = 0x30
	jset = 0x40
	ja   = 0x00

	srcK = 0x00
	srcX = 0x08
	srcA = 0x10 // ret A

	tax = 0x00
	txa = 0x80
)

// ALU operations for Prog.ALU and Prog.ALUX.
const (
	Add = 0x00
	Sub = 0x10
	Mul = 0x20
	Div = 0x30
	Or  = 0x40
	And = 0x50
	Lsh = 0x60
	Rsh = 0x70
	Mod = 0x90
	Xor = 0xa0
)

// Scratch is the number of scratch memory words M[0..Scratch-1].
const Scratch = 16

// MaxInstructions is the longest program the kernel accepts (BPF_MAXINSNS).
const MaxInstructions = 4096

// Raw is one encoded instruction, as struct sock_filter holds it.
type Raw struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

type insn struct {
	code         uint16
	k            uint32
	jt, jf       string // jump targets by label; "" is the next instruction
	tnode, fnode *insn
	labels       []string
	pos          int
}

// Prog is a program being written. The zero value is an empty program.
type Prog struct {
	ins     []*insn
	pending []string // labels waiting for the next instruction
	n       int      // labels made by Fresh
}

func (p *Prog) add(code uint16, k uint32, jt, jf string) {
	p.ins = append(p.ins, &insn{code: code, k: k, jt: jt, jf: jf, labels: p.pending})
	p.pending = nil
}

// Label names the next instruction written.
func (p *Prog) Label(name string) { p.pending = append(p.pending, name) }

// Fresh returns a label name not used before, for code generated in loops.
func (p *Prog) Fresh(prefix string) string {
	p.n++
	return fmt.Sprintf("%s.%d", prefix, p.n)
}

// LdAbs loads size bytes (1, 2 or 4, big-endian) at offset off of the packet into A.
func (p *Prog) LdAbs(size int, off uint32) { p.add(ld|sizeCode(size)|abs, off, "", "") }

// LdInd loads size bytes at offset X+off into A.
func (p *Prog) LdInd(size int, off uint32) { p.add(ld|sizeCode(size)|ind, off, "", "") }

// LdLen loads the packet's length into A.
func (p *Prog) LdLen() { p.add(ld|w|lenMode, 0, "", "") }

// LdImm sets A to k; LdxImm sets X to k.
func (p *Prog) LdImm(k uint32)  { p.add(ld|w|imm, k, "", "") }
func (p *Prog) LdxImm(k uint32) { p.add(ldx|w|imm, k, "", "") }

// LdMem loads M[i] into A; LdxMem into X; St stores A into M[i]; Stx stores X.
func (p *Prog) LdMem(i int)  { p.add(ld|w|mem, uint32(i), "", "") }
func (p *Prog) LdxMem(i int) { p.add(ldx|w|mem, uint32(i), "", "") }
func (p *Prog) St(i int)     { p.add(st, uint32(i), "", "") }
func (p *Prog) Stx(i int)    { p.add(stx, uint32(i), "", "") }

// ALU applies op (Add, Sub, ...) to A with the constant k; ALUX with X.
func (p *Prog) ALU(op uint16, k uint32) { p.add(alu|op|srcK, k, "", "") }
func (p *Prog) ALUX(op uint16)          { p.add(alu|op|srcX, 0, "", "") }

// Tax copies A to X; Txa X to A.
func (p *Prog) Tax() { p.add(misc|tax, 0, "", "") }
func (p *Prog) Txa() { p.add(misc|txa, 0, "", "") }

// Jeq, Jgt, Jge and Jset compare A with k (==, >, >=, A&k != 0) and jump to t when true,
// to f when false ("" is the next instruction).
func (p *Prog) Jeq(k uint32, t, f string)  { p.add(jmp|jeq|srcK, k, t, f) }
func (p *Prog) Jgt(k uint32, t, f string)  { p.add(jmp|jgt|srcK, k, t, f) }
func (p *Prog) Jge(k uint32, t, f string)  { p.add(jmp|jge|srcK, k, t, f) }
func (p *Prog) Jset(k uint32, t, f string) { p.add(jmp|jset|srcK, k, t, f) }

// JgtX and JgeX compare A with X.
func (p *Prog) JgtX(t, f string) { p.add(jmp|jgt|srcX, 0, t, f) }
func (p *Prog) JgeX(t, f string) { p.add(jmp|jge|srcX, 0, t, f) }

// Ja jumps to t.
func (p *Prog) Ja(t string) { p.add(jmp|ja, 0, t, "") }

// Ret ends the program with k; RetA with A.
func (p *Prog) Ret(k uint32) { p.add(ret|srcK, k, "", "") }
func (p *Prog) RetA()        { p.add(ret|srcA, 0, "", "") }

func sizeCode(size int) uint16 {
	switch size {
	case 1:
		return b
	case 2:
		return h
	case 4:
		return w
	}
	panic(fmt.Sprintf("cbpf: load size %d", size))
}

// Assemble resolves the labels and encodes the program.
func (p *Prog) Assemble() ([]Raw, error) {
	if len(p.pending) > 0 {
		return nil, fmt.Errorf("cbpf: label %q names no instruction", p.pending[0])
	}
	if len(p.ins) == 0 || p.ins[len(p.ins)-1].code&0x07 != ret {
		return nil, fmt.Errorf("cbpf: the program does not end with a return")
	}
	labels := map[string]*insn{}
	for _, i := range p.ins {
		for _, l := range i.labels {
			if labels[l] != nil {
				return nil, fmt.Errorf("cbpf: label %q defined twice", l)
			}
			labels[l] = i
		}
	}
	ins := append([]*insn(nil), p.ins...)
	target := func(name string, next int) (*insn, error) {
		if name == "" {
			return ins[next], nil // the last instruction is a return: next exists
		}
		if t := labels[name]; t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("cbpf: undefined label %q", name)
	}
	for k, i := range ins {
		if i.code&0x07 != jmp {
			continue
		}
		var err error
		if i.tnode, err = target(i.jt, k+1); err != nil {
			return nil, err
		}
		if i.code&0xf0 != ja {
			if i.fnode, err = target(i.jf, k+1); err != nil {
				return nil, err
			}
		}
	}
	// Lay out, inserting a long jump after every conditional whose target is beyond 255
	// instructions, until none is.
	for changed := true; changed; {
		changed = false
		for k, i := range ins {
			i.pos = k
		}
		out := make([]*insn, 0, len(ins))
		for _, i := range ins {
			out = append(out, i)
			if i.code&0x07 != jmp || i.code&0xf0 == ja {
				continue
			}
			for _, t := range []**insn{&i.tnode, &i.fnode} {
				if (*t).pos-i.pos-1 > 255 {
					j := &insn{code: jmp | ja, tnode: *t}
					out = append(out, j)
					*t = j
					changed = true
				}
			}
		}
		ins = out
	}
	if len(ins) > MaxInstructions {
		return nil, fmt.Errorf("cbpf: %d instructions, at most %d", len(ins), MaxInstructions)
	}
	raw := make([]Raw, len(ins))
	for k, i := range ins {
		r := Raw{Code: i.code, K: i.k}
		if i.code&0x07 == jmp {
			t := i.tnode.pos - k - 1
			if t < 0 {
				return nil, fmt.Errorf("cbpf: backward jump at instruction %d", k)
			}
			if i.code&0xf0 == ja {
				r.K = uint32(t)
			} else {
				f := i.fnode.pos - k - 1
				if f < 0 {
					return nil, fmt.Errorf("cbpf: backward jump at instruction %d", k)
				}
				r.Jt, r.Jf = uint8(t), uint8(f)
			}
		}
		raw[k] = r
	}
	return raw, nil
}
