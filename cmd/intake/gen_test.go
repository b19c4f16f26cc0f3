package main

import (
	"encoding/json"
	"net"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

func TestGenMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "tr3"}, `format: "tr3": allowed are tr0.5, tr1.0, tr2.0, dta, int-label`},
		{[]string{"--hops", "40"}, "hops: 40: allowed is 1 to 32"},
		{[]string{"--fields", "3", "--bitmap", "0xff00"}, "--fields and --bitmap exclude each other"},
		{[]string{"--bitmap", "zz"}, `bitmap: "zz": want a non-zero 16-bit instruction bitmap`},
		{[]string{"--latency", "normal:1"}, `invalid value "normal:1" for flag -latency`},
		{[]string{"--count", "5", "--duration", "1s"}, "--duration and --count exclude each other"},
		{[]string{"--pps", "-5"}, "--pps: -5: must be 0"},
		{[]string{"--sockets", "0"}, "--sockets: 0: allowed is 1 to 256"},
		{[]string{"--gso", "-1"}, "--gso: -1: allowed is 0 (off) to 64"},
		{[]string{"--to", "nowhere"}, `--to "nowhere": want HOST:PORT`},
		{[]string{"--format", "tr1.0", "--batch", "4"}, "batch: 4: only tr2.0 (coalescing) and dta (batches)"},
		{[]string{"--format", "dta", "--dta-op", "read"}, `dta-op: "read": allowed are key-write, key-increment, postcard, append`},
		{[]string{"--model", "random"}, `model: "random": allowed are network (`},
		{[]string{"--model", "network", "--vary", "0.5"}, "--vary: an option of --model draw, not of --model network"},
		{[]string{"--interval", "0s"}, "interval: 0s: allowed is 1ns to 1s of generated time between packets"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, out, errb := runVerb(append([]string{"gen"}, tc.args...)...)
		if code != 2 || out != "" || !strings.HasPrefix(errb, "intake gen: ") || !strings.Contains(errb, tc.want) ||
			strings.Count(errb, "\n") != 1 {
			t.Errorf("gen %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errb, tc.want)
		}
	}
}

// listen opens a loopback UDP socket and counts what arrives until it has n datagrams.
func listen(t *testing.T, n int) (string, <-chan [][]byte) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { c.Close() })
	out := make(chan [][]byte, 1)
	go func() {
		var got [][]byte
		buf := make([]byte, 65536)
		for len(got) < n {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			m, _, err := c.ReadFromUDP(buf)
			if err != nil {
				break
			}
			got = append(got, append([]byte(nil), buf[:m]...))
		}
		out <- got
	}()
	return c.LocalAddr().String(), out
}

// TestGenJSON sends a counted, seeded stream to a loopback socket: the summary's keys and
// counts, and the datagrams received, are exactly the generator's.
func TestGenJSON(t *testing.T) {
	addr, got := listen(t, 300)
	code, out, errb := runVerb("gen", "--to", addr, "--count", "300", "--pps", "20000", "--batch", "4",
		"--seed", "9", "--flows", "10", "--ring", "100", "--json", "--quiet")
	if code != 0 || errb != "" {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("not one JSON object: %q (%v)", out, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "bytes datagrams datagrams_per_s elapsed_s flows format hops mode reports reports_per_datagram reports_per_s seed send_errors switches to"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys %v, want %s", keys, want)
	}
	if m["datagrams"] != 300.0 || m["reports"] != 1200.0 || m["send_errors"] != 0.0 || m["to"] != addr ||
		m["format"] != "tr2.0" || m["seed"] != 9.0 || m["reports_per_datagram"] != 4.0 {
		t.Fatalf("summary %v", m)
	}

	// The same options build the same stream: check what arrived against it.
	c := gen.DefaultConfig()
	c.Batch, c.Seed, c.Flows, c.Ring = 4, 9, 10, 100
	g, err := gen.New(c)
	if err != nil {
		t.Fatal(err)
	}
	dgrams := <-got
	if len(dgrams) != 300 {
		t.Fatalf("received %d datagrams, want 300", len(dgrams))
	}
	dec, _ := wire.NewDecoder(wire.DefaultConfig())
	var rd wire.Reader
	var r telemetry.Report
	g.Walk(300, func(i uint64, b []byte, rs []telemetry.Report) error {
		if string(b) != string(dgrams[i]) {
			t.Fatalf("datagram %d differs from the seeded stream", i)
		}
		rd.Reset(dec, wire.InputReport, dgrams[i])
		for j := range rs {
			if err := rd.Next(&r); err != nil || !r.Equal(&rs[j]) {
				t.Fatalf("datagram %d report %d: %v", i, j, err)
			}
		}
		return nil
	}, nil)
	if tr := g.Truth(300); m["bytes"] != float64(tr.Bytes) {
		t.Fatalf("bytes %v, truth %d", m["bytes"], tr.Bytes)
	}
}

func TestGenHuman(t *testing.T) {
	addr, got := listen(t, 50)
	code, out, errb := runVerb("gen", "--to", addr, "--format", "tr0.5", "--mode", "xd", "--count", "50", "--pps", "10k")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	if !strings.HasPrefix(errb, "gen: tr0.5 xd: 64 flows over 16 switches, 5 hops") {
		t.Errorf("start line %q", errb)
	}
	re := regexp.MustCompile(`^gen: sent 50 datagrams \(50 reports, \d+ bytes\) to ` + regexp.QuoteMeta(addr) +
		` in \S+: \d+ datagrams/s, \d+ reports/s; 0 send errors\n$`)
	if !re.MatchString(out) {
		t.Errorf("final line %q", out)
	}
	if n := len(<-got); n != 50 {
		t.Errorf("received %d, want 50", n)
	}
}
