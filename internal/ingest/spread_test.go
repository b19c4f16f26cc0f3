package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// spreadVM runs the reuseport program of a listener of input in with n sockets on
// datagrams, in x/net/bpf's classic BPF machine (the kernel's semantics: a load beyond the
// packet ends the program with 0).
type spreadVM struct {
	vm  *bpf.VM
	dec *wire.Decoder
	in  wire.Input
	n   int
}

func newSpreadVM(t testing.TB, in wire.Input, dc wire.Config, n int) *spreadVM {
	t.Helper()
	raw, err := spreadProgram(in, dc, n)
	if err != nil {
		t.Fatal(err)
	}
	ins := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		ins[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}.Disassemble()
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("%v (%d instructions)", err, len(raw))
	}
	dec, err := wire.NewDecoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	return &spreadVM{vm: vm, dec: dec, in: in, n: n}
}

// run returns the program's answer for datagram b.
func (v *spreadVM) run(t testing.TB, b []byte) uint32 {
	t.Helper()
	got, err := v.vm.Run(b)
	if err != nil {
		t.Fatalf("program failed: %v", err)
	}
	return uint32(got)
}

// plain reports whether r's flow is the first inner packet's own 5-tuple, the one the
// program reads: not a tunnel's nested packet, not ports a v2.x shim's NPT restored.
func plain(r *telemetry.Report) bool {
	in := &r.Inner
	npt := in.EncapArg != 0 && (in.Encap == telemetry.EncapUDP || in.Encap == telemetry.EncapUDPPort)
	return in.Nested == telemetry.LinkNone && !npt
}

// spreadStats counts what check saw.
type spreadStats struct {
	exact, consistent, none, errs int
}

// check runs b through the program and the decoder: a datagram of one report whose key
// the program reads goes to SpreadHash(cluster's key) mod n; any datagram of one report
// goes, for its key, where every other datagram of that key went (byKey), so that one
// flow's reports stay on one worker; a datagram of several reports to no socket.
func (v *spreadVM) check(t *testing.T, b []byte, byKey map[string]uint32, st *spreadStats, what string) {
	t.Helper()
	got := v.run(t, b)
	if got != spreadNone && got >= uint32(v.n) {
		t.Fatalf("%s: socket %d of %d", what, got, v.n)
	}
	rs, errs := v.dec.DecodeAll(v.in, b)
	switch {
	case len(rs) == 0:
		st.errs++ // not a report: wherever the program put it
		return
	case len(rs) > 1 || len(errs) > 0:
		if got != spreadNone {
			t.Errorf("%s: %d reports and %d errors in one datagram: socket %d, want none (the source's hash)", what, len(rs), len(errs), got)
		}
		st.none++
		return
	}
	r := &rs[0]
	var kb partition.KeyBuf
	key := partition.ReportKey(&kb, r)
	if prev, ok := byKey[string(key)]; ok && prev != got {
		t.Errorf("%s: key %x: socket %d, earlier datagrams of the key %d", what, key, got, prev)
	}
	byKey[string(key)] = got
	if !plain(r) || got == spreadNone {
		st.consistent++
		return
	}
	if want := SpreadHash(key) % uint32(v.n); got != want {
		t.Errorf("%s: key %x: socket %d, want %d", what, key, got, want)
	}
	st.exact++
}

