package xdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// XDP actions (linux/bpf.h).
const (
	xdpDrop = 1
	xdpPass = 2
)

func loadOrSkip(t *testing.T, port uint16) *ebpf.Collection {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll, err := load(port, Options{})
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
	p := &Program{counts: coll.Maps[intakeMapOutcomes]}
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

// TestObjectMatchesSource rebuilds each object and its bindings with gen.go's go:generate
// lines (bpf2go) into a temporary directory and compares them with the committed ones.
func TestObjectMatchesSource(t *testing.T) {
	for _, tool := range []string{"clang", "llvm-strip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not installed (apt-get install clang llvm libbpf-dev): the committed object cannot be rebuilt to compare", tool)
		}
	}
	lines := generateArgs(t, "gen.go")
	if len(lines) != 2 {
		t.Fatalf("gen.go has %d bpf2go lines, want 2 (intake, sink)", len(lines))
	}
	for _, args := range lines {
		dir := t.TempDir()
		ident := args[len(args)-2] // ... <ident> <source>
		// go run <bpf2go> [-output-dir dir] flags...
		args = append(args[:3:3], append([]string{"-output-dir", dir}, args[3:]...)...)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "GOPACKAGE=xdp")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, b)
		}
		for _, f := range []string{ident + "_bpfel.o", ident + "_bpfel.go"} {
			got, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s does not match %s: run go generate ./internal/xdp and commit it", f, args[len(args)-1])
			}
		}
	}
}

// generateArgs returns the words of each of file's bpf2go go:generate lines, split as go
// generate splits them (a double-quoted word is a Go string).
func generateArgs(t *testing.T, file string) [][]string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]string
	for line := range strings.Lines(string(src)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//go:generate ")
		if !ok || !strings.Contains(rest, "bpf2go") {
			continue
		}
		var args []string
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
			word, _, _ := strings.Cut(rest, " ")
			if rest[0] == '"' {
				q, err := strconv.QuotedPrefix(rest)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				word = q
				if q, err = strconv.Unquote(q); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				args, rest = append(args, q), rest[len(word):]
				continue
			}
			args, rest = append(args, word), rest[len(word):]
		}
		all = append(all, args)
	}
	if len(all) == 0 {
		t.Fatalf("%s has no bpf2go go:generate line", file)
	}
	return all
}

// dtaFrame is an IPv4 UDP frame to port 40040 (9c68) holding the DTA datagram p.
func dtaFrame(t testing.TB, p string) []byte {
	b := frame(t, p)
	return frame(t, ethV4, "4500 0000 0000 0000 4011 0000 0a000002 0a000001", fmt.Sprintf("9c40 9c68 %04x 0000", 8+len(b)), p)
}

