package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// dtaHex decodes hex written with spaces and '|' between fields.
func dtaHex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// dtaConfig is the default config with the given DTA layout.
func dtaConfig(hl, k, d int) Config {
	c := DefaultConfig()
	c.DTA = DTAConfig{HeaderLen: hl, KeyLen: k, DataLen: d}
	return c
}

func dtaCodec(t testing.TB, hl, k, d int) (*Decoder, *Encoder) {
	t.Helper()
	cfg := dtaConfig(hl, k, d)
	dec, err := NewDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dec, enc
}

// seqBytes returns n bytes counting up from first, for keys and values that show their
// byte order.
func seqBytes(first byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}

// kv builds a DTA with Key and Data set from byte strings (tails zero).
func kv(d telemetry.DTA, key, data []byte) telemetry.DTA {
	copy(d.Key[:], key)
	copy(d.Data[:], data)
	return d
}

// The DTA vectors are written by hand from the byte tables in docs/wire-dta-label.md.
// canonical vectors are what the encoder writes for the decoded reports, byte for byte.
var dtaVectors = []struct {
	name      string
	hl, k, d  int
	hex       string
	want      []telemetry.DTA
	canonical bool
}{
	{"2-byte key-write immediate", 2, 4, 4, "01 80 | 03 | deadbeef | 11223344",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Immediate: true, Redundancy: 3, KeyLen: 4, DataLen: 4},
			[]byte{0xde, 0xad, 0xbe, 0xef}, []byte{0x11, 0x22, 0x33, 0x44})}, true},
	{"2-byte append", 2, 4, 4, "02 00 | 00000007 | cafebabe",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 7, DataLen: 4},
			nil, []byte{0xca, 0xfe, 0xba, 0xbe})}, true},
	{"2-byte key-increment", 2, 4, 4, "03 00 | 02 | 0000007b | 0102030405060708",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyIncrement, HeaderLen: 2, Redundancy: 2, KeyLen: 4, Counter: 0x0102030405060708},
			[]byte{0, 0, 0, 0x7b}, nil)}, true},
	{"2-byte postcard", 2, 4, 4, "04 00 | 0a000001 | 05 | 00000abc",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 2, KeyLen: 4, Hop: 5, DataLen: 4},
			[]byte{10, 0, 0, 1}, []byte{0, 0, 0x0a, 0xbc})}, true},
	{"2-byte reserved bits ignored", 2, 4, 4, "01 7e | 01 | 00000001 | 00000002",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 1, KeyLen: 4, DataLen: 4},
			[]byte{0, 0, 0, 1}, []byte{0, 0, 0, 2})}, false},
	{"2-byte padding ignored", 2, 4, 4, "02 80 | 00000001 | 00000002 | 0000 0000 0000",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, Immediate: true, ListID: 1, DataLen: 4},
			nil, []byte{0, 0, 0, 2})}, false},
	{"3-byte key-write seq immediate retransmit", 3, 4, 4, "01 2a c0 | 01 | 00000001 | 99f8b879",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 3, Seq: 0x2a, Immediate: true, Retransmit: true, Redundancy: 1, KeyLen: 4, DataLen: 4},
			[]byte{0, 0, 0, 1}, []byte{0x99, 0xf8, 0xb8, 0x79})}, true},
	{"3-byte append retransmit", 3, 4, 4, "02 ff 40 | 80000000 | 00000001",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 3, Seq: 0xff, Retransmit: true, ListID: 0x80000000, DataLen: 4},
			nil, []byte{0, 0, 0, 1})}, true},
	{"3-byte key-increment", 3, 4, 4, "03 07 00 | 04 | deadbeef | ffffffffffffffff",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyIncrement, HeaderLen: 3, Seq: 7, Redundancy: 4, KeyLen: 4, Counter: ^uint64(0)},
			[]byte{0xde, 0xad, 0xbe, 0xef}, nil)}, true},
	{"3-byte postcard", 3, 4, 4, "04 01 80 | 0a000002 | 01 | 12345678",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 3, Seq: 1, Immediate: true, KeyLen: 4, Hop: 1, DataLen: 4},
			[]byte{10, 0, 0, 2}, []byte{0x12, 0x34, 0x56, 0x78})}, true},
	{"3-byte reserved bits ignored", 3, 4, 4, "04 00 3e | 0a000002 | 02 | 00000000",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 3, KeyLen: 4, Hop: 2, DataLen: 4},
			[]byte{10, 0, 0, 2}, nil)}, false},
	{"2-byte append batch of 3", 2, 4, 4, "02 01 03 | 00000001 0000000a | 00000001 0000000b | 00000002 0000000c",
		[]telemetry.DTA{
			kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 1, DataLen: 4}, nil, []byte{0, 0, 0, 0x0a}),
			kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 1, DataLen: 4}, nil, []byte{0, 0, 0, 0x0b}),
			kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 2, DataLen: 4}, nil, []byte{0, 0, 0, 0x0c}),
		}, true},
	{"3-byte key-write batch of 2", 3, 4, 4, "01 09 81 02 | 01 00000001 00000011 | 04 00000002 00000022",
		[]telemetry.DTA{
			kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 3, Seq: 9, Immediate: true, Redundancy: 1, KeyLen: 4, DataLen: 4}, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0x11}),
			kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 3, Seq: 9, Immediate: true, Redundancy: 4, KeyLen: 4, DataLen: 4}, []byte{0, 0, 0, 2}, []byte{0, 0, 0, 0x22}),
		}, true},
	{"batch of 1 with padding", 2, 4, 4, "04 01 01 | 00000009 | 03 | 00000001 | 00",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 2, KeyLen: 4, Hop: 3, DataLen: 4}, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 1})}, false},
	// Non-default widths: 13-byte keys (a 5-tuple, DTA §4 Table 2 "13B flows") and 12-byte
	// values (the prototype's 96-bit build).
	{"13/12 key-write", 3, 13, 12, "01 05 00 | 02 | 000102030405060708090a0b0c | a0a1a2a3a4a5a6a7a8a9aaab",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 3, Seq: 5, Redundancy: 2, KeyLen: 13, DataLen: 12}, seqBytes(0, 13), seqBytes(0xa0, 12))}, true},
	{"13/12 key-increment", 2, 13, 12, "03 00 | 01 | 000102030405060708090a0b0c | 0000000000000064",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyIncrement, HeaderLen: 2, Redundancy: 1, KeyLen: 13, Counter: 100}, seqBytes(0, 13), nil)}, true},
	{"13/12 append batch", 2, 13, 12, "02 01 02 | 00000003 a0a1a2a3a4a5a6a7a8a9aaab | 00000004 b0b1b2b3b4b5b6b7b8b9babb",
		[]telemetry.DTA{
			kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 3, DataLen: 12}, nil, seqBytes(0xa0, 12)),
			kv(telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 4, DataLen: 12}, nil, seqBytes(0xb0, 12)),
		}, true},
	{"13/12 postcard", 3, 13, 12, "04 00 80 | 101112131415161718191a1b1c | 04 | a0a1a2a3a4a5a6a7a8a9aaab",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 3, Immediate: true, KeyLen: 13, Hop: 4, DataLen: 12}, seqBytes(0x10, 13), seqBytes(0xa0, 12))}, true},
	{"64/32 key-write", 2, 64, 32, "01 00 | ff | " + hex.EncodeToString(seqBytes(0x40, 64)) + hex.EncodeToString(seqBytes(0x80, 32)),
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAKeyWrite, HeaderLen: 2, Redundancy: 255, KeyLen: 64, DataLen: 32}, seqBytes(0x40, 64), seqBytes(0x80, 32))}, true},
	{"1/1 postcard", 2, 1, 1, "04 00 | 07 | ff | 08",
		[]telemetry.DTA{kv(telemetry.DTA{Op: telemetry.DTAPostcard, HeaderLen: 2, KeyLen: 1, Hop: 255, DataLen: 1}, []byte{7}, []byte{8})}, true},
}

