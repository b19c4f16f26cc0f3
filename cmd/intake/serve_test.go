package main

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/wire"
)

func writeFile(t *testing.T, name, text string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeCheck(t *testing.T) {
	good := writeFile(t, "good.yaml", "listeners:\n  - {format: report, port: 9999}\nhttp: {address: '127.0.0.1:0'}\n")
	code, out, errs := runVerb("serve", "--config", good, "--check")
	gc, err := config.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	// The ok line, then what each component will take.
	if want := good + ": ok: 1 listeners (report on udp *:9999), http 127.0.0.1:0\n" + gc.Budget().String(); code != 0 || out != want {
		t.Errorf("--check good: %d %q %q, want %q", code, out, errs, want)
	}
	bad := writeFile(t, "bad.yaml", "listeners:\n  - {format: report, port: 1}\n  - {format: report, port: 70000}\n")
	code, out, errs = runVerb("serve", "--config", bad, "--check")
	if want := "intake serve: " + bad + ": listeners[1].port: 70000: must be 0-65535 (0: a free port the kernel picks)\n"; code != 2 || errs != want { // a config error exits 2 (issue 31)
		t.Errorf("--check bad: %d %q %q, want %q", code, out, errs, want)
	}
	if code, _, errs := runVerb("serve", "extra"); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("extra argument: %d %q", code, errs)
	}
	if code, out, _ := runVerb("serve", "--help"); code != 0 || strings.Count(out, "usage: intake serve") != 1 {
		t.Errorf("--help: %d %q", code, out)
	}
}

func TestServeDump(t *testing.T) {
	code, out, errs := runVerb("serve", "--dump")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	d := config.Default()
	if out != string(d.Dump()) {
		t.Errorf("--dump without --config is not the defaults:\n%s", out)
	}
	// The dump is a valid config that dumps to itself.
	p := writeFile(t, "dump.yaml", out)
	if _, out2, _ := runVerb("serve", "--config", p, "--dump"); out2 != out {
		t.Errorf("dump does not round-trip:\n%s", out2)
	}
	for _, want := range []string{"port: 32766", "port: 54321", "port: 40040", "port: 40050", "address: 127.0.0.1:8040", "batch: 64", "rcvbuf: 8388608"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q", want)
		}
	}
}

// trDatagram is collectortest.TRReport (TR v2.0, a 3-hop INT-MD stack) encoded.
func trDatagram(t *testing.T) []byte {
	enc, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := collectortest.TRReport()
	b, err := enc.Append(nil, &r)
	if err != nil {
		t.Skipf("TR v2.0 encoder not ready: %v", err)
	}
	return b
}

type capFrame struct {
	dport   uint16
	payload []byte
	raw     []byte // a non-UDP frame when set
	at      time.Duration
}

func writePcap(t *testing.T, frames ...capFrame) string {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, pcap.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for _, f := range frames {
		data := f.raw
		if data == nil {
			data = pcap.AppendUDPFrame(nil, &pcap.UDPFrame{
				Src: netip.MustParseAddrPort("192.0.2.1:5000"),
				Dst: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), f.dport),
			}, f.payload)
		}
		if err := w.WritePacket(t0.Add(f.at), data); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "cap.pcap")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var arpFrame = append(bytes.Repeat([]byte{0xff}, 12), append([]byte{0x08, 0x06}, make([]byte, 46)...)...)

func TestServeCapture(t *testing.T) {
	tr := trDatagram(t)
	p := writePcap(t,
		capFrame{dport: 32766, payload: tr},
		capFrame{dport: 32766, payload: []byte{0xff}}, // unknown_version or truncated: computed below
		capFrame{raw: arpFrame},
		capFrame{dport: 54321, payload: tr},
		capFrame{dport: 9, payload: tr},
		capFrame{dport: 32766, payload: tr},
		// A Key-Increment whose redundancy 3 is above key_increment.max_redundancy (2): it
		// decodes, and the translator rejects it.
		capFrame{dport: 40040, payload: hexb(t, "03 00 | 03 | 00000001 | 0000000000000001")},
		// int-host-reporter's flow report whose synthesized packet has a UDP header under
		// protocol 6 (wire/producers_test.go): the report is kept, its inner packet counted.
		capFrame{dport: 32766, payload: hexb(t, "02200001 00000001 0bebc200 00000005 00020007 00000000 0bebc5e8"+
			"ffffffffffff 010203040506 0800 45000022 00000000 40060000 c0a80001 c0a80002 8f6c0050 000e0000 010203040506")},
	)
	dec, _ := wire.NewDecoder(wire.DefaultConfig())
	_, errs := dec.DecodeAll(wire.InputReport, []byte{0xff})
	if len(errs) != 1 {
		t.Fatalf("0xff decodes with %d errors", len(errs))
	}
	code, out, errb := runVerb("serve", "--pcap", p)
	if code != 0 {
		t.Fatalf("%d %s", code, errb)
	}
	trLen := len(tr)
	want := fmt.Sprintf(`  packets received  6 (%d bytes)
  reports decoded   5 (dta 1, tr0.5 1, tr2.0 3)
  decode errors     1 (%s 1)
  inner errors      1 (truncated 1) (reports kept without their data packet)
  rejected          1 (dta redundancy 1)
  ingest drops      2 (no_listener 1, not_udp 1)
  kernel drops      0
`, 3*trLen+1+15+76, errs[0].Reason)
	first, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, "intake serve: "+p+": 8 frames, 6 telemetry datagrams in ") || rest != want {
		t.Errorf("got:\n%s\nwant first line %q and\n%s", out, "intake serve: "+p+": 8 frames, 6 telemetry datagrams in ...", want)
	}
}

