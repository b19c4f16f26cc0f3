package xdp

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// kHop and kRep mirror struct khop and struct krep of bpf/report.h: the parse the program
// leaves in its per-CPU buffer (pbufs), read back by FuzzKernelParse.
type kHop struct {
	InTS, EgTS                                            uint64
	Node, InPort, EgPort, Lat, QOcc, Tx, BOcc, L2In, L2Eg uint32
	Fields, QID                                           uint16
	BID                                                   uint8
	_                                                     [7]uint8
}

type kRep struct {
	Now                                      uint64
	Node, Seq, ITS                           uint32
	HWID, Drop, HasReason, Reason            uint8
	HasFlow, NHops, QueueRx, HasNode, HasITS uint8
	_                                        [3]uint8
	Flow                                     flowKey
	Hop                                      [KernelMaxHops]kHop
}

// pbufData is the offset of struct krep in struct pbuf (after the 1024+64 byte buffer).
const pbufData = 1024 + 64

// lastParse returns the report the program parsed last: the per-CPU buffer with the
// newest receive time.
func lastParse(tb testing.TB, coll *ebpf.Collection) kRep {
	tb.Helper()
	var vals [][]byte
	if err := coll.Maps[intakeMapPbufs].Lookup(uint32(0), &vals); err != nil {
		tb.Fatal(err)
	}
	var best kRep
	for _, v := range vals {
		r := *(*kRep)(unsafe.Pointer(&v[pbufData]))
		if r.Now >= best.Now {
			best = r
		}
	}
	return best
}

// sameParse reports how the kernel's parse k differs from the decoder's report r ("" when
// it does not), as far as the kernel reads a report.
func sameParse(k *kRep, r *telemetry.Report) string {
	const read = telemetry.FQueueCongestion - 1 // the fields the kernel reads: bits 0-12
	switch {
	case (k.HasNode != 0) != (r.Has&telemetry.HasNodeID != 0) || k.HasNode != 0 && k.Node != r.NodeID:
		return fmt.Sprintf("node %v %d, decoder %d", k.HasNode, k.Node, r.NodeID)
	case k.Seq != r.Seq || k.HWID != r.HWID:
		return fmt.Sprintf("seq %d hw_id %d, decoder %d %d", k.Seq, k.HWID, r.Seq, r.HWID)
	case (k.Drop != 0) != (r.Flags&telemetry.FlagDrop != 0):
		return "drop flag"
	case (k.HasReason != 0) != (r.Has&telemetry.HasDropReason != 0) || k.HasReason != 0 && k.Reason != r.DropReason:
		return "drop reason"
	case (k.HasITS != 0) != (r.Has&telemetry.HasIngressTS != 0) || uint64(k.ITS) != r.IngressTS:
		return "report ingress timestamp"
	case (k.HasFlow != 0) != (r.Has&telemetry.HasFlow != 0) || k.HasFlow != 0 && k.Flow.K != r.Flow:
		return fmt.Sprintf("flow %+v, decoder %+v", k.Flow.K, r.Flow)
	case int(k.NHops) != int(r.NHops):
		return fmt.Sprintf("%d hops, decoder %d", k.NHops, r.NHops)
	}
	for i := range int(k.NHops) {
		h, kh := &r.Hops[i], &k.Hop[i]
		want := telemetry.Hop{Fields: h.Fields & read}
		got := telemetry.Hop{Fields: telemetry.Field(kh.Fields)}
		for _, p := range []struct {
			f    telemetry.Field
			w, g *uint32
			v    uint32
		}{
			{telemetry.FNodeID, &want.NodeID, &got.NodeID, kh.Node}, {telemetry.FIngressPort, &want.IngressPort, &got.IngressPort, kh.InPort},
			{telemetry.FEgressPort, &want.EgressPort, &got.EgressPort, kh.EgPort}, {telemetry.FHopLatency, &want.HopLatency, &got.HopLatency, kh.Lat},
			{telemetry.FQueueOccupancy, &want.QueueOccupancy, &got.QueueOccupancy, kh.QOcc}, {telemetry.FTxUtil, &want.TxUtil, &got.TxUtil, kh.Tx},
			{telemetry.FBufferOccupancy, &want.BufferOccupancy, &got.BufferOccupancy, kh.BOcc}, {telemetry.FL2IngressPort, &want.L2IngressPort, &got.L2IngressPort, kh.L2In},
			{telemetry.FL2EgressPort, &want.L2EgressPort, &got.L2EgressPort, kh.L2Eg},
		} {
			if v, ok := h.Value(p.f); ok {
				*p.w = uint32(v)
			}
			if got.Fields&p.f != 0 {
				*p.g = p.v
			}
		}
		if h.Fields&telemetry.FQueueID != 0 {
			want.QueueID = h.QueueID
		}
		if h.Fields&telemetry.FBufferID != 0 {
			want.BufferID = h.BufferID
		}
		if h.Fields&telemetry.FIngressTS != 0 {
			want.IngressTS = h.IngressTS
		}
		if h.Fields&telemetry.FEgressTS != 0 {
			want.EgressTS = h.EgressTS
		}
		if got.Fields&telemetry.FQueueID != 0 {
			got.QueueID = kh.QID
		}
		if got.Fields&telemetry.FBufferID != 0 {
			got.BufferID = kh.BID
		}
		if got.Fields&telemetry.FIngressTS != 0 {
			got.IngressTS = kh.InTS
		}
		if got.Fields&telemetry.FEgressTS != 0 {
			got.EgressTS = kh.EgTS
		}
		if want != got {
			return fmt.Sprintf("hop %d: %+v, decoder %+v", i, got, want)
		}
	}
	return ""
}

// FuzzKernelParse runs the program with detection in the kernel on arbitrary report
// datagrams: it must never fail, and a datagram it detects itself (XDP_DROP; the rest it
// lifts, and with no AF_XDP socket here they pass) must be one the decoder reads as exactly
// one report, without an error in its inner packet, with the same values as the kernel read.
func FuzzKernelParse(f *testing.F) {
	for _, sh := range []streamShape{{"tr2.0", "2.x"}, {"tr1.0", "1.0"}, {"tr0.5", "1.0"}, {"tr2.0", "1.0"}} {
		for _, b := range detectStream(f, sh, 6, 6, 3) {
			f.Add(b)
		}
	}
	if os.Geteuid() != 0 {
		f.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll, _ := loadDetect(f, Detect{})
	prog := coll.Programs[ProgramName]
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	var rd wire.Reader
	var r, r2 telemetry.Report
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) > 1400 {
			return
		}
		ret, err := prog.Run(&ebpf.RunOptions{Data: reportFrame(p)})
		if err != nil {
			t.Fatal(err)
		}
		if ret != xdpDrop {
			return
		}
		k := lastParse(t, coll)
		rd.Reset(dec, wire.InputReport, p)
		if err := rd.Next(&r); err != nil {
			t.Fatalf("the kernel detected %x, which the decoder refuses: %v", p, err)
		}
		if ie := rd.InnerErr(); ie != nil {
			t.Fatalf("the kernel detected %x, whose inner packet the decoder refuses: %v", p, ie)
		}
		if err := rd.Next(&r2); err != wire.Done {
			t.Fatalf("the kernel detected %x, which holds more than one report (%v)", p, err)
		}
		if d := sameParse(&k, &r); d != "" {
			t.Fatalf("%x: the kernel read %s", p, d)
		}
	})
}
