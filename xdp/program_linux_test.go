package xdp

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestVerifierLogOnLoadFailure: a program the verifier refuses gives an error that holds
// the verifier's log, not just EACCES.
func TestVerifierLogOnLoadFailure(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	// Returns without setting R0.
	_, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{asm.Return()}})
	if err == nil {
		t.Fatal("the verifier took a program that returns an unset register")
	}
	msg := loadError(err).Error()
	if !strings.Contains(msg, "the kernel's verifier refused the XDP program") || !strings.Contains(msg, "R0 !read_ok") {
		t.Errorf("load error without the verifier's log: %s", msg)
	}
}

// xdpPass is XDP_PASS (linux/bpf.h).
const xdpPass = 2

func loadOrSkip(t *testing.T, port uint16) *ebpf.Collection {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll, err := load(port, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// TestProgramFrames runs the kernel's program on a table of frames, well formed and not,
// with BPF_PROG_TEST_RUN: each must get its action and be counted under its outcome. A frame
// to the port on a queue without a socket passes (the XSKMAP is empty here), so that is what
// a matching frame counts as.
func TestProgramFrames(t *testing.T) {
	coll := loadOrSkip(t, 40040)
	prog := coll.Programs[ProgramName]
	cases := []struct {
		name    string
		f       []byte
		outcome Outcome
	}{
		{"ipv4 to the port", frame(t, ethV4, ipv4, udp12, payload), PassNoSocket},
		{"ipv4 options", frame(t, ethV4, ipv4Opts, udp12, payload), PassNoSocket},
		{"vlan", frame(t, ethVLAN, ipv4, udp12, payload), PassNoSocket},
		{"ipv6", frame(t, ethV6, ipv6, udp12, payload), PassNoSocket},
		{"empty payload", frame(t, ethV4, ipv4, "9c40 9c68 0008 0000"), PassNoSocket},
		{"other port", frame(t, ethV4, ipv4, "9c40 9c69 0010 0000", payload), PassOther},
		{"tcp", frame(t, ethV4, "4500 0024 0000 0000 4006 0000 0a000002 0a000001", udp12, payload), PassOther},
		{"arp", frame(t, "ffffffffffff 020000000002 0806", "0001080006040001", "020000000002 0a000002 000000000000 0a000001"), PassOther},
		{"fragment", frame(t, ethV4, ipv4Frag, udp12, payload), PassFragment},
		{"later fragment", frame(t, ethV4, "4500 0024 0000 0010 4011 0000 0a000002 0a000001", udp12, payload), PassFragment},
		{"ipv6 extension header", frame(t, ethV6, "60000000 0010 00 40 fd000000000000000000000000000002 fd000000000000000000000000000001", udp12, payload), PassIPv6Ext},
		{"udp length beyond the frame", frame(t, ethV4, ipv4, "9c40 9c68 0040 0000", payload), PassMalformed},
		{"udp length below the header", frame(t, ethV4, ipv4, "9c40 9c68 0004 0000", payload), PassMalformed},
		{"ihl below 5", frame(t, ethV4, "4400 0024 0000 0000 4011 0000 0a000002 0a000001", udp12, payload), PassMalformed},
		{"ihl beyond the frame", frame(t, ethV4, "4f00 0024 0000 0000 4011 0000 0a000002 0a000001", udp12), PassMalformed},
		{"ipv4 version 6", frame(t, ethV4, "6500 0024 0000 0000 4011 0000 0a000002 0a000001", udp12, payload), PassMalformed},
		{"short ipv4", frame(t, ethV4, "4500 0024 0000 0000 4011"), PassMalformed},
		{"short vlan", frame(t, "020000000001 020000000002 8100 00"), PassMalformed},
		{"short udp", frame(t, ethV4, ipv4, "9c40 9c68"), PassMalformed},
		{"short ipv6", frame(t, ethV6, "60000000 0010 11 40"), PassMalformed},
	}
	var want [NumOutcomes]uint64
	for _, c := range cases {
		// BPF_PROG_TEST_RUN wants at least an Ethernet header; shorter frames cannot reach
		// XDP from a device either.
		ret, err := prog.Run(&ebpf.RunOptions{Data: c.f})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ret != xdpPass {
			t.Errorf("%s: action %d, want XDP_PASS", c.name, ret)
		}
		want[c.outcome]++
	}
	p := &Program{counts: coll.Maps["outcomes"]}
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	p.percpu = make([]uint64, n)
	var got [NumOutcomes]uint64
	if err := p.Counts(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// TestObjectMatchesSource rebuilds the program with clang as go generate does and compares
// it with the committed object.
func TestObjectMatchesSource(t *testing.T) {
	for _, tool := range []string{"clang", "llvm-strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not installed (apt-get install clang llvm libbpf-dev): the committed object cannot be rebuilt to compare", tool)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "intake_bpfel.o")
	arch, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/"+strings.TrimSpace(string(arch))+"-linux-gnu", "-c", "bpf/intake.c", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v: %s", err, b)
	}
	if b, err := exec.Command("llvm-strip", "-g", out).CombinedOutput(); err != nil {
		t.Fatalf("llvm-strip: %v: %s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, object) {
		t.Fatal("intake_bpfel.o does not match bpf/intake.c: run go generate ./xdp and commit the object")
	}
}