// TestProgramDTAFrames: with the kernel stores, the program writes exactly the single
// Key-Write, Key-Increment and Append reports the translator would write the same way, and
// passes every other DTA datagram up (here: XDP_PASS, the XSKMAP being empty).
func TestProgramDTAFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll := loadDTAProgram(t)
	prog := coll.Programs[ProgramName]
	cases := []struct {
		name    string
		p       string
		action  uint32
		outcome Outcome
	}{
		{"key-write", "0100 02 0a0b0c0d 11223344", xdpDrop, DTAKeyWrite},
		{"key-write, immediate flag", "0180 04 0a0b0c0d 11223344", xdpDrop, DTAKeyWrite},
		{"key-increment", "0300 01 0a0b0c0d 0000000000000005", xdpDrop, DTAKeyIncrement},
		{"key-write batch", "0101 02 02 0a0b0c0d 11223344 02 0a0b0c0e 11223345", xdpPass, PassNoSocket},
		{"key-write redundancy 0", "0100 00 0a0b0c0d 11223344", xdpPass, PassNoSocket},
		{"key-write redundancy above N", "0100 05 0a0b0c0d 11223344", xdpPass, PassNoSocket},
		{"key-write truncated", "0100 02 0a0b0c0d 1122", xdpPass, PassNoSocket},
		{"key-write one byte long (3-byte layout?)", "0100 02 0a0b0c0d 11223344 00", xdpPass, PassNoSocket},
		{"key-increment redundancy above N", "0300 03 0a0b0c0d 0000000000000005", xdpPass, PassNoSocket},
		{"append", "0200 00000001 0000000a", xdpDrop, DTAAppend},
		{"append, last list", "0280 00000003 0000000a", xdpDrop, DTAAppend},
		{"append to a list beyond the store's", "0200 00000004 0000000a", xdpPass, PassNoSocket},
		{"append to list 2^32-1", "0200 ffffffff 0000000a", xdpPass, PassNoSocket},
		{"append batch", "0201 02 00000001 0000000a 00000002 0000000b", xdpPass, PassNoSocket},
		{"append truncated", "0200 00000001 0000", xdpPass, PassNoSocket},
		{"append one byte long", "0200 00000001 0000000a 00", xdpPass, PassNoSocket},
		{"postcard", "0400 0a0b0c0d 01 11223344", xdpPass, PassNoSocket},
		{"bad opcode", "0900 02 0a0b0c0d 11223344", xdpPass, PassNoSocket},
		{"one byte", "01", xdpPass, PassNoSocket},
		{"empty", "", xdpPass, PassNoSocket},
	}
	var want [NumOutcomes]uint64
	for _, c := range cases {
		ret, err := prog.Run(&ebpf.RunOptions{Data: dtaFrame(t, c.p)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ret != c.action {
			t.Errorf("%s: action %d, want %d", c.name, ret, c.action)
		}
		want[c.outcome]++
	}
	p := &Program{counts: coll.Maps[intakeMapOutcomes]}
	n, _ := ebpf.PossibleCPU()
	p.percpu = make([]uint64, n)
	var got [NumOutcomes]uint64
	if err := p.Counts(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

// FuzzProgramDTA runs the kernel's program with the DTA stores on arbitrary UDP payloads to
// the port: it must return XDP_PASS or XDP_DROP (never fail), and drop only what user space
// would read as one Key-Write, Key-Increment or Append report of the exact length.
func FuzzProgramDTA(f *testing.F) {
	for _, s := range []string{"0100 02 0a0b0c0d 11223344", "0300 01 0a0b0c0d 0000000000000005", "0101 02 02 0a0b0c0d 11223344 02 0a0b0c0e 11223345", "0200 00000001 0000000a", ""} {
		f.Add(frame(f, s))
	}
	if os.Geteuid() != 0 {
		f.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll := loadDTAProgram(f)
	prog := coll.Programs[ProgramName]
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) > 1400 {
			return
		}
		fr := frame(t, ethV4, "4500 0000 0000 0000 4011 0000 0a000002 0a000001", fmt.Sprintf("9c40 9c68 %04x 0000", 8+len(p)))
		fr = append(fr, p...)
		ret, err := prog.Run(&ebpf.RunOptions{Data: fr})
		if err != nil {
			t.Fatal(err)
		}
		switch ret {
		case xdpPass:
		case xdpDrop:
			ok := len(p) >= 3 && p[1]&1 == 0 &&
				(p[0] == 1 && len(p) == 2+1+4+4 && p[2] >= 1 && p[2] <= 4 ||
					p[0] == 3 && len(p) == 2+1+4+8 && p[2] >= 1 && p[2] <= 2 ||
					p[0] == 2 && len(p) == 2+4+4 && binary.BigEndian.Uint32(p[2:]) < 4)
			if !ok {
				t.Fatalf("dropped %x, which is not a single Key-Write, Key-Increment or Append the translator takes", p)
			}
		default:
			t.Fatalf("action %d", ret)
		}
	})
}

// loadDTAProgram loads the program's collection for port 40040 with small DTA stores (4-byte keys and
// values, 4 Append lists: the DTA frame tables' geometry), both closed when tb ends.
func loadDTAProgram(tb testing.TB) *ebpf.Collection {
	tb.Helper()
	st, err := NewDTAStores(DTA{HeaderLen: 2, KeyLen: 4, DataLen: 4, Seed: 1, KWSlots: 64, KWMaxN: 4, KWCheckBits: 32, KWValueBytes: 4, KISlots: 64, KIMaxN: 2,
		APLists: 4, APEntries: 64})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	coll, err := load(40040, Options{Stores: st})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(coll.Close)
	return coll
}
