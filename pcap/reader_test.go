package pcap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// Hand-built capture files. The helpers lay out the documented structures field by field in
// a chosen byte order, so that each test states the bytes it feeds the Reader.

// order is a byte order that can append, as binary.LittleEndian and binary.BigEndian can.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func classic(bo order, magic uint32, link uint32, recs ...[]byte) []byte {
	b := bo.AppendUint32(nil, magic)
	b = bo.AppendUint16(b, 2)
	b = bo.AppendUint16(b, 4)
	b = bo.AppendUint32(b, 0)     // thiszone
	b = bo.AppendUint32(b, 0)     // sigfigs
	b = bo.AppendUint32(b, 65535) // snaplen
	b = bo.AppendUint32(b, link)  // network
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

func record(bo order, sec, frac uint32, data []byte, orig int) []byte {
	b := bo.AppendUint32(nil, sec)
	b = bo.AppendUint32(b, frac)
	b = bo.AppendUint32(b, uint32(len(data)))
	b = bo.AppendUint32(b, uint32(orig))
	return append(b, data...)
}

func block(bo order, typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	b := bo.AppendUint32(nil, typ)
	b = bo.AppendUint32(b, n)
	b = append(b, body...)
	return bo.AppendUint32(b, n)
}

func shb(bo order) []byte {
	body := bo.AppendUint32(nil, byteOrderBE)
	body = bo.AppendUint16(body, 1)
	body = bo.AppendUint16(body, 0)
	body = bo.AppendUint64(body, ^uint64(0)) // section length unknown
	return block(bo, blockSHB, body)
}

// opt is one pcapng option: code, then its value.
type opt struct {
	code uint16
	val  []byte
}

