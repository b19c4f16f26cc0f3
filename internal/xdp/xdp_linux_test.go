package xdp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/intake-int/intake/internal/testutil/xdptest"
)

// attachOrSkip attaches the program, skipping the test when the kernel refuses XDP itself
// (not when it refuses our program: that is a failure).
func attachOrSkip(t *testing.T, v *xdptest.Veth, port uint16, opt Options) *Program {
	t.Helper()
	p, err := Attach(v.Dev, port, opt)
	if err != nil {
		var verr interface{ Unwrap() []error }
		if errors.As(err, &verr) && !bytes.Contains([]byte(err.Error()), []byte("verifier")) {
			t.Skipf("skipped: the kernel refused to attach XDP to a veth: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// receive reads frames from s until want datagrams arrived or a second passed.
func receive(t *testing.T, s *Socket, want int) [][]byte {
	t.Helper()
	var got [][]byte
	deadline := time.Now().Add(2 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		n := s.Peek(64)
		if n == 0 {
			s.Wait(50)
			continue
		}
		for i := 0; i < n; i++ {
			var d Datagram
			if !Parse(s.Frame(i), &d) {
				t.Fatalf("frame %x: not a UDP datagram", s.Frame(i))
			}
			got = append(got, append([]byte(nil), d.Payload...))
		}
		s.Release()
	}
	return got
}

func counts(t *testing.T, p *Program) [NumOutcomes]uint64 {
	t.Helper()
	var c [NumOutcomes]uint64
	if err := p.Counts(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRedirectExactCounts(t *testing.T) {
	v := xdptest.New(t)
	const port = 40040
	for _, mode := range []string{ModeNative, ModeGeneric} {
		t.Run(mode, func(t *testing.T) {
			p := attachOrSkip(t, v, port, Options{Mode: mode})
			if p.Mode() != mode {
				t.Fatalf("mode %q, want %q", p.Mode(), mode)
			}
			s, err := Open(p.Ifindex(), 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := p.Register(0, s); err != nil {
				t.Fatal(err)
			}
			// A UDP listener on the port must not see redirected datagrams: XDP takes them
			// before the socket layer.
			uc, err := net.ListenUDP("udp", &net.UDPAddr{Port: port})
			if err != nil {
				t.Fatal(err)
			}
			defer uc.Close()
			var want [][]byte
			for i := range 5 {
				want = append(want, []byte(fmt.Sprintf("report %d %s", i, mode)))
			}
			v.Send(t, "udp4", net.JoinHostPort(v.Host, "40040"), want[:3]...)
			v.Send(t, "udp6", net.JoinHostPort(v.Host6, "40040"), want[3:]...)
			got := receive(t, s, len(want))
			if len(got) != len(want) {
				t.Fatalf("received %d datagrams, want %d: %q", len(got), len(want), got)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("datagram %d: %q, want %q", i, got[i], want[i])
				}
			}
			// Another port passes to the kernel: the UDP socket gets it.
			v.Send(t, "udp4", net.JoinHostPort(v.Host, fmt.Sprint(port+1)), []byte("other"))
			c := counts(t, p)
			if c[Redirected] != uint64(len(want)) {
				t.Errorf("redirected %d, want %d (%v)", c[Redirected], len(want), c)
			}
			if c[PassOther] == 0 {
				t.Errorf("pass_other 0: the datagram to port %d and neighbour discovery were not counted (%v)", port+1, c)
			}
			if c[PassNoSocket] != 0 || c[PassMalformed] != 0 {
				t.Errorf("unexpected outcomes %v", c)
			}
			uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, _, err := uc.ReadFrom(make([]byte, 100)); err == nil {
				t.Errorf("the UDP socket on the port received a %d-byte datagram that XDP should have taken", n)
			}
			if s.Drops() != 0 {
				t.Errorf("socket drops %d", s.Drops())
			}
		})
	}
}

// TestCrashLeavesNothing: a process that attached the program and was killed (SIGKILL, no
// cleanup) leaves no program on the interface, since the bpf_link dies with it; the next
// Attach succeeds. Close detaches too.
func TestCrashLeavesNothing(t *testing.T) {
	if dev := os.Getenv("INTAKE_XDP_CRASH_DEV"); dev != "" {
		if _, err := Attach(dev, 40040, Options{}); err != nil {
			fmt.Println("attach:", err)
			os.Exit(1)
		}
		fmt.Println("attached")
		time.Sleep(time.Minute) // killed by the parent
		os.Exit(1)
	}
	v := xdptest.New(t)
	ifc, err := net.InterfaceByName(v.Dev)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesNothing$")
	cmd.Env = append(os.Environ(), "INTAKE_XDP_CRASH_DEV="+v.Dev)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "attached\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	if ids, err := Attached(ifc.Index); err != nil || len(ids) != 1 {
		t.Errorf("while the child runs: links %v (%v), want one", ids, err)
	}
	if _, err := Attach(v.Dev, 40040, Options{}); err == nil || !strings.Contains(err.Error(), "intake's program is already attached by another running process") {
		t.Errorf("attach while another process has it attached: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The kernel releases the link when the last descriptor closes, which process exit does;
	// give its deferred work a moment.
	var ids []int
	for i := 0; i < 50; i++ {
		if ids, err = Attached(ifc.Index); err == nil && len(ids) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ids) != 0 {
		t.Fatalf("after the child was killed: links %v (%v)", ids, err)
	}
	p, err := Attach(v.Dev, 40040, Options{})
	if err != nil {
		t.Fatalf("attach after a crash: %v", err)
	}
	if ids, _ := Attached(ifc.Index); len(ids) != 1 {
		t.Errorf("attached: links %v, want one", ids)
	}
	p.Close()
	if ids, _ := Attached(ifc.Index); len(ids) != 0 {
		t.Errorf("after Close: links %v", ids)
	}
}

// TestSocketDropsExact: frames beyond what the UMEM holds, while nobody reads, are dropped
// and counted, each once.
func TestSocketDropsExact(t *testing.T) {
	v := xdptest.New(t)
	p := attachOrSkip(t, v, 40040, Options{})
	s, err := Open(p.Ifindex(), 0, 0) // MinFrames
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := p.Register(0, s); err != nil {
		t.Fatal(err)
	}
	const sent = 3 * MinFrames
	bs := make([][]byte, sent)
	for i := range bs {
		bs[i] = []byte(fmt.Sprint("datagram ", i))
	}
	v.Send(t, "udp4", net.JoinHostPort(v.Host, "40040"), bs...)
	got := receive(t, s, sent)
	var st unix.XDPStatistics
	l := uint32(unsafe.Sizeof(st))
	unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS, uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
	t.Logf("received %d, statistics %+v", len(got), st)
	if uint64(len(got))+s.Drops() != sent {
		t.Errorf("received %d + dropped %d, want %d sent", len(got), s.Drops(), sent)
	}
}
