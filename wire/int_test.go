package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// TestDecodeHopV2Base: the fixed-offset decoder of the common v2.x bitmap gives exactly the
// hop the plan-driven decoder gives, for blocks of random bytes whose items are now and then
// all ones (absent) in whole or in part, on bitmaps with and without reserved bits and the
// checksum complement; other bitmaps and layouts do not take it.
func TestDecodeHopV2Base(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bitmap := range []uint16{0xff00, 0xff01, 0xff7e, 0xff3f} {
		pl := compilePlan(telemetry.INT2x, bitmap, layoutSpec)
		if !pl.v2Base {
			t.Fatalf("bitmap %#04x: no fixed-offset decoder", bitmap)
		}
		p := make([]byte, pl.size)
		for n := 0; n < 20000; n++ {
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			for i := 0; i < len(p); i += 2 { // absent values: all ones, in whole items or halves
				if rng.IntN(6) == 0 {
					p[i], p[i+1] = 0xff, 0xff
				}
			}
			var want, got telemetry.Hop
			decodeHop(&want, &pl, p)
			decodeHopV2Base(&got, p)
			if want != got {
				t.Fatalf("bitmap %#04x, block % x:\nplan  %+v\nfixed %+v", bitmap, p, want, got)
			}
		}
	}
	for _, c := range []struct {
		v      telemetry.INTVersion
		bitmap uint16
		lay    itemLayout
	}{{telemetry.INT2x, 0xff80, layoutSpec}, {telemetry.INT2x, 0xfe00, layoutSpec}, {telemetry.INT10, 0xff00, layoutSpec},
		{telemetry.INT2x, 0xff00, layoutGEANT}} {
		if compilePlan(c.v, c.bitmap, c.lay).v2Base {
			t.Fatalf("%+v: takes the fixed-offset decoder", c)
		}
	}
}