func TestDTAVectors(t *testing.T) {
	for _, tc := range dtaVectors {
		t.Run(tc.name, func(t *testing.T) {
			dec, enc := dtaCodec(t, tc.hl, tc.k, tc.d)
			in := dtaHex(t, tc.hex)
			rs, errs := dec.DecodeAll(InputDTA, in)
			if len(errs) != 0 {
				t.Fatalf("errors: %+v", errs)
			}
			if len(rs) != len(tc.want) {
				t.Fatalf("got %d reports, want %d", len(rs), len(tc.want))
			}
			for i := range rs {
				want := telemetry.Report{Format: telemetry.FormatDTA, DTA: tc.want[i]}
				if rs[i].DTA != tc.want[i] {
					t.Errorf("report %d:\n got %+v\nwant %+v", i, rs[i].DTA, tc.want[i])
				}
				if !rs[i].Equal(&want) {
					t.Errorf("report %d: fields outside DTA set: %+v", i, rs[i])
				}
			}
			if !tc.canonical {
				return
			}
			out, err := enc.AppendBatch(nil, rs)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("encode:\n got %x\nwant %x", out, in)
			}
		})
	}
}

// dtaSteps runs a Reader over b and returns one Error per call to Next until Done, the
// zero Error standing for a decoded report.
func dtaSteps(t *testing.T, d *Decoder, in Input, b []byte) []Error {
	t.Helper()
	var rd Reader
	var r telemetry.Report
	var out []Error
	rd.Reset(d, in, b)
	for i := 0; i < 1000; i++ {
		err := rd.Next(&r)
		switch {
		case err == Done:
			return out
		case err == nil:
			out = append(out, Error{})
		default:
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			out = append(out, *we)
		}
	}
	t.Fatal("reader never returned Done")
	return nil
}

