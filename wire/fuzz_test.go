package wire

import (
	"errors"
	"math/rand/v2"
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
	} {
		f.Add(hx(f, s))
	}
	for _, fm := range []telemetry.Format{telemetry.FormatTR05, telemetry.FormatTR10, telemetry.FormatTR20} {
		seeds(f, fm)
	}
	cfg := roundtripConfig()
	d := mustDecoder(f, cfg)
	cfg.Quirks = Quirks{INTCollector: true, TR05Ver1: true}
	dq := mustDecoder(f, cfg)
	e, _ := NewEncoder(cfg)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzInput(t, d, e, InputReport, b)
		fuzzInput(t, dq, e, InputReport, b)
	})
}

func FuzzINTFrame(f *testing.F) {
	f.Add(hx(f, onosFrame))
	seeds(f, telemetry.FormatINTMD)
	cfg := roundtripConfig()
	d := mustDecoder(f, cfg)
	e, _ := NewEncoder(cfg)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzInput(t, d, e, InputINTMD, b)
	})
}
