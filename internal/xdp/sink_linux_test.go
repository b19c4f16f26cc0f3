package xdp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

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
	return SinkConfig{DSCP: []wire.DSCPMatch{{Value: sinkMarkDSCP, Mask: 0x3f}}, Port: sinkMarkPort, HostINT: hostINT, RingBytes: 1 << 20}
}

// decoderFor is the decoder a sink's worker uses for c (ingest.Sink.decoder).
func decoderFor(t testing.TB, c SinkConfig) *wire.Decoder {
	cfg := wire.DefaultConfig()
	cfg.DSCP, cfg.ProbeShim, cfg.INTPort = c.DSCP, false, c.Port
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
						if got := rs[0].HopList(); len(got) != int(r.NHops) || (len(got) > 0 && !equalHops(got, r.HopList())) {
							t.Fatalf("%s: hops\n got %+v\nwant %+v", name, got, r.HopList())
						}
						ip, l4, _, _ := frames.Headers(orig)
						_ = ip
						if f := rs[0].Flow; f.SrcPort != be16(orig[l4:]) || (f.DstPort != be16(orig[l4+2:]) && !(sh.v == telemetry.INT05 && sh.port)) {
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

func equalHops(a, b []telemetry.Hop) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
