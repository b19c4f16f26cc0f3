package gen

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// skipUnfinished skips a case while the wire encoder it needs is still a stub (DTA and
// INT-label are being finished elsewhere); any other error fails.
func skipUnfinished(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skipf("wire encoder not finished: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func mustNew(t testing.TB, c Config) *Generator {
	t.Helper()
	g, err := New(c)
	if tt, ok := t.(*testing.T); ok {
		skipUnfinished(tt, err)
	} else if err != nil {
		t.Fatal(err)
	}
	return g
}

// cases are the option combinations every decode test runs: each format and mode, each
// INT version inside each report version, coalescing, the DTA primitives and layouts.
func cases() map[string]Config {
	m := map[string]Config{}
	add := func(name string, f func(c *Config)) {
		c := DefaultConfig()
		c.Ring = 300
		f(&c)
		m[name] = c
	}
	for _, tr := range []string{"tr0.5", "tr1.0", "tr2.0"} {
		for _, v := range []string{"0.5", "1.0", "2.x"} {
			add(tr+"/md/int"+v, func(c *Config) { c.Format, c.INTVersion = tr, v; c.Fields = min(8, c.Fields) })
		}
		add(tr+"/xd", func(c *Config) { c.Format, c.Mode = tr, "xd" })
	}
	add("tr1.0/md/bitmap", func(c *Config) { c.Format, c.Bitmap = "tr1.0", 0x9500 })
	add("tr1.0/xd/bitmap", func(c *Config) { c.Format, c.Mode, c.Bitmap = "tr1.0", "xd", 0x8000 })
	add("tr2.0/md/9fields/batch16", func(c *Config) { c.Fields, c.Batch, c.Payload = 9, 16, 13 })
	add("tr2.0/md/21hops/batch4", func(c *Config) { c.Hops, c.Switches, c.Batch, c.Fields = 21, 40, 4, 9 })
	add("tr0.5/md/32hops", func(c *Config) { c.Format, c.Hops, c.Switches, c.Fields = "tr0.5", 32, 32, 7 })
	add("tr2.0/xd/batch64", func(c *Config) { c.Mode, c.Batch, c.Fields = "xd", 64, 9 })
	add("tr2.0/md/1flow/const", func(c *Config) {
		c.Flows, c.Hops, c.Switches = 1, 1, 1
		c.Latency, c.Queue, c.Util = Dist{Kind: DistConst, A: 7}, Dist{Kind: DistConst, A: 1<<24 + 5}, Dist{Kind: DistConst, A: 1<<32 - 1}
	})
	for _, op := range DTAOps {
		add("dta/"+op, func(c *Config) { c.Format, c.DTA.Op = "dta", op })
		add("dta/"+op+"/hdr3/batch8", func(c *Config) {
			c.Format, c.DTA.Op, c.DTA.HeaderLen, c.Batch, c.DTA.KeyLen, c.DTA.DataLen, c.DTA.Redundancy = "dta", op, 3, 8, 13, 8, 3
		})
	}
	add("int-label", func(c *Config) { c.Format = "int-label" })
	add("int-label/16hops", func(c *Config) { c.Format, c.Hops, c.Switches = "int-label", 16, 200 })
	return m
}

// TestDecode: every datagram decodes with wire to exactly the reports the generator says it
// built, over more than one lap of the ring (so patched sequence numbers are covered too).
func TestDecode(t *testing.T) {
	for name, c := range cases() {
		t.Run(name, func(t *testing.T) {
			g := mustNew(t, c)
			dec, err := wire.NewDecoder(g.WireConfig())
			if err != nil {
				t.Fatal(err)
			}
			n := uint64(g.Len())*2 + 17
			var rd wire.Reader
			var got telemetry.Report
			reports := uint64(0)
			err = g.Walk(n, func(i uint64, b []byte, rs []telemetry.Report) error {
				if len(b) > g.MaxLen() {
					return fmt.Errorf("datagram %d: %d bytes, MaxLen says %d", i, len(b), g.MaxLen())
				}
				if g.Batch() > 1 && len(rs) > 1 && len(b) > c.MTU {
					return fmt.Errorf("datagram %d: %d reports in %d bytes exceed the MTU %d", i, len(rs), len(b), c.MTU)
				}
				rd.Reset(dec, g.Input(), b)
				for j := range rs {
					if err := rd.Next(&got); err != nil {
						return fmt.Errorf("datagram %d report %d: %v\n% x", i, j, err, b)
					}
					if !got.Equal(&rs[j]) {
						return fmt.Errorf("datagram %d report %d differs:\n%s", i, j, diff(&got, &rs[j]))
					}
				}
				if err := rd.Next(&got); err != wire.Done {
					return fmt.Errorf("datagram %d: more than %d reports: %v", i, len(rs), err)
				}
				reports += uint64(len(rs))
				return nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tr := g.Truth(n)
			if tr.Datagrams != n || tr.Reports != reports {
				t.Fatalf("truth: %d datagrams %d reports, walked %d and %d", tr.Datagrams, tr.Reports, n, reports)
			}
		})
	}
}

// TestTruth: the ring's arithmetic (laps times a lap plus a prefix) agrees with counting
// the walked stream, and the per-flow, per-node and per-stream counts add up.
func TestTruth(t *testing.T) {
	c := DefaultConfig()
	c.Ring, c.Batch, c.Mode = 50, 8, "xd"
	g := mustNew(t, c)
	for _, n := range []uint64{0, 1, 49, 50, 51, 173} {
		want := g.newTruth()
		if err := g.Walk(n, func(uint64, []byte, []telemetry.Report) error { return nil }, &want); err != nil {
			t.Fatal(err)
		}
		got := g.Truth(n)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("n=%d: Truth %+v\nwalk %+v", n, got, want)
		}
		var byFlow, byNode, byStream uint64
		for _, v := range got.ByFlow {
			byFlow += v
		}
		for _, v := range got.ByNode {
			byNode += v
		}
		for _, v := range got.ByStream {
			byStream += v
		}
		if byFlow != got.Reports || byNode != got.Reports || byStream != got.Datagrams || got.ByFormat["tr2.0"] != got.Reports {
			t.Fatalf("n=%d: counts do not add up: %+v", n, got)
		}
	}
	// Fresh mode counts by rebuilding.
	c.Fresh = true
	f := mustNew(t, c)
	if tr := f.Truth(173); tr.Datagrams != 173 || tr.Reports == 0 {
		t.Fatalf("fresh truth: %+v", tr)
	}
}

// TestSequences: each (node, hw_id) stream numbers its datagrams 0, 1, 2, ... without gaps,
// across laps of the ring, as a switch does.
func TestSequences(t *testing.T) {
	for _, format := range []string{"tr0.5", "tr1.0", "tr2.0"} {
		c := DefaultConfig()
		c.Format, c.Ring, c.Switches, c.Flows, c.Hops = format, 64, 4, 8, 3
		c.INTVersion = ""
		g := mustNew(t, c)
		dec, _ := wire.NewDecoder(g.WireConfig())
		next := map[Stream]uint32{}
		var rd wire.Reader
		var r telemetry.Report
		err := g.Walk(64*5+3, func(i uint64, b []byte, _ []telemetry.Report) error {
			rd.Reset(dec, g.Input(), b)
			if err := rd.Next(&r); err != nil {
				return err
			}
			node := r.NodeID
			if r.Has&telemetry.HasNodeID == 0 { // TR v0.5 NProto 0: the sink is the newest hop
				node = r.Hops[0].NodeID
			}
			k := Stream{node, r.HWID}
			if r.Seq != next[k] {
				return fmt.Errorf("datagram %d stream %+v: seq %d, want %d", i, k, r.Seq, next[k])
			}
			next[k]++
			return nil
		}, nil)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(next) < 2 {
			t.Fatalf("%s: only %d streams", format, len(next))
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		c := DefaultConfig()
		c.Ring, c.Fresh, c.Batch = 100, fresh, 4
		stream := func(seed uint64) []byte {
			c.Seed = seed
			g := mustNew(t, c)
			var out []byte
			g.Walk(150, func(_ uint64, b []byte, _ []telemetry.Report) error {
				out = append(out, b...)
				return nil
			}, nil)
			return out
		}
		a, b, other := stream(7), stream(7), stream(8)
		if !bytes.Equal(a, b) {
			t.Fatalf("fresh=%v: the same seed gave different streams", fresh)
		}
		if bytes.Equal(a, other) {
			t.Fatalf("fresh=%v: seeds 7 and 8 gave the same stream", fresh)
		}
	}
	// The ring a sender copies from is the walked stream.
	c := DefaultConfig()
	c.Ring = 10
	g := mustNew(t, c)
	buf := make([]byte, g.MaxLen())
	g.Walk(25, func(i uint64, b []byte, _ []telemetry.Report) error {
		n, _ := g.copyOut(buf, i)
		if !bytes.Equal(buf[:n], b) {
			t.Fatalf("datagram %d: ring copy differs from the walk", i)
		}
		return nil
	}, nil)
}

// TestPaths: paths are distinct switches, stable per flow whatever the flow count, and
// values follow the distributions' bounds.
func TestPaths(t *testing.T) {
	c := DefaultConfig()
	c.Flows, c.Switches, c.Hops = 100, 10, 10
	g := mustNew(t, c)
	c.Flows = 3
	g3 := mustNew(t, c)
	for i := 0; i < 100; i++ {
		_, p := g.Flow(i)
		seen := map[uint32]bool{}
		for _, n := range p {
			if n < 1 || n > 10 || seen[n] {
				t.Fatalf("flow %d path %v", i, p)
			}
			seen[n] = true
		}
		if i < 3 {
			if _, p3 := g3.Flow(i); !reflect.DeepEqual(p, p3) {
				t.Fatalf("flow %d: path %v with 100 flows, %v with 3", i, p, p3)
			}
		}
	}
	c = DefaultConfig()
	c.Model, c.Latency, c.Ring = ModelDraw, Dist{Kind: DistUniform, A: 100, B: 200}, 200
	g = mustNew(t, c)
	var sum, n float64
	g.Walk(200, func(_ uint64, _ []byte, rs []telemetry.Report) error {
		for _, h := range rs[0].HopList() {
			if h.HopLatency < 100 || h.HopLatency > 200 {
				t.Fatalf("latency %d outside uniform:100:200", h.HopLatency)
			}
			sum += float64(h.HopLatency)
			n++
		}
		return nil
	}, nil)
	if m := sum / n; m < 140 || m > 160 {
		t.Fatalf("mean latency %.1f, want about 150", m)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		f    func(c *Config)
		want string
	}{
		{func(c *Config) { c.Format = "tr3" }, `format: "tr3": allowed are tr0.5, tr1.0, tr2.0, dta, int-label`},
		{func(c *Config) { c.Mode = "mx" }, `mode: "mx": allowed are md`},
		{func(c *Config) { c.INTVersion = "3" }, `int-version: "3": allowed are 0.5, 1.0 and 2.x`},
		{func(c *Config) { c.Mode, c.INTVersion = "xd", "1.0" }, `int-version: "1.0": xd reports embed no INT header`},
		{func(c *Config) { c.Hops = 0 }, "hops: 0: allowed is 1 to 32"},
		{func(c *Config) { c.Hops = 20 }, "hops: 20: a path visits distinct switches, so at most --switches (16)"},
		{func(c *Config) { c.Fields = 10 }, "fields: 10: INT 2.x defines 1 to 9 per-hop fields"},
		{func(c *Config) { c.INTVersion, c.Fields = "1.0", 9 }, "fields: 9: INT 1.0 defines 1 to 8"},
		{func(c *Config) { c.Bitmap = 0x0001 }, "bitmap: 0x0001: INT 2.x fields are bits 0-8 (mask 0xff80); bits 0x0001 are not"},
		{func(c *Config) { c.Hops, c.Switches, c.Fields = 32, 32, 9 }, "hops: 32 hops of 48 bytes make an INT stack of 387 words; the shim's length allows 255"},
		{func(c *Config) { c.Format, c.Batch = "dta", 256 }, "batch: 256: a DTA batch holds at most 255 reports"},
		{func(c *Config) { c.Flows = 0 }, "flows: 0: allowed is 1 to 16777216"},
		{func(c *Config) { c.Switches = 0 }, "switches: 0: allowed is 1 to"},
		{func(c *Config) { c.Format, c.Switches = "int-label", 300 }, "switches: 300: an INT-label item holds an 8-bit switch id"},
		{func(c *Config) { c.Latency = Dist{Kind: DistExp, A: -1} }, "latency: exp:-1: the mean must be positive"},
		{func(c *Config) { c.Queue = Dist{} }, "queue: no distribution given"},
		{func(c *Config) { c.Batch = 0 }, "batch: 0: allowed is 1 to 1024"},
		{func(c *Config) { c.Format, c.Batch = "tr1.0", 2 }, "batch: 2: only tr2.0 (coalescing) and dta (batches)"},
		{func(c *Config) { c.MTU = 10 }, "mtu: 10: allowed is 64 to 65507"},
		{func(c *Config) { c.Payload = -1 }, "payload: -1: allowed is 0 to 1024"},
		{func(c *Config) { c.Format, c.DTA.Op = "dta", "write" }, `dta-op: "write": allowed are key-write, key-increment, postcard, append`},
		{func(c *Config) { c.Format, c.DTA.HeaderLen = "dta", 4 }, "dta-header: 4: allowed are 2"},
		{func(c *Config) { c.Format, c.DTA.Redundancy = "dta", 0 }, "redundancy: 0: allowed is 1 to 255"},
		{func(c *Config) { c.Format, c.DTA.KeyLen = "dta", 65 }, "key-len: 65: allowed is 1 to 64 bytes"},
		{func(c *Config) { c.Format, c.DTA.KeyLen, c.Flows = "dta", 1, 300 }, "key-len: 1: 300 flows need distinct keys"},
		{func(c *Config) { c.Format, c.DTA.DataLen = "dta", 33 }, "data-len: 33: allowed is 1 to 32 bytes"},
		{func(c *Config) { c.Ring = 0 }, "ring: 0: allowed is 1 to"},
	} {
		c := DefaultConfig()
		tc.f(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New accepted what Validate refused (%q)", tc.want)
		}
	}
	c := DefaultConfig()
	c.Ring, c.Fresh = 0, true // the ring size does not matter in fresh mode
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseDist(t *testing.T) {
	for in, want := range map[string]Dist{
		"const:5":          {Kind: DistConst, A: 5},
		"7":                {Kind: DistConst, A: 7},
		"uniform:1:2.5":    {Kind: DistUniform, A: 1, B: 2.5},
		"exp:1000":         {Kind: DistExp, A: 1000},
		"exp:1e3":          {Kind: DistExp, A: 1000},
		"uniform:0:0":      {Kind: DistUniform},
		"const:4294967295": {Kind: DistConst, A: 4294967295},
	} {
		got, err := ParseDist(in)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v", in, got, err)
		}
		if again, _ := ParseDist(got.String()); again != got {
			t.Errorf("%q: String %q does not parse back", in, got.String())
		}
	}
	for _, in := range []string{"", "exp", "exp:0", "exp:x", "uniform:5:1", "normal:1:2", "const:-1", "uniform:1", "const:1:2", "const:5e9"} {
		if _, err := ParseDist(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// diff names the fields in which two reports differ, for readable failures.
func diff(a, b *telemetry.Report) string {
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := 0; i < va.NumField(); i++ {
		name := va.Type().Field(i).Name
		switch name {
		case "Hops", "Labels", "RecvTime":
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s: got %+v want %+v", name, va.Field(i), vb.Field(i)))
		}
	}
	for i := 0; i < int(min(a.NHops, b.NHops)); i++ {
		if a.Hops[i] != b.Hops[i] {
			out = append(out, fmt.Sprintf("hop %d: got %+v\n        want %+v", i, a.Hops[i], b.Hops[i]))
		}
	}
	for i := 0; i < int(min(a.NLabels, b.NLabels)); i++ {
		if a.Labels[i] != b.Labels[i] {
			out = append(out, fmt.Sprintf("label %d: got %+v\n        want %+v", i, a.Labels[i], b.Labels[i]))
		}
	}
	return strings.Join(out, "\n")
}

// TestVary: in the draw model values belong to queues. With Vary 0 every report through a
// queue (switch, queue id) carries that queue's one latency; with 0.2 about a fifth of
// consecutive reports through a queue carry a new one; with 1, all do.
func TestVary(t *testing.T) {
	for _, tc := range []struct {
		vary     float64
		min, max float64
	}{{0, 0, 0}, {0.2, 0.17, 0.23}, {1, 0.99, 1}} {
		c := DefaultConfig()
		c.Model, c.Vary, c.Flows = ModelDraw, tc.vary, 16
		g := mustNew(t, c)
		last := map[[2]uint32]uint32{}
		var same, changed int
		err := g.Walk(4000, func(_ uint64, _ []byte, rs []telemetry.Report) error {
			for i := range rs {
				for _, h := range rs[i].HopList() {
					key := [2]uint32{h.NodeID, uint32(h.QueueID)}
					if v, ok := last[key]; ok {
						if v == h.HopLatency {
							same++
						} else {
							changed++
						}
					}
					last[key] = h.HopLatency
				}
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if frac := float64(changed) / float64(same+changed); frac < tc.min || frac > tc.max {
			t.Errorf("vary %g: %d of %d consecutive latencies of a queue changed (%.3f), want %g-%g", tc.vary, changed, same+changed, frac, tc.min, tc.max)
		}
	}
	c := DefaultConfig()
	c.Vary = 1.5
	if err := c.Validate(); err == nil || err.Error() != "vary: 1.5: allowed is 0 to 1 (the probability that a report draws new values)" {
		t.Errorf("vary 1.5: %v", err)
	}
}
