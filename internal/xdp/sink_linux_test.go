package xdp

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/intake-int/intake/internal/testutil/frames"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// The sink program's tests run it through BPF_PROG_TEST_RUN: the frame it passes on (data
// out), its verdict, its counters and its ring records are compared with what InsertINT
// put in.

const (
	sinkMarkDSCP = 0x17
	sinkMarkPort = 5555
)

// sinkShape is one INT format a source may insert.
type sinkShape struct {
	name    string
	v       telemetry.INTVersion
	npt     uint16 // v2.x
	port    bool   // port-marked
	hostINT bool
	tcp     bool // also over TCP
}

var sinkShapes = []sinkShape{
	{name: "v2.x npt0", v: telemetry.INT2x, tcp: true},
	{name: "v2.x npt1", v: telemetry.INT2x, npt: 1, port: true},
	{name: "v2.x npt2", v: telemetry.INT2x, npt: 2, port: true},
	{name: "v1.0", v: telemetry.INT10, tcp: true},
	{name: "v0.5 dscp", v: telemetry.INT05, tcp: true},
	{name: "v0.5 port", v: telemetry.INT05, port: true},
	{name: "host-int", v: telemetry.INT05, hostINT: true, tcp: true},
}

// sinkTestConfig is the sink program's configuration for the tests: both markings, every
// version, host-int's shim taken out (hostINT also puts TCP's INT before the options).
func sinkTestConfig(hostINT bool) SinkConfig {
	return SinkConfig{DSCP: []DSCPMatch{{Value: sinkMarkDSCP, Mask: 0x3f}}, Port: sinkMarkPort, HostINT: hostINT, RingBytes: 1 << 20}
}

