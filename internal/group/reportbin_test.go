package group

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/pcap"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// benchFlows is the flows the inlet benchmarks spread their reports over.
const benchFlows = 4096

// benchReports are 5-hop TR v2.0 reports of benchFlows flows.
func benchReports() []telemetry.Report {
	rs := make([]telemetry.Report, benchFlows)
	for i := range rs {
		r := &rs[i]
		r.Format, r.NodeID, r.Seq, r.RecvTime = telemetry.FormatTR20, 7, uint32(i), 1e18+int64(i)
		r.Has |= telemetry.HasFlow
		r.Flow = telemetry.FlowKey{Src: netip.MustParseAddr("10.0.0.1").As16(), Dst: netip.MustParseAddr("10.0.0.2").As16(),
			SrcPort: uint16(1000 + i), DstPort: 80, Proto: 6}
		r.NHops = 5
		for h := range 5 {
			r.Hops[h] = telemetry.Hop{Fields: telemetry.FNodeID | telemetry.FHopLatency | telemetry.FQueueOccupancy | telemetry.FTxUtil,
				NodeID: uint32(h + 1), HopLatency: 300 + uint32(i), QueueOccupancy: 20, TxUtil: 30}
		}
	}
	return rs
}

// benchGenFlows is BenchmarkInletGen's flows: the 4,096, each in two reports, so
// that no partition's frame holds one report twice.
const benchGenFlows = 4096

// genStream is intake gen's default stream over benchGenFlows flows, two reports a flow,
// decoded as a listener decodes it.
func genStream(tb testing.TB) []telemetry.Report {
	rs, err := gen.DefaultDecoded(benchGenFlows, 2*benchGenFlows)
	if err != nil {
		tb.Fatal(err)
	}
	if len(rs) != 2*benchGenFlows {
		tb.Fatalf("%d reports", len(rs))
	}
	for _, r := range rs {
		if r.NHops != 5 {
			tb.Fatalf("a report of %d hops", r.NHops)
		}
	}
	return rs
}

// meaningful is r with what its counts leave out cleared (hops past NHops, labels past
// NLabels, DTA key and data past their lengths), for comparing reports.
func meaningful(r telemetry.Report) telemetry.Report {
	clear(r.Hops[r.NHops:])
	clear(r.Labels[r.NLabels:])
	clear(r.DTA.Key[min(int(r.DTA.KeyLen), len(r.DTA.Key)):])
	clear(r.DTA.Data[min(int(r.DTA.DataLen), len(r.DTA.Data)):])
	return r
}

// roundTrip encodes r and decodes it into a report that held another one before.
func roundTrip(t *testing.T, r *telemetry.Report) telemetry.Report {
	t.Helper()
	b := appendReport(nil, r)
	got := fill(7) // a used report: unmarshalReport must overwrite all of it
	if err := unmarshalReport(&got, b); err != nil {
		t.Fatalf("%v (%d bytes)", err, len(b))
	}
	return got
}

// fill is a report with every field set (to values derived from seed, within each field's
// range), every hop and INT-label item used, the DTA key and data full.
func fill(seed uint64) telemetry.Report {
	var r telemetry.Report
	n := seed
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n = n*6364136223846793005 + 1442695040888963407
			v.SetUint(n>>(64-v.Type().Bits()) | 1)
		case reflect.Int64:
			n = n*6364136223846793005 + 1442695040888963407
			v.SetInt(int64(n))
		default:
			panic("fill: " + v.Kind().String())
		}
	}
	walk(reflect.ValueOf(&r).Elem())
	r.NHops, r.NLabels = telemetry.MaxHops, telemetry.MaxLabelItems
	r.DTA.KeyLen, r.DTA.DataLen = telemetry.MaxDTAKey, telemetry.MaxDTAData
	return r
}

