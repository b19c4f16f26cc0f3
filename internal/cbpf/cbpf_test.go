package cbpf

import (
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

func run(t *testing.T, p *Prog, pkt []byte) uint32 {
	t.Helper()
	raw, err := p.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	ins := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		ins[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}.Disassemble()
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := vm.Run(pkt)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(got)
}

// TestLongJumps: conditional jumps to targets 300 and 600 instructions away, both ways, and
// labels that share an instruction, run as written.
func TestLongJumps(t *testing.T) {
	build := func() *Prog {
		var p Prog
		p.LdAbs(1, 0)
		p.Jeq(1, "far", "")
		p.Jeq(2, "", "farther")
		for i := 0; i < 300; i++ {
			p.ALU(Add, 1)
		}
		p.RetA()
		p.Label("far")
		p.Label("alias")
		p.LdImm(7)
		for i := 0; i < 300; i++ {
			p.ALU(Add, 1)
		}
		p.Ja("alias.end")
		p.Label("farther")
		p.Ret(9)
		p.Label("alias.end")
		p.RetA()
		return &p
	}
	for _, c := range []struct {
		in   byte
		want uint32
	}{{1, 307}, {2, 302}, {3, 9}} {
		if got := run(t, build(), []byte{c.in}); got != c.want {
			t.Errorf("input %d: %d, want %d", c.in, got, c.want)
		}
	}
	raw, _ := build().Assemble()
	if len(raw) <= 605 {
		t.Errorf("%d instructions: no long jump was inserted", len(raw))
	}
}

// TestLoadsAndALU: the loads, scratch memory and ALU operations encode as the classic BPF
// machine reads them.
func TestLoadsAndALU(t *testing.T) {
	var p Prog
	p.LdxImm(2)
	p.LdInd(2, 1) // bytes 3-4: 0x0405
	p.St(3)
	p.LdAbs(4, 0) // 0x01020304
	p.ALU(Rsh, 16)
	p.LdxMem(3)
	p.ALUX(Xor) // 0x0102 ^ 0x0405 = 0x0507
	p.ALU(Mul, 3)
	p.ALU(Mod, 1000) // 0x0507*3 = 3861 -> 861
	p.Tax()
	p.LdLen()
	p.ALUX(Add) // + 6
	p.RetA()
	if got := run(t, &p, []byte{1, 2, 3, 4, 5, 6}); got != 867 {
		t.Errorf("%d, want 867", got)
	}
}

func TestAssembleErrors(t *testing.T) {
	for _, c := range []struct {
		build func(*Prog)
		want  string
	}{
		{func(p *Prog) { p.Jeq(1, "nowhere", ""); p.Ret(0) }, `undefined label "nowhere"`},
		{func(p *Prog) { p.Label("a"); p.Ret(0); p.Label("a"); p.Ret(1) }, `label "a" defined twice`},
		{func(p *Prog) { p.LdImm(1) }, "does not end with a return"},
		{func(p *Prog) { p.Ret(0); p.Label("dangling") }, `label "dangling" names no instruction`},
		{func(p *Prog) { p.Label("back"); p.LdImm(0); p.Ja("back"); p.Ret(0) }, "backward jump"},
	} {
		var p Prog
		c.build(&p)
		if _, err := p.Assemble(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
