package dtasim

import (
	"math"
	"testing"
)

// The paper's worked examples (DTA §4): N=2, b=32, α=0.1: empty < 3.3%, wrong ≤ 1.6e-11;
// N=1: 9.5%; N=4: 1.2%. Postcarding with |V|=2^18, B=5: empty ≤ 3.3%, wrong < 1e-22.
func TestBoundsPaperExamples(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{1, 0.095}, {2, 0.033}, {4, 0.012}} {
		if e := KWEmpty(c.n, 0.1, 32); math.Abs(e-c.want) > 0.0006 {
			t.Errorf("KWEmpty(N=%d) = %.4f, want %.3f", c.n, e, c.want)
		}
	}
	if w := KWWrong(2, 0.1, 32); w > 1.6e-11 || w < 1.5e-11 {
		t.Errorf("KWWrong = %g", w)
	}
	if e := PCEmpty(2, 0.1, 32, 1<<18, 5); e > 0.033 {
		t.Errorf("PCEmpty = %g", e)
	}
	if w := PCWrong(2, 0.1, 32, 1<<18, 5); w >= 1e-22 {
		t.Errorf("PCWrong = %g", w)
	}
}

// The Monte Carlo over a real store agrees with the analysis within sampling error, for
// every key queried and for a sample (MaxQueries below K: every step-th key, 64 at a time
// through QueryMany), and with narrow checksums, where wrong answers are frequent enough to
// count.
func TestSimAgreesWithBounds(t *testing.T) {
	for _, c := range []SimConfig{
		{Slots: 1 << 16, Keys: 1 << 16, N: 2, Bits: 32, ValueBytes: 4, Buckets: 4, Seed: 3},
		{Slots: 1 << 16, Keys: 100_000, N: 3, Bits: 6, ValueBytes: 20, Buckets: 4, MaxQueries: 30_000, Seed: 4},
	} {
		r, err := SimKW(c)
		if err != nil {
			t.Fatal(err)
		}
		mq := c.MaxQueries
		if mq < 1 {
			mq = 10_000_000 // SimKW's default
		}
		step := max(1, (c.Keys+mq-1)/mq)
		if want := (c.Keys + step - 1) / step; r.Queries != want {
			t.Errorf("%+v: %d queries, want %d", c, r.Queries, want)
		}
		if se := StdErr(r.Expected, r.Queries); math.Abs(r.Success-r.Expected) > 4*se {
			t.Errorf("%+v: success %.4f, analysis %.4f (standard error %.4f)", c, r.Success, r.Expected, se)
		}
		if math.Abs(r.Success+r.Empty+r.Wrong-1) > 1e-12 {
			t.Errorf("%+v: rates do not add up: %+v", c, r)
		}
		if c.Bits == 32 && r.Wrong != 0 {
			t.Errorf("%+v: %g wrong answers with 32-bit checksums", c, r.Wrong)
		}
		if c.Bits == 6 && r.Wrong == 0 {
			t.Errorf("%+v: no wrong answers with 6-bit checksums", c)
		}
	}
}