func idb(bo order, link LinkType, snaplen uint32, opts ...opt) []byte {
	body := bo.AppendUint16(nil, uint16(link))
	body = bo.AppendUint16(body, 0)
	body = bo.AppendUint32(body, snaplen)
	for _, o := range opts {
		body = bo.AppendUint16(body, o.code)
		body = bo.AppendUint16(body, uint16(len(o.val)))
		body = append(body, o.val...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	if len(opts) > 0 {
		body = append(body, 0, 0, 0, 0) // opt_endofopt
	}
	return block(bo, blockIDB, body)
}

func epb(bo order, ifc uint32, ts uint64, data []byte, orig int) []byte {
	body := bo.AppendUint32(nil, ifc)
	body = bo.AppendUint32(body, uint32(ts>>32))
	body = bo.AppendUint32(body, uint32(ts))
	body = bo.AppendUint32(body, uint32(len(data)))
	body = bo.AppendUint32(body, uint32(orig))
	body = append(body, data...)
	return block(bo, blockEPB, body)
}

func spb(bo order, data []byte, orig int) []byte {
	return block(bo, blockSPB, append(bo.AppendUint32(nil, uint32(orig)), data...))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

type want struct {
	data   string
	time   time.Time
	link   LinkType
	orig   int
	ifc    int
	offset int64
}

func readAll(t *testing.T, file []byte) ([]want, error) {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(file))
	if err != nil {
		return nil, err
	}
	var got []want
	for {
		p, err := rd.Next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, want{string(p.Data), p.Time, p.Link, p.OrigLen, p.Interface, p.Offset})
	}
}

var (
	le order = binary.LittleEndian
	be order = binary.BigEndian
	t0       = time.Date(2018, 6, 1, 12, 0, 0, 0, time.UTC)
)

func TestReader(t *testing.T) {
	sec := uint32(t0.Unix())
	tsMicro := uint64(t0.UnixMicro()) + 123456
	for _, tc := range []struct {
		name string
		file []byte
		want []want
	}{
		{
			// Written out in full once: a big-endian microsecond file, one 4-byte packet.
			name: "pcap literal big-endian",
			file: mustHex("a1b2c3d4 0002 0004 00000000 00000000 0000ffff 00000065" +
				"5b113540 0001e240 00000004 00000004 45000014"),
			want: []want{{"\x45\x00\x00\x14", t0.Add(123456 * time.Microsecond), LinkRaw, 4, 0, 24}},
		},
		{
			name: "pcap little-endian micro",
			file: classic(le, magicMicro, 1,
				record(le, sec, 999999, []byte("abc"), 60),
				record(le, sec+1, 0, nil, 0)),
			want: []want{
				{"abc", t0.Add(999999 * time.Microsecond), LinkEthernet, 60, 0, 24},
				{"", t0.Add(time.Second), LinkEthernet, 0, 0, 43},
			},
		},
		{
			name: "pcap big-endian nano",
			file: classic(be, magicNano, 113, record(be, sec, 999999999, []byte("x"), 1)),
			want: []want{{"x", t0.Add(999999999), LinkLinuxSLL, 1, 0, 24}},
		},
		{
			name: "pcap little-endian nano, FCS bits in the link-type word",
			file: classic(le, magicNano, 0x1<<28|2<<26|228, record(le, sec, 5, []byte("y"), 1)),
			want: []want{{"y", t0.Add(5), LinkIPv4, 1, 0, 24}},
		},
		{
			name: "pcap empty",
			file: classic(le, magicMicro, 229),
		},
		{
			name: "pcapng little-endian, default resolution",
			file: cat(shb(le), idb(le, LinkEthernet, 0), epb(le, 0, tsMicro, []byte("hello"), 64)),
			want: []want{{"hello", t0.Add(123456 * time.Microsecond), LinkEthernet, 64, 0, 28 + 20}},
		},
		{
			name: "pcapng big-endian, two interfaces, own link types and resolutions",
			file: cat(shb(be),
				idb(be, LinkEthernet, 0, opt{9, []byte{9}}),                             // ns
				idb(be, LinkIPv6, 0, opt{2, []byte("eth1")}, opt{9, []byte{0x80 | 10}}), // 2^-10 s
				epb(be, 1, uint64(t0.Unix())<<10|512, []byte("v6"), 2),
				epb(be, 0, uint64(t0.UnixNano())+7, []byte("e"), 1)),
			want: []want{
				{"v6", t0.Add(500 * time.Millisecond), LinkIPv6, 2, 1, 28 + 32 + 40},
				{"e", t0.Add(7), LinkEthernet, 1, 0, 28 + 32 + 40 + 36},
			},
		},
		{
			name: "pcapng if_tsoffset and 10^-3 resolution",
			file: cat(shb(le), idb(le, LinkRaw, 0, opt{9, []byte{3}}, opt{14, le.AppendUint64(nil, uint64(t0.Unix()))}),
				epb(le, 0, 1500, []byte("z"), 1)),
			want: []want{{"z", t0.Add(1500 * time.Millisecond), LinkRaw, 1, 0, 28 + 44}},
		},
		{
			name: "pcapng simple packet block, snaplen applies",
			file: cat(shb(le), idb(le, LinkIPv4, 3), spb(le, []byte("abcd"), 10)),
			want: []want{{"abc", time.Time{}, LinkIPv4, 10, 0, 28 + 20}},
		},
		{
			name: "pcapng unknown and statistics blocks are skipped",
			file: cat(shb(le), block(le, 0x0bad, []byte("xxxxxxx")), idb(le, LinkEthernet, 0),
				block(le, 5, make([]byte, 20)), epb(le, 0, 0, []byte("p"), 1)),
			want: []want{{"p", time.Unix(0, 0).UTC(), LinkEthernet, 1, 0, 28 + 20 + 20 + 32}},
		},
		{
			name: "pcapng second section switches byte order and resets interfaces",
			file: cat(shb(le), idb(le, LinkEthernet, 0), epb(le, 0, 0, []byte("a"), 1),
				shb(be), idb(be, LinkLinuxSLL, 0), epb(be, 0, 0, []byte("b"), 1)),
			want: []want{
				{"a", time.Unix(0, 0).UTC(), LinkEthernet, 1, 0, 48},
				{"b", time.Unix(0, 0).UTC(), LinkLinuxSLL, 1, 0, 48 + 36 + 28 + 20},
			},
		},
		{
			name: "pcapng obsolete packet block",
			file: cat(shb(le), idb(le, LinkEthernet, 0),
				block(le, blockOPB, cat(le.AppendUint16(nil, 0), le.AppendUint16(nil, 0),
					le.AppendUint32(nil, 0), le.AppendUint32(nil, 1_000_000),
					le.AppendUint32(nil, 2), le.AppendUint32(nil, 2), []byte("op")))),
			want: []want{{"op", time.Unix(1, 0).UTC(), LinkEthernet, 2, 0, 48}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d packets %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("packet %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestReaderMalformed(t *testing.T) {
	sec := uint32(t0.Unix())
	good := classic(le, magicMicro, 1, record(le, sec, 0, []byte("abcdef"), 6))
	ng := cat(shb(le), idb(le, LinkEthernet, 0), epb(le, 0, 0, []byte("abcdef"), 6))
	badTrailer := cat(shb(le), idb(le, LinkEthernet, 0))
	badTrailer[len(badTrailer)-1] = 9
	for _, tc := range []struct {
		name       string
		file       []byte
		packets    int    // read before the error
		err        string // substring of the error
		unexpected bool   // wraps io.ErrUnexpectedEOF
	}{
		{"empty file", nil, 0, "pcap: file header at offset 0: no magic number", true},
		{"unknown magic", []byte("GIF89a......................"), 0, "magic 0x47494638 is neither pcap nor pcapng", false},
		{"short file header", good[:10], 0, "pcap: file header at offset 0: truncated", true},
		{"bad version", func() []byte { b := bytes.Clone(good); b[4] = 3; return b }(), 0, "version 3.4, want 2.x", false},
		{"truncated record header", good[:24+9], 0, "pcap: record header at offset 24: truncated", true},
		{"truncated final record", good[:len(good)-1], 0, "pcap: record at offset 24: truncated inside 6 bytes of packet data", true},
		{"huge record", classic(le, magicMicro, 1, le.AppendUint32(le.AppendUint32(make([]byte, 8), 1<<30), 1<<30)), 0, "captured length 1073741824 exceeds 1048576", false},
		{"pcapng truncated block", ng[:len(ng)-3], 0, "pcapng: enhanced packet block at offset 48: truncated", true},
		{"pcapng truncated trailer only", ng[:len(ng)-4], 0, "before the trailing block length", true},
		{"pcapng partial block header", append(bytes.Clone(ng), 1, 0), 1, "pcapng: block header at offset 88: truncated", true},
		{"pcapng trailer mismatch", badTrailer, 0, "interface description block at offset 28: trailing block length 150994964 differs from 20", false},
		{"pcapng bad byte-order magic", func() []byte { b := bytes.Clone(ng); b[8] = 0; return b }(), 0, "pcapng: section header block at offset 0: byte-order magic", false},
		{"pcapng bad version", func() []byte { b := bytes.Clone(ng); b[12] = 2; return b }(), 0, "version 2.0, want 1.x", false},
		{"pcapng block length not multiple of 4", cat(shb(le), le.AppendUint32(le.AppendUint32(nil, 6), 13)), 0, "enhanced packet block at offset 28: block total length 13", false},
		{"pcapng packet before interface", cat(shb(le), epb(le, 0, 0, []byte("a"), 1)), 0, "interface 0 not described (section has 0)", false},
		{"pcapng captured length overruns", func() []byte {
			b := bytes.Clone(ng)
			le.PutUint32(b[48+20:], 200)
			return b
		}(), 0, "captured length 200 overruns the block", false},
		{"pcapng option overruns", cat(shb(le), block(le, blockIDB, cat(le.AppendUint32(nil, 1), le.AppendUint32(nil, 0), le.AppendUint16(nil, 9), le.AppendUint16(nil, 40)))), 0, "option 9 length 40 overruns the block", false},
		{"pcapng bad tsresol", cat(shb(le), idb(le, 1, 0, opt{9, []byte{20}})), 0, "if_tsresol 10^-20", false},
		{"pcapng simple packet without interface", cat(shb(le), spb(le, []byte("a"), 1)), 0, "no interface described", false},
		{"pcapng huge block", cat(shb(le), le.AppendUint32(le.AppendUint32(nil, 6), 1<<30)), 0, "block total length 1073741824 exceeds", false},
		{"pcapng truncated skipped block", cat(shb(le), block(le, 0xbad, make([]byte, 64)))[:60], 0, "block 0x00000bad at offset 28: truncated inside 76-byte block", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, tc.file)
			if err == nil {
				t.Fatalf("no error; packets %+v", got)
			}
			if len(got) != tc.packets {
				t.Errorf("read %d packets before the error, want %d", len(got), tc.packets)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q\n does not contain %q", err, tc.err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
				t.Errorf("error %v is not a *FormatError wrapping ErrFormat", err)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) != tc.unexpected {
				t.Errorf("errors.Is(err, io.ErrUnexpectedEOF) = %v, want %v", !tc.unexpected, tc.unexpected)
			}
		})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	pkts := [][]byte{[]byte("first"), nil, bytes.Repeat([]byte{0xab}, 1500)}
	times := []time.Time{t0, t0.Add(1234567891), t0.Add(time.Hour + 1)}
	for _, res := range []Resolution{Microsecond, Nanosecond} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, LinkEthernet, res)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pkts {
			if err := w.WritePacket(times[i], p); err != nil {
				t.Fatal(err)
			}
		}
		rd, err := NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if rd.LinkType() != LinkEthernet {
			t.Errorf("link type %v", rd.LinkType())
		}
		for i, p := range pkts {
			got, err := rd.Next()
			if err != nil {
				t.Fatalf("res %d packet %d: %v", res, i, err)
			}
			wt := times[i]
			if res == Microsecond {
				wt = wt.Truncate(time.Microsecond)
			}
			if !bytes.Equal(got.Data, p) || !got.Time.Equal(wt) || got.Link != LinkEthernet || got.OrigLen != len(p) {
				t.Errorf("res %d packet %d: got %q %v %v %d", res, i, got.Data, got.Time, got.Link, got.OrigLen)
			}
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Errorf("after the last packet: %v, want io.EOF", err)
		}
	}
}

func TestWriterTimeRange(t *testing.T) {
	w, err := NewWriter(io.Discard, LinkEthernet, Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), nil); err == nil {
		t.Error("a time before 1970 was accepted")
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzReader feeds arbitrary files to the Reader: it must return packets or an error, never
// panic, never hand out more data than the file holds, and always reach an end.
func FuzzReader(f *testing.F) {
	sec := uint32(t0.Unix())
	f.Add(classic(le, magicMicro, 1, record(le, sec, 0, []byte("abcdef"), 6)))
	f.Add(classic(be, magicNano, 101, record(be, sec, 0, []byte("ab"), 6)))
	f.Add(cat(shb(le), idb(le, LinkEthernet, 0, opt{9, []byte{9}}), epb(le, 0, 0, []byte("abcdef"), 6), spb(le, []byte("xy"), 2)))
	f.Add(cat(shb(be), idb(be, LinkIPv6, 4, opt{14, make([]byte, 8)}), block(be, 0xbad, []byte("??")), epb(be, 0, 0, []byte("abcdef"), 6)))
	f.Fuzz(func(t *testing.T, file []byte) {
		rd, err := NewReader(bytes.NewReader(file))
		if err != nil {
			return
		}
		for i := 0; ; i++ {
			p, err := rd.Next()
			if err != nil {
				return
			}
			if len(p.Data) > len(file) || p.Offset < 0 || p.Offset >= int64(len(file)) {
				t.Fatalf("packet %d: %d bytes at offset %d from a %d-byte file", i, len(p.Data), p.Offset, len(file))
			}
			UDP(p.Data, p.Link)
			if i > len(file) {
				t.Fatal("more packets than bytes")
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	frame := AppendUDPFrame(nil, &benchFrame, make([]byte, 100))
	var file bytes.Buffer
	w, _ := NewWriter(&file, LinkEthernet, Nanosecond)
	for range 1000 {
		w.WritePacket(t0, frame)
	}
	src := bytes.NewReader(file.Bytes())
	rd, _ := NewReader(src)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		p, err := rd.Next()
		if err == io.EOF {
			src.Reset(file.Bytes())
			rd.br.Reset(src)
			rd.read(rd.hdr[:24])
			continue
		}
		if err != nil || len(p.Data) != len(frame) {
			b.Fatal(err)
		}
	}
}

func BenchmarkReaderNG(b *testing.B) {
	frame := AppendUDPFrame(nil, &benchFrame, make([]byte, 100))
	file := cat(shb(le), idb(le, LinkEthernet, 0, opt{9, []byte{9}}))
	hdr := len(file)
	for range 1000 {
		file = append(file, epb(le, 0, uint64(t0.UnixNano()), frame, len(frame))...)
	}
	src := bytes.NewReader(file)
	rd, _ := NewReader(src)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		p, err := rd.Next()
		if err == io.EOF {
			src.Reset(file[hdr:])
			rd.br.Reset(src)
			continue
		}
		if err != nil || len(p.Data) != len(frame) {
			b.Fatal(err)
		}
	}
}