var dtaReport = Error{} // a decoded report, in dtaSteps' results

func TestDTAErrors(t *testing.T) {
	const (
		kw = "dta key-write"
		ki = "dta key-increment"
		ap = "dta append"
		pc = "dta postcard"
	)
	for _, tc := range []struct {
		name     string
		hl, k, d int
		hex      string
		want     []Error
	}{
		{"empty", 2, 4, 4, "", []Error{{Reason: Truncated, Header: "dta", Field: "opcode", Offset: 0}}},
		{"opcode 0", 2, 4, 4, "00 00 01 00000001 00000001", []Error{{Reason: BadValue, Header: "dta", Field: "opcode", Offset: 0, Value: 0}}},
		{"opcode 5", 2, 4, 4, "05 00 01 00000001 00000001", []Error{{Reason: BadValue, Header: "dta", Field: "opcode", Offset: 0, Value: 5}}},
		{"opcode ff alone", 3, 4, 4, "ff", []Error{{Reason: BadValue, Header: "dta", Field: "opcode", Offset: 0, Value: 255}}},
		{"2-byte no flags", 2, 4, 4, "01", []Error{{Reason: Truncated, Header: "dta", Field: "flags", Offset: 1}}},
		{"3-byte no seq", 3, 4, 4, "01", []Error{{Reason: Truncated, Header: "dta", Field: "seq", Offset: 1}}},
		{"3-byte no flags", 3, 4, 4, "01 05", []Error{{Reason: Truncated, Header: "dta", Field: "flags", Offset: 2}}},
		{"2-byte batch no count", 2, 4, 4, "02 01", []Error{{Reason: Truncated, Header: "dta", Field: "count", Offset: 2}}},
		{"3-byte batch no count", 3, 4, 4, "02 00 81", []Error{{Reason: Truncated, Header: "dta", Field: "count", Offset: 3}}},
		{"batch count 0", 2, 4, 4, "02 01 00 | 00000001 00000002 | 00", []Error{{Reason: BadLength, Header: "dta", Field: "count", Offset: 2, Value: 0}}},
		// Exactly an Append in the 3-byte layout (sequence number 1, flags 0): the count 0 it
		// shows under the 2-byte layout is that layout's deviation, named.
		{"3-byte append under header_len 2", 2, 4, 4, "02 01 00 | 00000001 00000002", []Error{{Reason: BadLength, Header: "dta", Field: "length", Offset: 10, Value: 11, Setting: "dta.header_len: 3"}}},
		{"3-byte batch count 0", 3, 4, 4, "02 00 01 00", []Error{{Reason: BadLength, Header: "dta", Field: "count", Offset: 3, Value: 0}}},
		{"no sub-header", 2, 4, 4, "01 00", []Error{{Reason: Truncated, Header: kw, Field: "redundancy", Offset: 2}}},
		{"key-write short key", 2, 4, 4, "01 00 | 01 | dead", []Error{{Reason: Truncated, Header: kw, Field: "key", Offset: 3}}},
		{"key-write short data", 2, 4, 4, "01 00 | 01 | deadbeef | 112233", []Error{{Reason: Truncated, Header: kw, Field: "data", Offset: 7}}},
		{"3-byte key-write short data", 3, 4, 4, "01 00 00 | 01 | deadbeef", []Error{{Reason: Truncated, Header: kw, Field: "data", Offset: 8}}},
		{"key-increment short counter", 2, 4, 4, "03 00 | 01 | 00000001 | 00000000000000", []Error{{Reason: Truncated, Header: ki, Field: "counter", Offset: 7}}},
		{"append short list id", 2, 4, 4, "02 00 | 000000", []Error{{Reason: Truncated, Header: ap, Field: "list_id", Offset: 2}}},
		{"append short data", 3, 4, 4, "02 00 00 | 00000001 | 11", []Error{{Reason: Truncated, Header: ap, Field: "data", Offset: 7}}},
		{"postcard short key", 2, 4, 4, "04 00 | 0a", []Error{{Reason: Truncated, Header: pc, Field: "key", Offset: 2}}},
		{"postcard no hop", 2, 4, 4, "04 00 | 0a000001", []Error{{Reason: Truncated, Header: pc, Field: "hop", Offset: 6}}},
		{"postcard short data", 2, 4, 4, "04 00 | 0a000001 | 01 | 000000", []Error{{Reason: Truncated, Header: pc, Field: "data", Offset: 7}}},
		{"13-byte key short", 3, 13, 12, "01 00 00 | 01 | 000102030405060708090a0b", []Error{{Reason: Truncated, Header: kw, Field: "key", Offset: 4}}},
		{"12-byte data short", 2, 13, 12, "04 00 | 000102030405060708090a0b0c | 01 | a0a1a2a3a4a5a6a7a8a9aa", []Error{{Reason: Truncated, Header: pc, Field: "data", Offset: 16}}},
		{"key-write redundancy 0", 2, 4, 4, "01 00 | 00 | deadbeef | 11223344", []Error{{Reason: BadValue, Header: kw, Field: "redundancy", Offset: 2, Value: 0}}},
		{"key-increment redundancy 0", 3, 4, 4, "03 01 00 | 00 | deadbeef | 0000000000000001", []Error{{Reason: BadValue, Header: ki, Field: "redundancy", Offset: 3, Value: 0}}},
		{"postcard hop 0", 2, 4, 4, "04 00 | 0a000001 | 00 | 00000001", []Error{{Reason: BadValue, Header: pc, Field: "hop", Offset: 6, Value: 0}}},
		{"13-byte postcard hop 0", 3, 13, 12, "04 00 00 | 000102030405060708090a0b0c | 00 | a0a1a2a3a4a5a6a7a8a9aaab", []Error{{Reason: BadValue, Header: pc, Field: "hop", Offset: 16, Value: 0}}},
		// Truncation is checked before values: the redundancy 0 here is never looked at.
		{"truncated with redundancy 0", 2, 4, 4, "01 00 | 00 | dead", []Error{{Reason: Truncated, Header: kw, Field: "key", Offset: 3}}},
		{"batch goes on after a bad value", 2, 4, 4, "01 01 03 | 01 00000001 00000001 | 00 00000002 00000002 | 02 00000003 00000003",
			[]Error{dtaReport, {Reason: BadValue, Header: kw, Field: "redundancy", Offset: 12, Value: 0}, dtaReport}},
		{"batch with bad first and last", 3, 4, 4, "04 00 01 03 | 00000001 00 00000001 | 00000001 02 00000001 | 00000001 00 00000001",
			[]Error{{Reason: BadValue, Header: pc, Field: "hop", Offset: 8, Value: 0}, dtaReport, {Reason: BadValue, Header: pc, Field: "hop", Offset: 26, Value: 0}}},
		{"batch stops at truncation", 2, 4, 4, "02 01 05 | 00000001 0000000a | 00000001 0000000b | 00000002 00",
			[]Error{dtaReport, dtaReport, {Reason: Truncated, Header: ap, Field: "data", Offset: 23}}},
		{"batch count past the end", 2, 4, 4, "02 01 ff | 00000001 0000000a",
			[]Error{dtaReport, {Reason: Truncated, Header: ap, Field: "list_id", Offset: 11}}},
		{"bad value then truncation", 3, 4, 4, "03 00 01 02 | 00 00000001 0000000000000001 | 01 0000",
			[]Error{{Reason: BadValue, Header: ki, Field: "redundancy", Offset: 4, Value: 0}, {Reason: Truncated, Header: ki, Field: "key", Offset: 18}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, _ := dtaCodec(t, tc.hl, tc.k, tc.d)
			b := dtaHex(t, tc.hex)
			got := dtaSteps(t, dec, InputDTA, b)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			for _, e := range got {
				if e != dtaReport && (e.Offset < 0 || e.Offset > len(b)) {
					t.Errorf("offset %d outside %d bytes", e.Offset, len(b))
				}
			}
		})
	}
}

