package testutil

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalTB records Fatalf instead of failing the real test, and stops its goroutine the way
// testing.T's Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Eventually on its own goroutine (Fatalf ends that goroutine) and returns the
// failure message, empty when it passed.
func run(t *testing.T, timeout time.Duration, what string, cond func() bool) string {
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(f, timeout, what, cond)
	}()
	<-done
	return f.msg
}

func TestEventuallyPasses(t *testing.T) {
	var calls atomic.Int32
	msg := run(t, time.Second, "third call", func() bool { return calls.Add(1) >= 3 })
	if msg != "" {
		t.Fatalf("Eventually failed: %q", msg)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("cond called %d times, want 3 (it stops at the first true)", n)
	}
}

func TestEventuallyTimesOut(t *testing.T) {
	start := time.Now()
	msg := run(t, 50*time.Millisecond, "the sky to fall", func() bool { return false })
	if want := "timed out after 50ms waiting for the sky to fall"; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v, want about 50ms", d)
	}
}

// TestFreePort: the port is below the kernel's ephemeral range and both TCP and UDP can
// bind it.
func TestFreePort(t *testing.T) {
	p := FreePort(t)
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if low, _ := strconv.Atoi(strings.Fields(string(b))[0]); p < 10000 || p >= low {
			t.Errorf("port %d: want 10000 to %d, below the ephemeral range", p, low-1)
		}
	}
	a := "127.0.0.1:" + strconv.Itoa(p)
	ln, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", a)
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
}