// decoderFor is the decoder a sink's worker uses for c (ingest.Sink.decoder).
func decoderFor(t testing.TB, c SinkConfig) *wire.Decoder {
	cfg := wire.DefaultConfig()
	cfg.ProbeShim, cfg.INTPort = false, c.Port
	for _, m := range c.DSCP {
		cfg.DSCP = append(cfg.DSCP, wire.DSCPMatch{Value: m.Value, Mask: m.Mask})
	}
	cfg.TCPShimBeforeOptions, cfg.Quirks.HostINT = c.TCPBeforeOptions, c.HostINT
	d, err := wire.NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stack fills r with an INT stack of version v: nh hops, every field the version has.
func stack(r *telemetry.Report, v telemetry.INTVersion, nh int, rng *rand.Rand) {
	in := &r.INT
	in.Version = v
	var fields telemetry.Field
	switch v {
	case telemetry.INT2x:
		in.Bitmap = 0xff00 // node, ports, latency, queue, ingress/egress ts, L2 ports, tx util
		in.HopML = 11
		in.RemHops = uint8(rng.IntN(8))
		in.DSID, in.DSInstr, in.DSFlags = uint16(rng.Uint32()), 0, uint16(rng.Uint32())
		fields = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency |
			telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FIngressTS | telemetry.FEgressTS |
			telemetry.FL2IngressPort | telemetry.FL2EgressPort | telemetry.FTxUtil
	case telemetry.INT10:
		in.Bitmap = 0xf000 // node, ports, latency, queue
		in.HopML = 4
		in.RemHops = uint8(rng.IntN(8))
		fields = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FHopLatency |
			telemetry.FQueueID | telemetry.FQueueOccupancy
	case telemetry.INT05:
		in.Bitmap = 0xcc00 // node, ports, ingress ts, egress ts (host-int's)
		in.MaxHops = 8
		fields = telemetry.FNodeID | telemetry.FIngressPort | telemetry.FEgressPort | telemetry.FIngressTS | telemetry.FEgressTS
	}
	wide := uint64(1<<32 - 2)
	if v == telemetry.INT2x {
		wide = 1<<63 - 1
	}
	for i := 0; i < nh; i++ {
		h := r.AddHop()
		*h = telemetry.Hop{Fields: fields, NodeID: uint32(100 + i), IngressPort: uint32(rng.IntN(0xffff)), EgressPort: uint32(rng.IntN(0xffff)),
			HopLatency: rng.Uint32() >> 1, QueueID: uint16(rng.IntN(255)), QueueOccupancy: uint32(rng.IntN(1<<24 - 1)),
			IngressTS: rng.Uint64N(wide), EgressTS: rng.Uint64N(wide), L2IngressPort: rng.Uint32() >> 1, L2EgressPort: rng.Uint32() >> 1, TxUtil: rng.Uint32() >> 1}
		if fields&telemetry.FTxUtil == 0 {
			h.TxUtil, h.L2IngressPort, h.L2EgressPort = 0, 0, 0
		}
		if fields&telemetry.FIngressTS == 0 {
			h.IngressTS, h.EgressTS = 0, 0
		}
		if fields&telemetry.FHopLatency == 0 {
			h.HopLatency, h.QueueID, h.QueueOccupancy = 0, 0, 0
		}
	}
}

// sinkFrame builds a random data frame of shape s (IPv6 or not, TCP or UDP) and inserts INT
// of nh hops into it: it returns the original, the frame with INT and the report inserted.
func sinkFrame(t testing.TB, e *wire.Encoder, s sinkShape, v6, tcp bool, rng *rand.Rand, nh int) (orig, with []byte, r *telemetry.Report) {
	t.Helper()
	f := frames.Frame{V6: v6, Proto: 17, VLANs: rng.IntN(3), TOS: uint8(rng.IntN(256)), Sport: uint16(1024 + rng.IntN(60000)),
		Dport: uint16(1024 + rng.IntN(4000)), Payload: make([]byte, rng.IntN(200))}
	for i := range f.Payload {
		f.Payload[i] = byte(rng.Uint32())
	}
	if tcp {
		f.Proto = 6
		f.TCPOpts = 4 * rng.IntN(10)
	}
	if !v6 && rng.IntN(2) == 0 {
		f.IPOpts = 4 * (1 + rng.IntN(10))
	}
	f.NoUDP = !v6 && rng.IntN(3) == 0
	orig = f.Build()
	r = &telemetry.Report{}
	stack(r, s.v, nh, rng)
	r.Inner.EncapArg = s.npt
	if s.hostINT {
		r.INT.ShimType, r.INT.SourceSeq = 3, rng.Uint32()
	}
	m := wire.Marking{DSCP: sinkMarkDSCP}
	if s.port {
		m = wire.Marking{Port: sinkMarkPort}
	}
	with, err := e.InsertINT(nil, orig, r, m)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return orig, with, r
}

// runSinkOut runs the program once on frame: its verdict and the frame it passes on.
func runSinkOut(t testing.TB, s *Sink, frame []byte) (uint32, []byte) {
	t.Helper()
	opts := ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+64)}
	ret, err := s.coll.Programs[SinkProgramName].Run(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return ret, opts.DataOut
}