// A Report reused across primitives of different widths and across errors must come out
// exactly as a fresh one would: DTA.Reset clears Key and Data only up to the lengths the
// decoder set, so a decoder that copied bytes without setting them would leave dirt.
func TestDTAReportReuse(t *testing.T) {
	dec, _ := dtaCodec(t, 2, 13, 12)
	inputs := []string{
		"01 00 | 01 | ffffffffffffffffffffffffff | ffffffffffffffffffffffff", // key-write, all ones
		"01 00 | 00 | ffffffffffffffffffffffffff | ffffffffffffffffffffffff", // redundancy 0
		"04 00 | ffffffffffffffffffffffffff | 00 | ffffffffffffffffffffffff", // hop 0
		"03 00 | 01 | ffffffffffffffffffffffffff | ffffffffffffffff",         // key-increment
		"02 00 | 00000001 | 0102",                     // truncated append
		"02 00 | 00000001 | 000000000000000000000001", // append
	}
	var rd Reader
	var r telemetry.Report
	for _, s := range inputs[:len(inputs)-1] {
		rd.Reset(dec, InputDTA, dtaHex(t, s))
		for rd.Next(&r) != Done {
		}
	}
	rd.Reset(dec, InputDTA, dtaHex(t, inputs[len(inputs)-1]))
	if err := rd.Next(&r); err != nil {
		t.Fatal(err)
	}
	want := telemetry.DTA{Op: telemetry.DTAAppend, HeaderLen: 2, ListID: 1, DataLen: 12}
	want.Data[11] = 1
	if r.DTA != want {
		t.Fatalf("reused report:\n got %+v\nwant %+v", r.DTA, want)
	}
}

