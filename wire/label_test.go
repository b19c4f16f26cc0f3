package wire

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// Two items of an INT-label export, written by hand from the §3 table: switch 3 forwarded
// from port 1 to port 2, and switch 7 (the newer item, first) from port 4 to port 9.
const (
	labelItemA = "07 04 09 00 | 000102030405 | 0000deadbeef | 11223344 | 00 0a0b0c | 00001388 | 00 000064"
	labelItemB = "03 01 02 00 | 00000000ffff | ffffffffffff | ffffffff | 00 ffffff | 00000000 | 00 000001"
)

var (
	labelWantA = telemetry.LabelItem{SwitchID: 7, IngressPort: 4, EgressPort: 9, IngressTS: 0x000102030405,
		EgressTS: 0xdeadbeef, EnqTS: 0x11223344, EnqQDepth: 0x0a0b0c, DeqTimedelta: 5000, DeqQDepth: 100}
	labelWantB = telemetry.LabelItem{SwitchID: 3, IngressPort: 1, EgressPort: 2, IngressTS: 0xffff,
		EgressTS: 0xffffffffffff, EnqTS: 0xffffffff, EnqQDepth: 0xffffff, DeqTimedelta: 0, DeqQDepth: 1}
)

var labelVectors = []struct {
	name      string
	hex       string
	specific  bool
	want      []telemetry.LabelItem
	canonical bool
}{
	{"no items", "00 00", false, nil, true},
	{"one item", "00 01 | " + labelItemA, false, []telemetry.LabelItem{labelWantA}, true},
	{"two items specific", "80 02 | " + labelItemA + " | " + labelItemB, true, []telemetry.LabelItem{labelWantA, labelWantB}, true},
	{"padding ignored", "00 01 | " + labelItemB + " | 0000 0000", false, []telemetry.LabelItem{labelWantB}, false},
	{"reserved bits ignored", "7f 01 | 07 04 09 ff | 000102030405 | 0000deadbeef | 11223344 | ff 0a0b0c | 00001388 | 5a 000064",
		false, []telemetry.LabelItem{labelWantA}, false},
	{"32 items", "80 20" + strings.Repeat(" | "+labelItemB, 32), true, slices.Repeat([]telemetry.LabelItem{labelWantB}, 32), true},
}

func labelCodec(t testing.TB) (*Decoder, *Encoder) {
	return dtaCodec(t, 2, 4, 4)
}

func TestLabelVectors(t *testing.T) {
	dec, enc := labelCodec(t)
	for _, tc := range labelVectors {
		t.Run(tc.name, func(t *testing.T) {
			in := dtaHex(t, tc.hex)
			rs, errs := dec.DecodeAll(InputLabel, in)
			if len(errs) != 0 || len(rs) != 1 {
				t.Fatalf("got %d reports, errors %+v; want 1 report", len(rs), errs)
			}
			r := &rs[0]
			want := telemetry.Report{Format: telemetry.FormatLabel, LabelSpecific: tc.specific, NLabels: uint8(len(tc.want))}
			copy(want.Labels[:], tc.want)
			if !slices.Equal(r.LabelList(), tc.want) {
				t.Errorf("items:\n got %+v\nwant %+v", r.LabelList(), tc.want)
			}
			if !r.Equal(&want) {
				t.Errorf("report: got %+v", *r)
			}
			if !tc.canonical {
				return
			}
			out, err := enc.Append(nil, r)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("encode: %v\n got %x\nwant %x", err, out, in)
			}
		})
	}
}

func TestLabelErrors(t *testing.T) {
	const item = "int-label item"
	for _, tc := range []struct {
		name string
		hex  string
		want Error
	}{
		{"empty", "", Error{Reason: Truncated, Header: "int-label", Field: "type", Offset: 0}},
		{"no int_num", "80", Error{Reason: Truncated, Header: "int-label", Field: "int_num", Offset: 1}},
		{"int_num 33", "00 21" + strings.Repeat(labelItemB, 33), Error{Reason: TooMany, Header: "int-label", Field: "int_num", Offset: 1, Value: 33}},
		{"int_num 255", "80 ff", Error{Reason: TooMany, Header: "int-label", Field: "int_num", Offset: 1, Value: 255}},
		{"no items", "00 01", Error{Reason: Truncated, Header: item, Field: "switch_id", Offset: 2}},
		{"ends in reserved", "00 01 | 07 04 09", Error{Reason: Truncated, Header: item, Field: "reserved", Offset: 5}},
		{"ends in ingress_ts", "00 01 | 07 04 09 00 | 0001", Error{Reason: Truncated, Header: item, Field: "ingress_ts", Offset: 6}},
		{"ends before egress_ts", "00 01 | 07 04 09 00 | 000102030405", Error{Reason: Truncated, Header: item, Field: "egress_ts", Offset: 12}},
		{"second item ends in enq_qdepth", "00 02 | " + labelItemA + " | 07 04 09 00 | 000102030405 | 0000deadbeef | 11223344 | 00 0a",
			Error{Reason: Truncated, Header: item, Field: "enq_qdepth", Offset: 55}},
		{"last byte missing", "80 02 | " + labelItemA + " | " + labelItemB[:len(labelItemB)-2],
			Error{Reason: Truncated, Header: item, Field: "deq_qdepth", Offset: 63}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, _ := labelCodec(t)
			got := dtaSteps(t, dec, InputLabel, dtaHex(t, tc.hex))
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("got  %+v\nwant [%+v]", got, tc.want)
			}
		})
	}
}

