package fabric

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestClusterEndpoints runs the testbed in real time against three members' report and
// label sockets: every datagram a member gets decodes to reports that member owns
// (partition.ReportOwner), every member gets some, nothing sent is missing, and each member
// gets each switch's reports numbered 0..n-1 (TR v2.0 numbers per destination).
func TestClusterEndpoints(t *testing.T) {
	const n = 3
	var conns []net.PacketConn
	var labels, reports []string
	for i := range 2 * n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.UDPConn).SetReadBuffer(4 << 20)
		defer c.Close()
		conns = append(conns, c)
		if i < n {
			labels = append(labels, c.LocalAddr().String())
		} else {
			reports = append(reports, c.LocalAddr().String())
		}
	}
	received := receiveAll(conns...)
	f, err := New(Config{Topology: Testbed(DefaultLink), Routing: "ecmp",
		Traffic:    Traffic{Rate: 2e6, PacketSize: 1000, Pattern: "random", Poisson: true},
		Label:      LabelConfig{Algo: AlgoA, T: 50 * time.Millisecond},
		INTMDEvery: 1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := f.Run(ctx, Endpoints{Labels: labels, Reports: reports}); err != nil {
		t.Fatal(err)
	}
	got := received()
	sent, errs := f.UDPSent()

	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var rd wire.Reader
	var r telemetry.Report
	total := uint64(0)
	for i, pkts := range got {
		member, in := i%n, wire.InputLabel
		if i >= n {
			in = wire.InputReport
		}
		if len(pkts) == 0 {
			t.Errorf("member %d got no %v datagram", member, in)
		}
		seqs := map[uint32][]uint32{}
		for _, pkt := range pkts {
			rd.Reset(dec, in, pkt)
			for {
				err := rd.Next(&r)
				if errors.Is(err, wire.Done) {
					break
				}
				if err != nil {
					t.Fatalf("decode %x: %v", pkt, err)
				}
				if o := partition.ReportOwner(&r, n); o != member {
					t.Fatalf("%v datagram of member %d's owned by %d", in, member, o)
				}
				if in == wire.InputReport {
					seqs[r.NodeID] = append(seqs[r.NodeID], r.Seq)
				}
			}
			total++
		}
		memberSeqs(t, member, seqs)
	}
	if errs != 0 || total != sent || sent == 0 {
		t.Errorf("sent %d (%d errors), the members got %d", sent, errs, total)
	}
}