func TestDTAEncodeErrors(t *testing.T) {
	_, enc := dtaCodec(t, 2, 4, 4)
	base := func(op telemetry.DTAOp) telemetry.Report {
		r := telemetry.Report{Format: telemetry.FormatDTA}
		r.DTA = telemetry.DTA{Op: op, KeyLen: 4, DataLen: 4}
		switch op {
		case telemetry.DTAKeyWrite:
			r.DTA.Redundancy = 1
		case telemetry.DTAKeyIncrement:
			r.DTA.Redundancy, r.DTA.DataLen = 1, 0
		case telemetry.DTAAppend:
			r.DTA.KeyLen = 0
		case telemetry.DTAPostcard:
			r.DTA.Hop = 1
		}
		return r
	}
	for _, op := range []telemetry.DTAOp{telemetry.DTAKeyWrite, telemetry.DTAAppend, telemetry.DTAKeyIncrement, telemetry.DTAPostcard} {
		r := base(op)
		if _, err := enc.Append(nil, &r); err != nil {
			t.Fatalf("the valid %v base report does not encode: %v", op, err)
		}
	}
	mod := func(op telemetry.DTAOp, f func(d *telemetry.DTA)) []telemetry.Report {
		r := base(op)
		f(&r.DTA)
		return []telemetry.Report{r}
	}
	many := func(n int) []telemetry.Report {
		rs := make([]telemetry.Report, n)
		for i := range rs {
			rs[i] = base(telemetry.DTAAppend)
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		rs   []telemetry.Report
	}{
		{"empty", nil},
		{"256 reports", many(256)},
		{"header length 4", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.HeaderLen = 4 })},
		{"opcode 0", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Op = 0 })},
		{"opcode 5", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Op = 5 })},
		{"seq in 2-byte layout", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.HeaderLen, d.Seq = 2, 1 })},
		{"retransmit in 2-byte layout", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Retransmit = true })},
		{"key width", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.KeyLen = 5 })},
		{"data width", mod(telemetry.DTAPostcard, func(d *telemetry.DTA) { d.DataLen = 3 })},
		{"append with a key", mod(telemetry.DTAAppend, func(d *telemetry.DTA) { d.KeyLen = 4 })},
		{"key-increment with data", mod(telemetry.DTAKeyIncrement, func(d *telemetry.DTA) { d.DataLen = 4 })},
		{"key-write redundancy 0", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Redundancy = 0 })},
		{"key-increment redundancy 0", mod(telemetry.DTAKeyIncrement, func(d *telemetry.DTA) { d.Redundancy = 0 })},
		{"postcard hop 0", mod(telemetry.DTAPostcard, func(d *telemetry.DTA) { d.Hop = 0 })},
		{"append with redundancy", mod(telemetry.DTAAppend, func(d *telemetry.DTA) { d.Redundancy = 1 })},
		{"key-write with counter", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Counter = 1 })},
		{"postcard with list id", mod(telemetry.DTAPostcard, func(d *telemetry.DTA) { d.ListID = 1 })},
		{"key-write with hop", mod(telemetry.DTAKeyWrite, func(d *telemetry.DTA) { d.Hop = 1 })},
		{"mixed primitives", []telemetry.Report{base(telemetry.DTAAppend), base(telemetry.DTAAppend), base(telemetry.DTAPostcard)}},
		{"other format in batch", func() []telemetry.Report {
			rs := many(2)
			rs[1].Format = telemetry.FormatLabel
			return rs
		}()},
		{"bad entry after good ones", func() []telemetry.Report {
			rs := many(3)
			rs[2].DTA.ListID, rs[2].DTA.Hop = 9, 1
			return rs
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte{0xaa, 0xbb}
			out, err := enc.AppendBatch(prefix, tc.rs)
			if err == nil {
				t.Fatalf("encoded %x, want an error", out)
			}
			if !bytes.Equal(out, prefix) {
				t.Fatalf("dst after error is %x, want it unchanged", out)
			}
		})
	}
	// 255 is the largest batch; HeaderLen 0 takes the encoder's layout.
	if out, err := enc.AppendBatch(nil, many(255)); err != nil || len(out) != 3+255*8 || out[2] != 255 {
		t.Fatalf("batch of 255: %d bytes, %v", len(out), err)
	}
	_, enc3 := dtaCodec(t, 3, 4, 4)
	r := base(telemetry.DTAAppend)
	r.DTA.Seq = 4
	if out, err := enc3.Append(nil, &r); err != nil || !bytes.Equal(out, dtaHex(t, "02 04 00 00000000 00000000")) {
		t.Fatalf("header length 0 with a 3-byte config: %x, %v", out, err)
	}
	r.DTA.HeaderLen = 2
	r.DTA.Seq = 0
	if out, err := enc3.Append(nil, &r); err != nil || !bytes.Equal(out, dtaHex(t, "02 00 00000000 00000000")) {
		t.Fatalf("header length 2 with a 3-byte config: %x, %v", out, err)
	}
}