func TestLabelEncodeErrors(t *testing.T) {
	_, enc := labelCodec(t)
	for _, tc := range []struct {
		name string
		mod  func(r *telemetry.Report)
	}{
		{"33 items", func(r *telemetry.Report) { r.NLabels = 33 }},
		{"255 items", func(r *telemetry.Report) { r.NLabels = 255 }},
		{"ingress ts over 48 bits", func(r *telemetry.Report) { r.Labels[0].IngressTS = 1 << 48 }},
		{"egress ts over 48 bits", func(r *telemetry.Report) { r.Labels[1].EgressTS = ^uint64(0) }},
		{"enqueue depth over 24 bits", func(r *telemetry.Report) { r.Labels[0].EnqQDepth = 1 << 24 }},
		{"dequeue depth over 24 bits", func(r *telemetry.Report) { r.Labels[1].DeqQDepth = 0xff000000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := telemetry.Report{Format: telemetry.FormatLabel, NLabels: 2}
			r.Labels[0], r.Labels[1] = labelWantA, labelWantB
			if _, err := enc.Append(nil, &r); err != nil {
				t.Fatalf("the valid report does not encode: %v", err)
			}
			tc.mod(&r)
			if out, err := enc.Append([]byte{1}, &r); err == nil || !bytes.Equal(out, []byte{1}) {
				t.Fatalf("got %x, %v; want an error and dst unchanged", out, err)
			}
		})
	}
	// Items past NLabels are not encoded, whatever they hold.
	r := telemetry.Report{Format: telemetry.FormatLabel, NLabels: 1}
	r.Labels[0], r.Labels[1] = labelWantA, telemetry.LabelItem{IngressTS: ^uint64(0)}
	if out, err := enc.Append(nil, &r); err != nil || !bytes.Equal(out, dtaHex(t, "00 01"+labelItemA)) {
		t.Fatalf("got %x, %v", out, err)
	}
}

func randLabel(g *rand.Rand) telemetry.Report {
	r := telemetry.Report{Format: telemetry.FormatLabel, LabelSpecific: g.IntN(2) == 0}
	r.NLabels = uint8(g.IntN(telemetry.MaxLabelItems + 1))
	for i := range r.LabelList() {
		r.Labels[i] = telemetry.LabelItem{
			SwitchID: uint8(g.Uint32()), IngressPort: uint8(g.Uint32()), EgressPort: uint8(g.Uint32()),
			IngressTS: g.Uint64() >> 16, EgressTS: g.Uint64() >> 16, EnqTS: g.Uint32(),
			EnqQDepth: g.Uint32() >> 8, DeqTimedelta: g.Uint32(), DeqQDepth: g.Uint32() >> 8,
		}
	}
	return r
}

// TestLabelRoundTrip: decode(encode(r)) equals r for random exports of 0 to 32 items.
func TestLabelRoundTrip(t *testing.T) {
	dec, enc := labelCodec(t)
	g := rand.New(rand.NewPCG(42, 99))
	var rd Reader
	var got telemetry.Report
	buf := make([]byte, 0, 2+32*telemetry.MaxLabelItems)
	sizes := map[uint8]bool{}
	for i := 0; i < 4000; i++ {
		want := randLabel(g)
		sizes[want.NLabels] = true
		b, err := enc.Append(buf[:0], &want)
		if err != nil {
			t.Fatalf("#%d: encode: %v", i, err)
		}
		if len(b) != 2+32*int(want.NLabels) {
			t.Fatalf("#%d: %d bytes for %d items", i, len(b), want.NLabels)
		}
		rd.Reset(dec, InputLabel, b)
		if err := rd.Next(&got); err != nil {
			t.Fatalf("#%d: decode %x: %v", i, b, err)
		}
		if !got.Equal(&want) {
			t.Fatalf("#%d: %x\n got %v %+v\nwant %v %+v", i, b, got.LabelSpecific, got.LabelList(), want.LabelSpecific, want.LabelList())
		}
		if err := rd.Next(&got); err != Done {
			t.Fatalf("#%d: a second report: %v", i, err)
		}
	}
	if len(sizes) != telemetry.MaxLabelItems+1 {
		t.Fatalf("only %d of the %d export sizes were generated", len(sizes), telemetry.MaxLabelItems+1)
	}
}

func FuzzLabel(f *testing.F) {
	for _, v := range labelVectors {
		f.Add(dtaHex(f, v.hex))
	}
	_, enc := labelCodec(f)
	g := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 16; i++ {
		r := randLabel(g)
		r.NLabels %= 6
		b, _ := enc.Append(nil, &r)
		f.Add(b)
	}
	dec, enc := labelCodec(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzReencode(t, dec, enc, InputLabel, b)
	})
}

// BenchmarkDecodeLabel5 is an export from a 5-hop fat-tree path (INT-label §2: "at most 5
// hops ... at most 160B").
func BenchmarkDecodeLabel5(b *testing.B) {
	dtaBench(b, InputLabel, dtaHex(b, "00 05"+strings.Repeat(labelItemA, 5)), 1)
}