// syncBuffer is a bytes.Buffer the verb writes to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveReady waits up to d for a serve running in this process to say it is ready on errb,
// and returns the addresses of its first report listener and of its HTTP API.
func serveReady(t *testing.T, errb *syncBuffer, d time.Duration) (trAddr, httpAddr string) {
	t.Helper()
	defer func() {
		if trAddr == "" || httpAddr == "" {
			t.Fatalf("serve did not come up:\n%s", errb.String())
		}
	}()
	testutil.Eventually(t, d, "serve to say it is ready", func() bool { return strings.Contains(errb.String(), "ready;") })
	for _, line := range strings.Split(errb.String(), "\n") {
		if a, ok := strings.CutPrefix(line, "intake serve: listening for report on udp "); ok && trAddr == "" {
			trAddr, _, _ = strings.Cut(a, " ")
		}
		if a, ok := strings.CutPrefix(line, "intake serve: http on "); ok {
			httpAddr, _, _ = strings.Cut(a, " ")
		}
	}
	return trAddr, httpAddr
}

// TestServeSignal runs serve for real: datagrams over loopback, `intake status` against its
// API, `intake replay` of a capture into it, then SIGTERM and the final summary.
func TestServeSignal(t *testing.T) {
	tr := trDatagram(t)
	cfg := writeFile(t, "serve.yaml", `
listeners:
  - {name: tr, format: report, address: 127.0.0.1, port: 0, sockets: 2, rcvbuf: 1048576}
  - {name: dta, format: dta, address: 127.0.0.1, port: 0, sockets: 1, rcvbuf: 1048576}
http: {address: '127.0.0.1:0'}
`)
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run([]string{"serve", "--config", cfg}, &out, &errb) }()
	trAddr, httpAddr := serveReady(t, &errb, 5*time.Second)
	conn, err := net.Dial("udp", trAddr)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		conn.Write(tr)
		conn.Write([]byte{0xff})
	}
	conn.Close()

	// replay: 3 datagrams at 100/s (two frames skipped: not UDP and other port).
	_, port, _ := net.SplitHostPort(trAddr)
	pn := 0
	fmt.Sscan(port, &pn)
	capPath := writePcap(t,
		capFrame{dport: uint16(pn), payload: tr},
		capFrame{raw: arpFrame},
		capFrame{dport: uint16(pn), payload: tr, at: time.Millisecond},
		capFrame{dport: 1, payload: tr},
		capFrame{dport: uint16(pn), payload: tr, at: 2 * time.Millisecond},
	)
	code, rout, rerr := runVerb("replay", capPath, "--to", trAddr, "--pps", "100", "--dport", port)
	if want := fmt.Sprintf("replay: sent 3 datagrams (%d bytes) to %s in ", 3*len(tr), trAddr); code != 0 || !strings.HasPrefix(rout, want) ||
		!strings.HasSuffix(rout, "skipped 1 frames not UDP, 1 to other ports; 0 send errors\n") {
		t.Errorf("replay: %d %q %q, want prefix %q", code, rout, rerr, want)
	}

	// status sees 13 datagrams once the workers have published them.
	var sout string
	testutil.Eventually(t, 5*time.Second, "13 datagrams in status --json", func() bool {
		code, sout, _ = runVerb("status", "--api", httpAddr, "--json")
		return code == 0 && strings.Contains(sout, `"packets_received": 13,`)
	})
	if !strings.Contains(sout, `"reports_decoded": 8,`) || !strings.Contains(sout, `"kernel_drops": 0,`) {
		t.Errorf("status --json:\n%s", sout)
	}
	code, sout, serr := runVerb("status", "--api", httpAddr)
	if code != 0 || !strings.Contains(sout, "intake at "+httpAddr+": running") ||
		!strings.Contains(sout, "reports by format: (tr2.0 8)") || !strings.Contains(sout, "1MiB/") {
		t.Errorf("status: %d\n%s%s", code, sout, serr)
	}

	sigterm()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(errb.String(), "terminated: draining and stopping") ||
		!strings.Contains(out.String(), "  packets received  13 (") ||
		!strings.Contains(out.String(), "  reports decoded   8 (tr2.0 8)\n") ||
		!strings.Contains(out.String(), "  decode errors     5 (") {
		t.Errorf("summary:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

func TestStatusNoServer(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	code, _, errs := runVerb("status", "--api", addr)
	if code != 1 || !strings.Contains(errs, "is 'intake serve' running with http.address "+addr) {
		t.Errorf("%d %q", code, errs)
	}
}

func TestReplayUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "intake replay: want one capture FILE, got 0 arguments\n"},
		{[]string{"replay", "x.pcap"}, "intake replay: --to HOST:PORT is required\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--pps", "5", "--speed", "2"}, "intake replay: --pps and --speed exclude each other\n"},
		// --rate, the older name of --pps, still works, with a warning.
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--rate", "5", "--speed", "2"},
			"intake: --rate is deprecated: use --pps, which means the same\nintake replay: --pps and --speed exclude each other\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--dport", "0"}, "intake replay: invalid value \"0\" for flag -dport: \"0\": port must be 1-65535\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--speed", "NaN"}, "intake replay: --speed NaN: must be a finite number above 0\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--speed", "+Inf"}, "intake replay: --speed +Inf: must be a finite number above 0\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--speed", "0"}, "intake replay: --speed 0: must be a finite number above 0\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--speed", "-2"}, "intake replay: --speed -2: must be a finite number above 0\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--pps", "nan"}, "intake replay: --pps NaN: must be a finite number above 0\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--pps", "fast"},
			"intake replay: invalid value \"fast\" for flag -pps: want a number, optionally with k, M or G (5M is 5000000)\n"},
		{[]string{"replay", "x.pcap", "--to", "127.0.0.1:1", "--max-wait", "0s"}, "intake replay: --max-wait maximum wait 0s: must be positive\n"},
	} {
		code, _, errs := runVerb(tc.args...)
		if code != 2 || errs != tc.want {
			t.Errorf("%v: %d %q, want 2 %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestReplaySpeed: capture timing is kept, scaled: 4 datagrams 30 ms apart at speed 2 take
// at least 45 ms.
func TestReplaySpeed(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var fs []capFrame
	for i := 0; i < 4; i++ {
		fs = append(fs, capFrame{dport: 7, payload: []byte{byte(i)}, at: time.Duration(i) * 30 * time.Millisecond})
	}
	p := writePcap(t, fs...)
	start := time.Now()
	code, out, errs := runVerb("replay", "--speed", "2", "--to", pc.LocalAddr().String(), p)
	if code != 0 || !strings.HasPrefix(out, "replay: sent 4 datagrams (4 bytes)") {
		t.Fatalf("%d %q %q", code, out, errs)
	}
	if el := time.Since(start); el < 45*time.Millisecond {
		t.Errorf("took %s, want >= 45ms", el)
	}
	buf := make([]byte, 16)
	for i := 0; i < 4; i++ {
		pc.SetReadDeadline(time.Now().Add(time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("datagram %d: %d %v %x", i, n, err, buf[:n])
		}
	}
}

// TestReplayLongGap: a capture with a gap of 2·10^9 s between two datagrams (a timestamp
// decades off; a pcap timestamp cannot be 2^32 s after the capture's start) replays at --speed 1 in about the default --max-wait (1 s), and the cut is reported.
func TestReplayLongGap(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	const gap = 2_000_000_000 * time.Second
	p := writePcap(t, capFrame{dport: 7, payload: []byte{0}}, capFrame{dport: 7, payload: []byte{1}, at: gap},
		capFrame{dport: 7, payload: []byte{2}, at: gap + 10*time.Millisecond})
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		code, out, errs := runVerb("replay", "--speed", "1", "--to", pc.LocalAddr().String(), p)
		done <- result{code, out, errs}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("replay waits on the capture's gap")
	}
	el := time.Since(start)
	want := "; waits cut to 1s: 1 (555555h33m19s of capture time skipped)\n"
	if r.code != 0 || !strings.HasPrefix(r.out, "replay: sent 3 datagrams (3 bytes)") || !strings.HasSuffix(r.out, want) ||
		!strings.HasPrefix(r.err, "replay: datagram 2 would wait 555555h33m20s: waits are cut to 1s (--max-wait)\n") {
		t.Errorf("%d %q %q", r.code, r.out, r.err)
	}
	if el < 1010*time.Millisecond || el > 5*time.Second {
		t.Errorf("took %s, want 1.01s (1s + 10ms) and not much more", el)
	}
}
