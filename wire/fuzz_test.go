package wire

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// fuzzInput checks what must hold for any input: no panic, every error an *Error whose
// offset lies within the input, every report within its capacities, and an encoder that
// accepts what the decoder produced without panicking.
func fuzzInput(t *testing.T, d *Decoder, e *Encoder, in Input, b []byte) {
	var rd Reader
	var r telemetry.Report
	rd.Reset(d, in, b)
	for i := 0; ; i++ {
		if i > len(b)/4+2 {
			t.Fatalf("reader did not stop after %d reports on %d bytes", i, len(b))
		}
		err := rd.Next(&r)
		if err == Done {
			return
		}
		if ie := rd.InnerErr(); ie != nil {
			if err != nil || ie.Offset < 0 || ie.Offset > len(b) || ie.Reason == ReasonNone || ie.Header == "" {
				t.Fatalf("bad inner error %+v (next: %v) for %d bytes", *ie, err, len(b))
			}
			if r.INT.Version != telemetry.INTNone {
				t.Fatalf("inner error %v with INT %+v", ie, r.INT)
			}
		}
		if err != nil {
			var we *Error
			if !errors.As(err, &we) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if we.Offset < 0 || we.Offset > len(b) || we.Reason == ReasonNone || we.Header == "" {
				t.Fatalf("bad error %+v for %d bytes", *we, len(b))
			}
			_ = we.Error()
			continue
		}
		if int(r.NHops) > telemetry.MaxHops || int(r.NLabels) > telemetry.MaxLabelItems {
			t.Fatalf("report over capacity: %d hops, %d labels", r.NHops, r.NLabels)
		}
		_, _ = e.Append(nil, &r)
	}
}

// seeds adds the golden vectors and generated packets of every shape.
func seeds(f *testing.F, format telemetry.Format) {
	cfg := roundtripConfig()
	enc, _ := NewEncoder(cfg)
	g := &gen{r: rand.New(rand.NewPCG(3, uint64(format))), cfg: cfg}
	for i := 0; i < 64; i++ {
		r := g.report(format)
		if b, err := enc.Append(nil, &r); err == nil {
			f.Add(b)
		}
	}
}

func FuzzReport(f *testing.F) {
	for _, s := range []string{
		"02200001 0000000a 11223344 00000001 00030004 02000100 11223400",
		"01800001 0000000b 11223344 00000001 00030000 001d0000",
		"16140040 00000001 0000000a 11223344 00030004 02000100",
		"20000001 0a0b0c0d 140e0220 50000000 00000000 00030004 02000100 45000028 00000000 40060000 0a000001 0a000002 04d20050 00000000 00000000 50020000 00000000",
		onosFrame[84:],
		// Real producers and their deviations (producers_test.go).
		hostINTReport,
		intcollectorP0,
		geantGenerator,
		"02200001 00000001 0bebc200 00000005 00020007 00000000 0bebc5e8 ffffffffffff 010203040506 0800 45000022 00000000 40060000 c0a80001 c0a80002 8f6c0050 000e0000 010203040506",
	} {
		f.Add(hx(f, s))
	}
	f.Add(geantReport(f, "00ff"))
	// INT data packets sent to a report port (plausible_test.go), and host-int over TCP with
	// options (producers_test.go).
	for _, name := range []string{"geant-2601-double-header.pcap", "geant-dpdk-int.pcap"} {
		f.Add(udpPayload(f, name))
	}
	f.Add(hx(f, strings.Replace(hostINTReport, "5010ffff", "8010ffff", 1)))
	for _, fm := range []telemetry.Format{telemetry.FormatTR05, telemetry.FormatTR10, telemetry.FormatTR20} {
		seeds(f, fm)
	}
	cfg := roundtripConfig()
	d := mustDecoder(f, cfg)
	cfg.Quirks = Quirks{INTCollector: true, TR05Ver1: true}
	dq := mustDecoder(f, cfg)
	e, _ := NewEncoder(cfg)
	dp := producerDecoders(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzInput(t, d, e, InputReport, b)
		fuzzInput(t, dq, e, InputReport, b)
		for _, d := range dp {
			fuzzInput(t, d, e, InputReport, b)
		}
	})
}

// producerDecoders are one decoder per producer quirk, and one with every quirk on.
func producerDecoders(t testing.TB) []*Decoder {
	var ds []*Decoder
	all := roundtripConfig()
	for _, n := range QuirkNames() {
		cfg := roundtripConfig()
		if err := cfg.Quirks.Set(n); err != nil {
			t.Fatal(err)
		}
		_ = all.Quirks.Set(n)
		ds = append(ds, mustDecoder(t, cfg))
	}
	return append(ds, mustDecoder(t, all))
}

func FuzzINTFrame(f *testing.F) {
	f.Add(hx(f, onosFrame))
	for _, name := range []string{"geant-2601-double-header.pcap", "geant-dpdk-int.pcap"} {
		f.Add(pcapFrame(f, name))
	}
	f.Add(hx(f, "020000000002 020000000001 0800 455c0044 00004000 40110000 0a000001 0a000002 9c401451 00300000 03000900 00040201 cc000000 0000000a 00020002 000f4240 000f4240 00000001 11145100 61626364"))
	seeds(f, telemetry.FormatINTMD)
	cfg := roundtripConfig()
	d := mustDecoder(f, cfg)
	e, _ := NewEncoder(cfg)
	dp := producerDecoders(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzInput(t, d, e, InputINTMD, b)
		for _, d := range dp {
			fuzzInput(t, d, e, InputINTMD, b)
		}
	})
}

// pcapFrame returns the first frame of a classic pcap in testdata/third-party (Ethernet,
// one record: the 24-byte file header and the 16-byte record header skipped).
func pcapFrame(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/third-party/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 40 {
		t.Fatalf("%s: %d bytes", name, len(b))
	}
	return b[40:]
}
