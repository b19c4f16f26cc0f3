package xdptest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestPathUDP: datagrams a client in CLI sends reach a real UDP server on Dev byte for
// byte through the relay, over IPv4 and IPv6, with INT off.
func TestPathUDP(t *testing.T) {
	p := NewPath(t)
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			srv, dst := listenUDP(t, p, v6)
			c := p.Dial(t, "udp", dst)
			sent := payloads(40, v6)
			for _, b := range sent {
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			got := receive(t, srv, len(sent))
			for i := range sent {
				if !bytes.Equal(got[i], sent[i]) {
					t.Fatalf("datagram %d: got %d bytes, sent %d; not the same", i, len(got[i]), len(sent[i]))
				}
			}
		})
	}
	if p.Forwarded() < 80 || p.Returned() != 0 && p.Returned() > p.Forwarded() {
		t.Errorf("relay forwarded %d, returned %d", p.Forwarded(), p.Returned())
	}
}

// TestPathTCP: a real TCP connection from CLI to a server on Dev carries 1 MiB each way
// byte for byte, over IPv4 and IPv6, with INT off.
func TestPathTCP(t *testing.T) {
	p := NewPath(t)
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			host := p.Server
			if v6 {
				host = "[" + p.Server6 + "]"
			}
			ln, err := net.Listen("tcp", host+":0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			up, down := randomBytes(1<<20, 1), randomBytes(1<<20, 2)
			srvGot := make(chan []byte, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					srvGot <- nil
					return
				}
				defer c.Close()
				srvGot <- exchange(c, down, len(up))
			}()
			c := p.Dial(t, "tcp", ln.Addr().String())
			c.SetDeadline(time.Now().Add(20 * time.Second))
			got := exchange(c, up, len(down))
			if sha256.Sum256(got) != sha256.Sum256(down) {
				t.Errorf("client got %d bytes, not the server's 1 MiB", len(got))
			}
			if g := <-srvGot; sha256.Sum256(g) != sha256.Sum256(up) {
				t.Errorf("server got %d bytes, not the client's 1 MiB", len(g))
			}
		})
	}
}

// TestPathINTOnWire: with a hook that inserts v2.x INT (NPT 0, DSCP 0x17) with wire's
// InsertINT and no sink on Dev, the UDP server receives what the kernel delivers: the INT
// bytes followed by the payload. The kernel checked the IP and UDP checksums InsertINT
// wrote (it drops and counts a wrong one; InCsumErrors stays the same).
func TestPathINTOnWire(t *testing.T) {
	p := NewPath(t)
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var r telemetry.Report
	r.INT = telemetry.INTHeader{Version: telemetry.INT2x, Bitmap: 0xd000, HopML: 3, RemHops: 5}
	for i := 0; i < 3; i++ {
		h := r.AddHop()
		h.NodeID, h.IngressPort, h.EgressPort, h.QueueID, h.QueueOccupancy = uint32(10+i), 1, 2, 3, uint32(100*i)
		h.Fields = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FQueueID | telemetry.FQueueOccupancy
	}
	before := CsumErrors(t)
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			srv, dst := listenUDP(t, p, v6)
			port := uint16(srv.LocalAddr().(*net.UDPAddr).Port)
			var mu sync.Mutex
			var want [][]byte // what the server should read: the inserted frames' UDP payloads
			buf := make([]byte, 0, 4096)
			p.SetHook(func(f []byte) []byte {
				l4, ok := udpTo(f, port)
				if !ok {
					return f
				}
				out, err := enc.InsertINT(buf[:0], f, &r, wire.Marking{DSCP: 0x17})
				if err != nil {
					t.Errorf("InsertINT: %v", err)
					return f
				}
				mu.Lock()
				want = append(want, append([]byte(nil), out[l4+8:]...))
				mu.Unlock()
				return out
			})
			defer p.SetHook(nil)
			changed := p.Changed()
			c := p.Dial(t, "udp", dst)
			sent := payloads(20, v6)
			for _, b := range sent {
				if _, err := c.Write(b); err != nil {
					t.Fatal(err)
				}
			}
			got := receive(t, srv, len(sent))
			mu.Lock()
			defer mu.Unlock()
			if len(want) != len(sent) || p.Changed()-changed != uint64(len(sent)) {
				t.Fatalf("the hook inserted INT into %d frames (relay counted %d), want %d", len(want), p.Changed()-changed, len(sent))
			}
			for i := range sent {
				n := len(want[i]) - len(sent[i])
				if n != 4+12+3*12 || !bytes.Equal(want[i][n:], sent[i]) {
					t.Fatalf("datagram %d: the inserted frame holds %d bytes of INT and then not the payload", i, n)
				}
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("datagram %d: the server read %d bytes, want the %d of INT and payload", i, len(got[i]), len(want[i]))
				}
				if got[i][0] != 0x10 || got[i][4]>>4 != 2 {
					t.Fatalf("datagram %d starts % x, not a v2.x shim and header", i, got[i][:8])
				}
			}
		})
	}
	if after := CsumErrors(t); after["Udp"] != before["Udp"] || after["Udp6"] != before["Udp6"] {
		t.Errorf("UDP InCsumErrors went from %v to %v", before, after)
	}
}

// listenUDP starts a UDP server on the path's server address.
func listenUDP(t *testing.T, p *Path, v6 bool) (*net.UDPConn, string) {
	t.Helper()
	host := p.Server
	if v6 {
		host = "[" + p.Server6 + "]"
	}
	a, err := net.ResolveUDPAddr("udp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := net.ListenUDP("udp", a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	srv.SetReadBuffer(4 << 20)
	return srv, srv.LocalAddr().String()
}

// payloads returns n datagram payloads of sizes 0 to a full 1500-byte frame.
func payloads(n int, v6 bool) [][]byte {
	max := 1472
	if v6 {
		max = 1452
	}
	var out [][]byte
	for i := 0; i < n; i++ {
		size := []int{0, 1, 17, 512, max}[i%5]
		out = append(out, randomBytes(size, uint64(i)))
	}
	return out
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 29))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// receive reads n datagrams from c, failing t after 5 s.
func receive(t *testing.T, c *net.UDPConn, n int) [][]byte {
	t.Helper()
	var got [][]byte
	buf := make([]byte, 1<<16)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < n {
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("received %d of %d datagrams: %v", len(got), n, err)
		}
		got = append(got, append([]byte(nil), buf[:k]...))
	}
	return got
}

// exchange writes out on c while it reads n bytes, and returns what it read.
func exchange(c net.Conn, out []byte, n int) []byte {
	go c.Write(out)
	got, _ := io.ReadAll(io.LimitReader(c, int64(n)))
	return got
}

// udpTo returns the offset of the UDP header of frame when it is an IPv4 or IPv6 UDP
// datagram to port.
func udpTo(f []byte, port uint16) (int, bool) {
	if len(f) < 14 {
		return 0, false
	}
	var l4 int
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(f) < 34 || f[23] != 17 {
			return 0, false
		}
		l4 = 14 + int(f[14]&0x0f)*4
	case 0x86dd:
		if len(f) < 54 || f[20] != 17 {
			return 0, false
		}
		l4 = 54
	default:
		return 0, false
	}
	return l4, len(f) >= l4+8 && binary.BigEndian.Uint16(f[l4+2:]) == port
}