// TestReportBinary: every field of a report survives its binary form, with every hop,
// label item and DTA byte in use; so does an empty report; a damaged form is refused.
func TestReportBinary(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		r := fill(seed)
		if got := roundTrip(t, &r); !reflect.DeepEqual(got, r) {
			t.Errorf("seed %d: the round trip changed the report:\n got %+v\nwant %+v", seed, got, r)
		}
	}
	var empty telemetry.Report
	if got := roundTrip(t, &empty); !reflect.DeepEqual(meaningful(got), empty) {
		t.Errorf("empty report: %+v", got)
	}
	r := fill(1)
	b := appendReport(nil, &r)
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{b[:len(b)-1], "truncated or out of range"},
		{append(append([]byte(nil), b...), 9), "1 bytes after it"},
		{append([]byte{3}, b[1:]...), "version 3, this intake reads 1 and 2"},
		{nil, "version -1"},
	} {
		var got telemetry.Report
		if err := unmarshalReport(&got, c.b); !errors.Is(err, errReport) || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestReportBinaryPredicted: the predicted form's timestamps come back exactly whatever
// they are (absent, one of the two, out of order, at the ends of the range, with a latency
// that does not match them), and take what the prediction missed: nothing for a hop
// without timestamps, nothing for an egress that is ingress plus hop latency, a few bytes
// for a hop a few microseconds after the previous one.
func TestReportBinaryPredicted(t *testing.T) {
	const max = ^uint64(0)
	cases := []struct {
		in, eg uint64
		lat    uint32
	}{
		{0, 0, 0}, {0, 0, 900}, {0, 5, 0}, {0, max, 7}, {5, 0, 0}, {max, 0, 3}, {max, max, 0}, {max, 1, 2},
		{1 << 63, 1<<63 - 1, 1}, {1700000000000015682, 1700000000000016860, 1178}, {1700000000000015682, 1700000000000015000, 1178},
		{1, max, ^uint32(0)}, {max - 3, 2, 6},
	}
	var r telemetry.Report
	r.Format, r.NHops = telemetry.FormatTR20, 1
	for _, prev := range []uint64{0, 1, max, 1700000000000013426} {
		for _, c := range cases {
			r.NHops = 2
			r.Hops[0] = telemetry.Hop{Fields: telemetry.FIngressTS, IngressTS: prev}
			r.Hops[1] = telemetry.Hop{Fields: telemetry.FIngressTS | telemetry.FEgressTS | telemetry.FHopLatency, IngressTS: c.in, EgressTS: c.eg, HopLatency: c.lat}
			if got := roundTrip(t, &r); !reflect.DeepEqual(meaningful(got), meaningful(r)) {
				t.Errorf("previous ingress %d, hop %+v: got %+v", prev, r.Hops[1], got.Hops[1])
			}
		}
	}
	// The sizes: a hop of 4 fields without timestamps is its 4-byte header and its values, as
	// in the coded form; gen's hops (node, ports, latency, queue, timestamps, L2 ports, 11
	// fields) take 2 bytes of ingress difference and none of egress after the first.
	b := make([]byte, hopRoom)
	h := benchReports()[0].Hops[0]
	if n := putHop(b, 0, &h, 0); n != 4+4*2 {
		t.Errorf("a hop without timestamps: %d bytes", n)
	}
	gs := genStream(t)
	for _, g := range gs[:64] {
		for i := 1; i < int(g.NHops); i++ {
			n := putHop(b, 0, &g.Hops[i], g.Hops[i-1].IngressTS)
			if w := b[4]; w&15 > 3 || w>>4 != 0 || n > 5+2+8*2+3 {
				t.Fatalf("hop %d of %+v: %d bytes, widths %#x", i, g.Hops[i], n, w)
			}
		}
	}
}

// TestReportBinaryCaptures: every report of the golden captures and of the third-party
// captures, decoded as a listener decodes it, comes back the same from its binary form.
func TestReportBinaryCaptures(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/golden/*.pcap")
	more, _ := filepath.Glob("../../../shared/captures/*.pcap")
	paths = append(paths, more...)
	if len(paths) < 5 {
		t.Fatalf("captures: %v", paths)
	}
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	n, captured, size := 0, 0, 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := pcap.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			pkt, err := rd.Next()
			if err != nil {
				break
			}
			dg, ok := pcap.UDP(pkt.Data, pkt.Link)
			if !ok {
				continue
			}
			for _, in := range []wire.Input{wire.InputReport, wire.InputINTMD, wire.InputDTA, wire.InputLabel} {
				rs, _ := dec.DecodeAll(in, dg.Payload)
				for i := range rs {
					rs[i].RecvTime = pkt.Time.UnixNano()
					want := meaningful(rs[i])
					got := roundTrip(t, &rs[i])
					if !reflect.DeepEqual(meaningful(got), want) {
						t.Fatalf("%s: a report changed:\n got %+v\nwant %+v", filepath.Base(p), got, want)
					}
					n++
					captured++
					size += len(appendReport(nil, &rs[i]))
				}
			}
		}
		f.Close()
	}
	// And the generator's every format, decoded as a listener decodes them.
	for _, format := range gen.Formats {
		for _, hops := range []int{1, 5, 8} {
			c := gen.DefaultConfig()
			c.Format, c.Hops, c.Flows = format, hops, 16
			g, err := gen.New(c)
			if err != nil {
				t.Fatal(err)
			}
			gd, _ := wire.NewDecoder(g.WireConfig())
			err = g.Walk(64, func(_ uint64, b []byte, _ []telemetry.Report) error {
				rs, _ := gd.DecodeAll(g.Input(), b)
				for i := range rs {
					want := meaningful(rs[i])
					if got := roundTrip(t, &rs[i]); !reflect.DeepEqual(meaningful(got), want) {
						t.Fatalf("%s, %d hops: a report changed:\n got %+v\nwant %+v", format, hops, got, want)
					}
					n++
				}
				return nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if n < 900 || captured < 25 {
		t.Fatalf("only %d reports, %d of them from the captures", n, captured)
	}
	t.Logf("%d reports; those of the captures %d bytes each on average", n, size/captured)
}

// FuzzReportBinary: a report's binary form comes from the brokers: reading any bytes never
// panics, and what is read encodes to a form that reads back the same.
func FuzzReportBinary(f *testing.F) {
	for _, seed := range []uint64{1, 5} {
		r := fill(seed)
		f.Add(appendReport(nil, &r))
	}
	for _, r := range benchReports()[:4] {
		f.Add(appendReport(nil, &r))
	}
	for _, r := range genStream(f)[:4] {
		f.Add(appendReport(nil, &r))
	}
	for _, name := range []string{"fill1", "bench0"} { // the earlier forms
		for _, dir := range []string{"testdata/reportbin-v1/", "testdata/reportbin-v2/"} {
			if b, err := os.ReadFile(dir + name + ".bin"); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r telemetry.Report
		if unmarshalReport(&r, b) != nil {
			return
		}
		b2 := appendReport(nil, &r)
		var r2 telemetry.Report
		if err := unmarshalReport(&r2, b2); err != nil {
			t.Fatalf("re-encoded form refused: %v", err)
		}
		if !reflect.DeepEqual(meaningful(r2), meaningful(r)) {
			t.Fatalf("round trip changed the report")
		}
	})
}

// BenchmarkReportAppend encodes one 5-hop TR v2.0 report over and over: the inlet encodes
// the report it has just decoded, in cache. BenchmarkReportAppendGen does the same with one
// of BenchmarkInletGen's reports (8 fields a hop, with timestamps).
func BenchmarkReportAppend(b *testing.B) {
	rs := benchReports()
	benchAppend(b, &rs[0])
}

func BenchmarkReportAppendGen(b *testing.B) {
	r := genStream(b)[7]
	benchAppend(b, &r)
}

func benchAppend(b *testing.B, r *telemetry.Report) {
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf = appendReport(buf[:0], r)
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

func BenchmarkReportUnmarshal(b *testing.B) {
	rs := benchReports()
	enc := appendReport(nil, &rs[0])
	var r telemetry.Report
	b.ReportAllocs()
	for range b.N {
		if err := unmarshalReport(&r, enc); err != nil {
			b.Fatal(err)
		}
	}
}