// dtaGen builds random DTA reports that the decoder can produce under cfg.
type dtaGen struct {
	r   *rand.Rand
	cfg DTAConfig
}

var dtaOps = [...]telemetry.DTAOp{telemetry.DTAKeyWrite, telemetry.DTAAppend, telemetry.DTAKeyIncrement, telemetry.DTAPostcard}

// base fills the base-header fields.
func (g *dtaGen) base(d *telemetry.DTA, op telemetry.DTAOp) {
	d.Op, d.HeaderLen, d.Immediate = op, uint8(g.cfg.HeaderLen), g.r.IntN(2) == 0
	if g.cfg.HeaderLen == 3 {
		d.Seq, d.Retransmit = uint8(g.r.Uint32()), g.r.IntN(2) == 0
	}
}

// entry fills a report's sub-header fields.
func (g *dtaGen) entry(r *telemetry.Report, op telemetry.DTAOp) {
	r.Format = telemetry.FormatDTA
	d := &r.DTA
	d.Op = op
	fill := func(b []byte) {
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
	}
	k, dl := g.cfg.KeyLen, g.cfg.DataLen
	switch op {
	case telemetry.DTAKeyWrite:
		d.Redundancy, d.KeyLen, d.DataLen = uint8(1+g.r.IntN(255)), uint8(k), uint8(dl)
		fill(d.Key[:k])
		fill(d.Data[:dl])
	case telemetry.DTAKeyIncrement:
		d.Redundancy, d.KeyLen, d.Counter = uint8(1+g.r.IntN(255)), uint8(k), g.r.Uint64()
		fill(d.Key[:k])
	case telemetry.DTAAppend:
		d.ListID, d.DataLen = g.r.Uint32(), uint8(dl)
		fill(d.Data[:dl])
	case telemetry.DTAPostcard:
		d.KeyLen, d.Hop, d.DataLen = uint8(k), uint8(1+g.r.IntN(255)), uint8(dl)
		fill(d.Key[:k])
		fill(d.Data[:dl])
	}
}