// genStream returns n datagrams of a generator configuration.
func genStream(t *testing.T, cfg gen.Config, n int) [][]byte {
	t.Helper()
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	if err := g.Walk(uint64(n), func(_ uint64, b []byte, _ []telemetry.Report) error {
		out = append(out, append([]byte(nil), b...))
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSpreadProgramGen: for every format the generator sends, one report per datagram, the
// program puts each datagram on the socket of its report's key (SpreadHash of package
// cluster's key, mod the sockets); datagrams of several reports (TR v2.0 coalescing, DTA
// batches) on none.
func TestSpreadProgramGen(t *testing.T) {
	type tc struct {
		name  string
		in    wire.Input
		cfg   func(*gen.Config)
		multi bool
	}
	cases := []tc{
		{"tr0.5", wire.InputReport, func(c *gen.Config) { c.Format = "tr0.5" }, false},
		{"tr0.5/xd", wire.InputReport, func(c *gen.Config) { c.Format, c.Mode = "tr0.5", "xd" }, false},
		{"tr1.0", wire.InputReport, func(c *gen.Config) { c.Format = "tr1.0" }, false},
		{"tr1.0/xd", wire.InputReport, func(c *gen.Config) { c.Format, c.Mode = "tr1.0", "xd" }, false},
		{"tr2.0", wire.InputReport, func(c *gen.Config) { c.Format = "tr2.0" }, false},
		{"tr2.0/xd", wire.InputReport, func(c *gen.Config) { c.Format, c.Mode = "tr2.0", "xd" }, false},
		{"tr2.0/batch", wire.InputReport, func(c *gen.Config) { c.Format, c.Batch = "tr2.0", 8 }, true},
		{"int-label", wire.InputLabel, func(c *gen.Config) { c.Format = "int-label" }, false},
	}
	for _, op := range gen.DTAOps {
		cases = append(cases, tc{"dta/" + op, wire.InputDTA, func(c *gen.Config) { c.Format, c.DTA.Op = "dta", op }, false},
			tc{"dta/" + op + "/batch", wire.InputDTA, func(c *gen.Config) { c.Format, c.DTA.Op, c.Batch = "dta", op, 4 }, true})
	}
	for _, c := range cases {
		for _, n := range []int{2, 3, 8} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				cfg := gen.DefaultConfig()
				cfg.Flows = 200
				c.cfg(&cfg)
				v := newSpreadVM(t, c.in, wire.DefaultConfig(), n)
				byKey := map[string]uint32{}
				var st spreadStats
				used := map[uint32]bool{}
				for i, b := range genStream(t, cfg, 600) {
					v.check(t, b, byKey, &st, fmt.Sprint("datagram ", i))
					used[v.run(t, b)] = true
				}
				if c.multi {
					if st.none == 0 || st.exact != 0 {
						t.Errorf("%+v: want every datagram of several reports on no socket", st)
					}
					return
				}
				// 200 flows, but 16 switches: an INT-label export's or an Append's key.
				if st.exact < 500 || st.errs != 0 || len(used) < min(n, 6) {
					t.Errorf("%+v, sockets used %d of %d: want nearly every datagram placed exactly, on most sockets", st, len(used), n)
				}
			})
		}
	}
}

// TestSpreadProgramCaptures: the golden and third-party captures, each datagram to the
// listener input its port says, under the decoder settings their producers need: a report
// whose key the program reads goes exactly where SpreadHash puts it, and every report of a
// key goes where the others of that key went.
func TestSpreadProgramCaptures(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/golden/*.pcap")
	more, _ := filepath.Glob("../../testdata/third-party/*.pcap")
	files = append(append(files, more...), "../../testdata/onos-bmv2-int.pcap")
	total := spreadStats{}
	for _, f := range files {
		for _, q := range []string{"", "intcollector_gen", "geant", "host_int"} {
			dc := wire.DefaultConfig()
			if q != "" {
				dc.Quirks.Set(q)
			}
			vs := map[wire.Input]*spreadVM{}
			for _, in := range []wire.Input{wire.InputReport, wire.InputINTMD, wire.InputDTA, wire.InputLabel} {
				vs[in] = newSpreadVM(t, in, dc, 4)
			}
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := pcap.NewReader(fh)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]uint32{}
			for i := 0; ; i++ {
				p, err := rd.Next()
				if err != nil {
					break
				}
				d, ok := pcap.UDP(p.Data, p.Link)
				if !ok {
					continue
				}
				// Each datagram as each input: a capture's datagrams are run as whatever a
				// mis-pointed exporter could send too.
				for in, v := range vs {
					v.check(t, d.Payload, byKey, &total, fmt.Sprintf("%s packet %d as %v (%s)", filepath.Base(f), i, in, q))
				}
			}
			fh.Close()
		}
	}
	if total.exact == 0 {
		t.Errorf("%+v: the captures placed no report exactly", total)
	}
	t.Logf("%+v", total)
}

// FuzzSpreadProgram: on any datagram the program ends normally with a socket below n or
// none, and a datagram of one report whose key it reads goes to that key's socket.
func FuzzSpreadProgram(f *testing.F) {
	for _, format := range []string{"tr0.5", "tr1.0", "tr2.0", "dta", "int-label"} {
		cfg := gen.DefaultConfig()
		cfg.Format = format
		g, err := gen.New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		g.Walk(4, func(_ uint64, b []byte, _ []telemetry.Report) error {
			f.Add(uint8(0), append([]byte(nil), b...))
			f.Add(uint8(1), append([]byte(nil), b...))
			f.Add(uint8(2), append([]byte(nil), b...))
			return nil
		}, nil)
	}
	inputs := []wire.Input{wire.InputReport, wire.InputINTMD, wire.InputDTA, wire.InputLabel}
	var vs []*spreadVM
	for _, in := range inputs {
		vs = append(vs, newSpreadVM(f, in, wire.DefaultConfig(), 5))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		var st spreadStats
		vs[int(which)%len(vs)].check(t, b, map[string]uint32{}, &st, "input")
	})
}