func newTestSink(t testing.TB, c SinkConfig) *Sink {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading XDP programs needs root (CAP_BPF)")
	}
	s, err := newSink(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSinkStrip inserts INT of every version, NPT and marking into UDP and TCP (with and
// without options) over IPv4 (with and without options, with and without a UDP checksum)
// and IPv6, behind 0-2 VLAN tags, with 0-8 hops. The program passes every frame, and the
// frame it passes on is the original byte for byte (lengths, DSCP, port, protocol and every
// checksum restored); its ring record is the frame with INT, which the sink's decoder reads
// back to exactly the hops inserted and the original 5-tuple.
func TestSinkStrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	n := 0
	for _, hostINT := range []bool{false, true} {
		c := sinkTestConfig(hostINT)
		s := newTestSink(t, c)
		wc := wire.DefaultConfig()
		wc.INTPort, wc.Quirks.HostINT = sinkMarkPort, hostINT
		e, err := wire.NewEncoder(wc)
		if err != nil {
			t.Fatal(err)
		}
		d := decoderFor(t, c)
		for _, sh := range sinkShapes {
			if sh.hostINT != hostINT {
				continue
			}
			for _, v6 := range []bool{false, true} {
				for _, tcp := range []bool{false, true} {
					if tcp && !sh.tcp {
						continue
					}
					name := fmt.Sprintf("%s/v6=%v/tcp=%v/host_int=%v", sh.name, v6, tcp, hostINT)
					for i := 0; i < 20; i++ {
						orig, with, r := sinkFrame(t, e, sh, v6, tcp, rng, i%9)
						ret, out := runSinkOut(t, s, with)
						if ret != xdpPass {
							t.Fatalf("%s: verdict %d, want XDP_PASS", name, ret)
						}
						if !bytes.Equal(out, orig) {
							t.Fatalf("%s: the frame passed on differs from the original\n got % x\nwant % x\n with INT % x", name, out, orig, with)
						}
						var rec *SinkRecord
						got, err := s.Read(1, 0, func(sr *SinkRecord) {
							c := *sr
							c.Frame = append([]byte(nil), sr.Frame...)
							rec = &c
						})
						if err != nil || got != 1 {
							t.Fatalf("%s: ring: %d records, %v", name, got, err)
						}
						if rec.WireLen != len(with) || !bytes.HasPrefix(with, rec.Frame) || rec.Time == 0 {
							t.Fatalf("%s: record of %d bytes (wire %d, time %d) is not a prefix of the frame with INT (%d bytes)", name, len(rec.Frame), rec.WireLen, rec.Time, len(with))
						}
						rs, errs := d.DecodeAll(wire.InputINTMD, rec.Frame)
						if len(errs) != 0 || len(rs) != 1 {
							t.Fatalf("%s: the record decodes to %d reports, errors %v", name, len(rs), errs)
						}
						if got := rs[0].HopList(); len(got) != int(r.NHops) || (len(got) > 0 && !slices.Equal(got, r.HopList())) {
							t.Fatalf("%s: hops\n got %+v\nwant %+v", name, got, r.HopList())
						}
						ip, l4, _, _ := frames.Headers(orig)
						_ = ip
						if f := rs[0].Flow; f.SrcPort != be16(orig[l4:]) || f.DstPort != be16(orig[l4+2:]) {
							t.Fatalf("%s: flow %v: not the original ports", name, f.String())
						}
						n++
					}
				}
			}
		}
		var cnt [NumSinkOutcomes]uint64
		if err := s.Counts(&cnt); err != nil {
			t.Fatal(err)
		}
		if cnt[SinkStripped] == 0 || cnt[SinkStripped] != sum(cnt[:]) {
			t.Errorf("host_int=%v: outcomes %v: want every frame stripped", hostINT, cnt)
		}
	}
	t.Logf("%d frames stripped and restored", n)
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func sum(c []uint64) uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// sinkFuzz is how many packets TestSinkFuzz sends through the program: 1,000,000 for the
// issue's fuzz run (go test ./internal/xdp -run TestSinkFuzz -sink-fuzz 1000000).
var sinkFuzz = flag.Int("sink-fuzz", 100_000, "packets TestSinkFuzz sends through the sink program")

// TestSinkFuzz sends random packets through the program: well-formed INT of every shape
// (restored to the original byte for byte), INT with random bytes written over its shim,
// header, stack or tail, or replaced by random bytes (with valid checksums: as a source that
// inserted them would send them), frames cut short, and packets that carry no INT (an
// unmarked DSCP, another port, other protocols), and INT damaged in transit (a byte changed,
// the checksums not). The program never drops a packet; one without INT passes byte for byte;
// one with INT is either passed untouched or passed with exactly one run of bytes taken out
// at INT's place, every length and checksum valid, and everything else as it was
// (sinkChanged); a damaged one is passed untouched, restored, or with its checksum still
// failing, so that the host drops it as it would have without the sink.
func TestSinkFuzz(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	c := sinkTestConfig(false)
	s := newTestSink(t, c)
	e, err := wire.NewEncoder(func() wire.Config { w := wire.DefaultConfig(); w.INTPort = sinkMarkPort; return w }())
	if err != nil {
		t.Fatal(err)
	}
	var kinds [6]int
	damaged := 0                                 // kind 5 stripped: their damage still fails the host's checksum
	var stripped, untouched, restored, other int // restored: changed input stripped back to the original
	start := time.Now()
	for i := 0; i < *sinkFuzz; i++ {
		sh := sinkShapes[rng.IntN(len(sinkShapes)-1)] // host-int has its own configuration
		v6, tcp := rng.IntN(2) == 0, sh.tcp && rng.IntN(2) == 0
		orig, with, _ := sinkFrame(t, e, sh, v6, tcp, rng, rng.IntN(9))
		kind := rng.IntN(len(kinds))
		in := with
		switch kind {
		case 0: // well-formed
		case 1: // random bytes written over INT
			in = mutateINT(with, orig, sh, rng)
		case 2: // INT replaced by random bytes of a random length
			in = replaceINT(with, orig, sh, rng)
		case 3: // cut short: the IP and L4 lengths now say more than the frame has
			in = with[:max(14, len(with)-1-rng.IntN(len(with)-14))]
		case 4: // no INT: the original, unmarked, or marked by neither
			in = orig
			if rng.IntN(2) == 0 {
				in = bytes.Clone(orig)
				setTOS(in, uint8(rng.IntN(256))&^(0x3f<<2)|uint8(rng.IntN(0x17))<<2) // DSCP below 0x17
				in = resum(in)
			}
		case 5: // damaged in transit: one byte of INT changed, the checksums not
			in = bytes.Clone(with)
			at, n := intRange(with, orig, sh)
			// Not the fields the sink restores from (shim bytes 2-3, the v0.5 tail): it
			// trusts them, as it does not sum the whole packet (docs/sink.md). One byte, so
			// that the damage cannot cancel out in the 16-bit sum.
			for {
				p := rng.IntN(n)
				if p == 2 || p == 3 || (sh.v == telemetry.INT05 && p >= n-4) {
					continue
				}
				in[at+p] ^= byte(1 + rng.IntN(255))
				break
			}
		}
		kinds[kind]++
		ret, out := runSinkOut(t, s, in)
		if ret != xdpPass {
			t.Fatalf("packet %d (kind %d): verdict %d, want XDP_PASS\n% x", i, kind, ret, in)
		}
		switch {
		case kind == 0 && !bytes.Equal(out, orig):
			t.Fatalf("packet %d: well-formed INT not restored\n got % x\nwant % x", i, out, orig)
		case kind == 4 && !bytes.Equal(out, in):
			t.Fatalf("packet %d: a packet without INT was changed\n got % x\nwant % x", i, out, in)
		case bytes.Equal(out, in):
			untouched++
		case kind == 5:
			// Only checksums stand between damage and the host. Unless the damage hit INT's
			// values only, which do not reach the host (out is the original), the packet
			// passed on must still fail the host's check, as it would have without the sink.
			// An IPv4 UDP datagram without a checksum has nothing that could tell.
			if !bytes.Equal(out, orig) && frames.Check(out) == nil && !noChecksum(in) {
				t.Fatalf("packet %d: damaged in transit, delivered with valid checksums\n  in % x\n out % x", i, in, out)
			}
			damaged++
		default:
			if err := sinkChanged(in, out, c); err != nil {
				t.Fatalf("packet %d (kind %d): %v\n  in % x\n out % x", i, kind, err, in, out)
			}
			stripped++
			if bytes.Equal(out, orig) {
				restored++
			} else if kind != 0 {
				other++ // a changed stack taken out as its own Length says: another packet's bytes
			}
		}
	}
	s.Read(1<<30, 0, func(*SinkRecord) {}) // empty the ring
	var cnt [NumSinkOutcomes]uint64
	s.Counts(&cnt)
	if int(sum(cnt[:])) != *sinkFuzz || cnt[SinkPassError] != 0 {
		t.Errorf("outcomes %v over %d packets", cnt, *sinkFuzz)
	}
	t.Logf("%d packets in %v (kinds: well-formed, overwritten, replaced, cut short, no INT, damaged in transit = %v): %d stripped (%d back to the original, %d changed ones as their stack said), %d damaged ones stripped and still failing the host's checksum (or restored), %d untouched; outcomes %v",
		*sinkFuzz, time.Since(start).Round(time.Millisecond), kinds, stripped, restored, other, damaged, untouched, cnt)
}

// intRange is where INT sits in with, orig with INT of shape sh inserted: right after the
// UDP or TCP header (after the UDP header NPT 2 inserted), and how long it is.
func intRange(with, orig []byte, sh sinkShape) (at, n int) {
	_, l4, _, proto := frames.Headers(with)
	at = l4 + 8
	if proto == 6 {
		at = l4 + int(with[l4+12]>>4)*4
	}
	n = len(with) - len(orig)
	if sh.npt == 2 {
		n -= 8
	}
	return at, n
}

// mutateINT writes 1 to 4 random bytes over the INT of with, and fixes the checksums.
func mutateINT(with, orig []byte, sh sinkShape, rng *rand.Rand) []byte {
	at, n := intRange(with, orig, sh)
	b := bytes.Clone(with)
	for k := 1 + rng.IntN(4); k > 0 && n > 0; k-- {
		b[at+rng.IntN(n)] = byte(rng.Uint32())
	}
	return resum(b)
}

// replaceINT replaces the INT of with by 0 to 1100 random bytes, the first a plausible shim
// type, and fixes the lengths and checksums.
func replaceINT(with, orig []byte, sh sinkShape, rng *rand.Rand) []byte {
	at, n := intRange(with, orig, sh)
	r := make([]byte, 4*rng.IntN(276))
	for i := range r {
		r[i] = byte(rng.Uint32())
	}
	if len(r) > 0 {
		r[0] = []byte{0x01, 0x03, 0x10, 0x14, 0x18, 0x30, byte(rng.Uint32())}[rng.IntN(7)]
	}
	b := append(append(append([]byte(nil), with[:at]...), r...), with[at+n:]...)
	return resum(b)
}

// noChecksum says whether frame is an IPv4 UDP datagram without a checksum.
func noChecksum(frame []byte) bool {
	_, l4, v6, proto := frames.Headers(frame)
	return proto == 17 && !v6 && len(frame) >= l4+8 && frame[l4+6] == 0 && frame[l4+7] == 0
}

// setTOS sets the frame's IP TOS (traffic class) byte.
func setTOS(b []byte, tos uint8) {
	ip, _, v6, _ := frames.Headers(b)
	if v6 {
		b[ip], b[ip+1] = 0x60|tos>>4, tos<<4|b[ip+1]&0x0f
		return
	}
	b[ip+1] = tos
}

// resum sets the frame's IP and L4 lengths to its length and recomputes its checksums (an
// IPv4 UDP checksum of 0 stays 0), as the source of a packet would.
func resum(b []byte) []byte {
	ip, l4, v6, proto := frames.Headers(b)
	if l4+20 > len(b) {
		return b
	}
	if v6 {
		binary.BigEndian.PutUint16(b[ip+4:], uint16(len(b)-l4))
	} else {
		binary.BigEndian.PutUint16(b[ip+2:], uint16(len(b)-ip))
		b[ip+10], b[ip+11] = 0, 0
		binary.BigEndian.PutUint16(b[ip+10:], frames.Checksum(b[ip:l4]))
	}
	if proto == 17 {
		binary.BigEndian.PutUint16(b[l4+4:], uint16(len(b)-l4))
	}
	return setL4Sum(b)
}

// setL4Sum recomputes the L4 checksum of frame b (kept 0 for IPv4 UDP without one).
func setL4Sum(b []byte) []byte {
	ip, l4, v6, proto := frames.Headers(b)
	if proto == 17 && !v6 && b[l4+6] == 0 && b[l4+7] == 0 {
		return b
	}
	frames.SetL4Sum(b[ip:], v6, proto, b[l4:])
	return b
}

// sinkChanged says what is wrong with out as what the sink made of in (nil: nothing): out's
// lengths and checksums are valid, and out is in with one run of bytes taken out where INT
// starts (after the UDP header, the TCP header, or for NPT 2 the IP header), the IP and L4
// headers differing only in lengths, checksums, DSCP, destination port and protocol.
func sinkChanged(in, out []byte, c SinkConfig) error {
	ip, l4, v6, proto := frames.Headers(in)
	if _, _, _, p := frames.Headers(out); p != proto {
		// NPT 2: the original L4 header is the source's, not the sink's to fix or judge
		// (its checksum covers what follows INT only); the IP header is the sink's.
		if err := frames.Check(setL4Sum(bytes.Clone(out))); err != nil {
			return fmt.Errorf("the frame passed on: %w", err)
		}
	} else if err := frames.Check(out); err != nil {
		return fmt.Errorf("the frame passed on: %w", err)
	}
	cut := len(in) - len(out)
	if cut <= 0 {
		return fmt.Errorf("%d bytes passed on for %d received", len(out), len(in))
	}
	pay := l4 + 8
	if proto == 6 {
		pay = l4 + int(in[l4+12]>>4)*4
		if c.TCPBeforeOptions || c.HostINT {
			pay = l4 + 20
		}
	}
	at := pay
	if _, _, _, p := frames.Headers(out); p != proto {
		at = l4 // NPT 2: the inserted UDP header went too
	}
	if !bytes.Equal(out[at:], in[at+cut:]) {
		return fmt.Errorf("the bytes after INT (%d taken out at %d) differ", cut, at)
	}
	mask := func(b []byte) []byte {
		m := bytes.Clone(b[:at])
		if v6 {
			m[ip], m[ip+1] = m[ip]&0xf0, m[ip+1]&0x3f // traffic class: DSCP
			m[ip+4], m[ip+5], m[ip+6] = 0, 0, 0       // payload length, next header
		} else {
			m[ip+1] &= 3                                                  // DSCP
			m[ip+2], m[ip+3], m[ip+9], m[ip+10], m[ip+11] = 0, 0, 0, 0, 0 // length, protocol, checksum
		}
		if at > l4 {
			m[l4+2], m[l4+3] = 0, 0 // destination port
			if proto == 17 {
				m[l4+4], m[l4+5], m[l4+6], m[l4+7] = 0, 0, 0, 0
			} else {
				m[l4+16], m[l4+17] = 0, 0
			}
		}
		return m
	}
	if !bytes.Equal(mask(in), mask(out)) {
		return fmt.Errorf("headers differ beyond lengths, checksums, DSCP, port and protocol")
	}
	return nil
}

// FuzzSink puts the fuzzer's bytes where INT goes in a marked packet (shape: IPv4 or IPv6,
// UDP or TCP, marked by DSCP or by port) with valid lengths and checksums, and holds the
// program to TestSinkFuzz's rules: always passed, untouched or changed as sinkChanged
// allows.
func FuzzSink(f *testing.F) {
	rng := rand.New(rand.NewPCG(29, 3))
	e, err := wire.NewEncoder(func() wire.Config { w := wire.DefaultConfig(); w.INTPort = sinkMarkPort; return w }())
	if err != nil {
		f.Fatal(err)
	}
	for i, sh := range sinkShapes[:len(sinkShapes)-1] {
		orig, with, _ := sinkFrame(f, e, sh, i%2 == 1, sh.tcp, rng, 3)
		at, n := intRange(with, orig, sh)
		shape := uint8(i % 2)
		if sh.tcp {
			shape |= 2
		}
		if sh.port {
			shape |= 4
		}
		f.Add(shape, with[at:at+n])
	}
	f.Fuzz(func(t *testing.T, shape uint8, intBytes []byte) {
		c := sinkTestConfig(false)
		s := fuzzSink(t, c)
		fr := frames.Frame{V6: shape&1 != 0, Proto: 17, TOS: sinkMarkDSCP << 2, Sport: 4000, Dport: 80, Payload: []byte("payload after INT")}
		if shape&2 != 0 {
			fr.Proto = 6
		}
		if shape&4 != 0 {
			fr.Proto, fr.TOS, fr.Dport = 17, 0, sinkMarkPort
		}
		orig := fr.Build()
		at, _ := intRange(orig, orig, sinkShape{})
		in := resum(append(append(append([]byte(nil), orig[:at]...), intBytes...), orig[at:]...))
		ret, out := runSinkOut(t, s, in)
		if ret != xdpPass {
			t.Fatalf("verdict %d, want XDP_PASS", ret)
		}
		if !bytes.Equal(out, in) {
			if err := sinkChanged(in, out, c); err != nil {
				t.Fatalf("%v\n  in % x\n out % x", err, in, out)
			}
		}
		s.Read(64, 0, func(*SinkRecord) {})
	})
}

// fuzzSink is one program for the whole fuzz run (loading one per input would dominate it).
var fuzzSinkProg *Sink

func fuzzSink(t *testing.T, c SinkConfig) *Sink {
	if fuzzSinkProg == nil {
		if os.Geteuid() != 0 {
			t.Skip("skipped: loading XDP programs needs root (CAP_BPF)")
		}
		s, err := newSink(c)
		if err != nil {
			t.Fatal(err)
		}
		fuzzSinkProg = s
	}
	return fuzzSinkProg
}

// BenchmarkSinkProgram is the sink program's run time per packet (BPF_PROG_TEST_RUN, one run
// per call: a repeated run would see the packet it already stripped): 5-hop INT v2.x (NPT 0,
// DSCP-marked) UDP packets over IPv4 with 100 bytes of payload, the ring read as it fills;
// and, for a floor in the same run, the same packets unmarked (passed at the marking check).
func BenchmarkSinkProgram(b *testing.B) {
	c := sinkTestConfig(false)
	s := newTestSink(b, c)
	e, err := wire.NewEncoder(wire.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(29, 4))
	var marked, plain [][]byte
	for i := 0; i < 256; i++ {
		f := frames.Frame{Proto: 17, Sport: uint16(1024 + i), Dport: 5000, Payload: make([]byte, 100)}
		orig := f.Build()
		var r telemetry.Report
		stack(&r, telemetry.INT2x, 5, rng)
		with, err := e.InsertINT(nil, orig, &r, wire.Marking{DSCP: sinkMarkDSCP})
		if err != nil {
			b.Fatal(err)
		}
		f.Payload = make([]byte, 100+len(with)-len(orig))
		marked, plain = append(marked, with), append(plain, f.Build())
	}
	for _, set := range []struct {
		name   string
		frames [][]byte
	}{{"no-int", plain}, {"int", marked}} {
		b.Run(set.name, func(b *testing.B) {
			prog := s.coll.Programs[SinkProgramName]
			stats, err := EnableRunStats()
			if err != nil {
				b.Fatal(err)
			}
			defer stats.Close()
			st0, _ := prog.Stats()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ret, err := prog.Run(&ebpf.RunOptions{Data: set.frames[i%len(set.frames)]})
				if err != nil || ret != xdpPass {
					b.Fatal(ret, err)
				}
				if i%1024 == 1023 {
					s.Read(1<<20, 0, func(*SinkRecord) {})
				}
			}
			st1, _ := prog.Stats()
			// The kernel's own accounting (kernel.bpf_stats_enabled), as bench reads it on a
			// veth: the program's run time, not the test run's.
			b.ReportMetric(float64(st1.Runtime-st0.Runtime)/float64(st1.RunCount-st0.RunCount), "bpf-ns/packet")
		})
	}
}