func (g *dtaGen) report() telemetry.Report {
	var r telemetry.Report
	op := dtaOps[g.r.IntN(len(dtaOps))]
	g.base(&r.DTA, op)
	g.entry(&r, op)
	return r
}

// batch returns 1 to 255 reports of one primitive sharing rs[0]'s base header.
func (g *dtaGen) batch() []telemetry.Report {
	n := 1 + g.r.IntN(32)
	if g.r.IntN(16) == 0 {
		n = 1 + g.r.IntN(255)
	}
	op := dtaOps[g.r.IntN(len(dtaOps))]
	rs := make([]telemetry.Report, n)
	g.base(&rs[0].DTA, op)
	for i := range rs {
		rs[i].DTA.Op, rs[i].DTA.HeaderLen, rs[i].DTA.Seq = op, rs[0].DTA.HeaderLen, rs[0].DTA.Seq
		rs[i].DTA.Immediate, rs[i].DTA.Retransmit = rs[0].DTA.Immediate, rs[0].DTA.Retransmit
		g.entry(&rs[i], op)
	}
	return rs
}

var dtaLayouts = []DTAConfig{
	{HeaderLen: 2, KeyLen: 4, DataLen: 4},
	{HeaderLen: 3, KeyLen: 4, DataLen: 4},
	{HeaderLen: 2, KeyLen: 13, DataLen: 12},
	{HeaderLen: 3, KeyLen: 13, DataLen: 12},
	{HeaderLen: 3, KeyLen: 64, DataLen: 32},
	{HeaderLen: 2, KeyLen: 1, DataLen: 1},
}

// TestDTARoundTrip: decode(encode(r)) equals r for random reports of every primitive, in
// both layouts and several widths, alone and in batches. One Report is reused throughout,
// across primitives, so that a dirty Key or Data tail shows up as a difference.
func TestDTARoundTrip(t *testing.T) {
	var rd Reader
	var got telemetry.Report
	for li, lay := range dtaLayouts {
		dec, enc := dtaCodec(t, lay.HeaderLen, lay.KeyLen, lay.DataLen)
		g := &dtaGen{r: rand.New(rand.NewPCG(42, uint64(li))), cfg: lay}
		perOp := map[telemetry.DTAOp]int{}
		buf := make([]byte, 0, 1<<14)
		for i := 0; i < 12000; i++ {
			want := g.report()
			perOp[want.DTA.Op]++
			b, err := enc.Append(buf[:0], &want)
			if err != nil {
				t.Fatalf("%+v #%d: encode: %v", lay, i, err)
			}
			rd.Reset(dec, InputDTA, b)
			if err := rd.Next(&got); err != nil {
				t.Fatalf("%+v #%d: decode %x: %v", lay, i, b, err)
			}
			if !got.Equal(&want) {
				t.Fatalf("%+v #%d: %x\n got %+v\nwant %+v", lay, i, b, got.DTA, want.DTA)
			}
			if err := rd.Next(&got); err != Done {
				t.Fatalf("%+v #%d: a second report: %v", lay, i, err)
			}
		}
		for _, op := range dtaOps {
			if perOp[op] < 2500 {
				t.Errorf("%+v: only %d %v reports", lay, perOp[op], op)
			}
		}
		for i := 0; i < 300; i++ {
			rs := g.batch()
			b, err := enc.AppendBatch(buf[:0], rs)
			if err != nil {
				t.Fatalf("%+v batch #%d: encode: %v", lay, i, err)
			}
			rd.Reset(dec, InputDTA, b)
			for j := range rs {
				if err := rd.Next(&got); err != nil {
					t.Fatalf("%+v batch #%d entry %d: %v", lay, i, j, err)
				}
				if !got.Equal(&rs[j]) {
					t.Fatalf("%+v batch #%d entry %d:\n got %+v\nwant %+v", lay, i, j, got.DTA, rs[j].DTA)
				}
			}
			if err := rd.Next(&got); err != Done {
				t.Fatalf("%+v batch #%d: after %d entries: %v", lay, i, len(rs), err)
			}
		}
	}
}

// fuzzReencode checks one input against one decoder: no panic, typed errors with offsets inside
// the input, at most one result per entry, zero Key/Data tails, and every decoded report
// re-encodes to a datagram that decodes to an equal report.
func fuzzReencode(t *testing.T, dec *Decoder, enc *Encoder, in Input, b []byte) {
	var rd, rd2 Reader
	var r, r2 telemetry.Report
	rd.Reset(dec, in, b)
	for i := 0; ; i++ {
		if i > 256 { // one base header, at most 255 entries
			t.Fatalf("reader did not stop after %d results on %d bytes", i, len(b))
		}
		err := rd.Next(&r)
		if err == Done {
			return
		}
		if err != nil {
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if we.Offset < 0 || we.Offset > len(b) || we.Reason == ReasonNone || we.Header == "" || we.Field == "" {
				t.Fatalf("bad error %+v for %d bytes", *we, len(b))
			}
			_ = we.Error()
			continue
		}
		if in == InputDTA {
			d := &r.DTA
			if slices.ContainsFunc(d.Key[d.KeyLen:], notZero) || slices.ContainsFunc(d.Data[d.DataLen:], notZero) {
				t.Fatalf("dirty key/data tail: %+v", *d)
			}
		}
		out, err := enc.Append(nil, &r)
		if err != nil {
			t.Fatalf("a decoded report does not encode: %v\n%+v", err, r)
		}
		rd2.Reset(dec, in, out)
		if err := rd2.Next(&r2); err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", out, err)
		}
		if !r2.Equal(&r) {
			t.Fatalf("re-encoded %x decodes differently:\n got %+v\nwant %+v", out, r2, r)
		}
	}
}

func FuzzDTA(f *testing.F) {
	for _, v := range dtaVectors {
		f.Add(dtaHex(f, v.hex))
	}
	// The prototype generators' 3-byte layout, odd and even sequence numbers
	// (producers_test.go): named deviations under header_len 2.
	for _, s := range []string{"01 05 00 | 02 | 0000007b | deadbeef", "02 06 80 | 00000003 | 0000002a",
		"03 07 40 | 01 | 00000001 | 0000000000000005", "04 08 00 | 0a000001 | 02 | 00000063"} {
		f.Add(dtaHex(f, s))
	}
	for li, lay := range dtaLayouts[:4] {
		_, enc := dtaCodec(f, lay.HeaderLen, lay.KeyLen, lay.DataLen)
		g := &dtaGen{r: rand.New(rand.NewPCG(5, uint64(li))), cfg: lay}
		for i := 0; i < 8; i++ {
			r := g.report()
			b, _ := enc.Append(nil, &r)
			f.Add(b)
			rs := g.batch()
			if len(rs) > 8 {
				rs = rs[:8]
			}
			b, _ = enc.AppendBatch(nil, rs)
			f.Add(b)
		}
	}
	type codec struct {
		dec *Decoder
		enc *Encoder
	}
	var cs []codec
	for _, lay := range dtaLayouts[:4] {
		dec, enc := dtaCodec(f, lay.HeaderLen, lay.KeyLen, lay.DataLen)
		cs = append(cs, codec{dec, enc})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range cs {
			fuzzReencode(t, c.dec, c.enc, InputDTA, b)
		}
	})
}

func notZero(b byte) bool { return b != 0 }

// dtaBench decodes pkt until Done b.N times with one Reader and one Report.
func dtaBench(b *testing.B, in Input, pkt []byte, reports int) {
	dec, _ := dtaCodec(b, 2, 4, 4)
	var rd Reader
	var r telemetry.Report
	rd.Reset(dec, in, pkt)
	n := 0
	for rd.Next(&r) == nil {
		n++
	}
	if n != reports {
		b.Fatalf("reference datagram holds %d reports, want %d", n, reports)
	}
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(dec, in, pkt)
		for rd.Next(&r) == nil {
		}
	}
}

func BenchmarkDecodeDTAKeyWrite(b *testing.B) {
	dtaBench(b, InputDTA, dtaHex(b, "01 80 | 03 | deadbeef | 11223344"), 1)
}

// BenchmarkDecodeDTABatch16 is the paper's Append batch size (DTA §6.7) in one datagram.
func BenchmarkDecodeDTABatch16(b *testing.B) {
	var s strings.Builder
	s.WriteString("02 01 10")
	for i := range 16 {
		fmt.Fprintf(&s, " 00000001 %08x", i+1)
	}
	dtaBench(b, InputDTA, dtaHex(b, s.String()), 16)
}
