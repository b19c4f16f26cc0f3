package capture

import (
	"math"
	"testing"
	"time"
)

func TestPacerRefuses(t *testing.T) {
	for _, tc := range []struct {
		mode    PaceMode
		x       float64
		maxWait time.Duration
		want    string
	}{
		{CaptureTiming, math.NaN(), time.Second, "NaN: must be a finite number above 0"},
		{CaptureTiming, math.Inf(1), time.Second, "+Inf: must be a finite number above 0"},
		{CaptureTiming, 0, time.Second, "0: must be a finite number above 0"},
		{FixedRate, -1, time.Second, "-1: must be a finite number above 0"},
		{FixedRate, math.Inf(-1), time.Second, "-Inf: must be a finite number above 0"},
		{FullSpeed, 0, 0, "maximum wait 0s: must be positive"},
	} {
		if _, err := NewPacer(tc.mode, tc.x, tc.maxWait); err == nil || err.Error() != tc.want {
			t.Errorf("%v %v %v: %v, want %s", tc.mode, tc.x, tc.maxWait, err, tc.want)
		}
	}
}

// dues returns the due times of datagrams captured at the offsets ats from t0.
func dues(p *Pacer, ats ...time.Duration) []time.Duration {
	t0 := time.Unix(1_700_000_000, 0)
	var d []time.Duration
	for _, a := range ats {
		d = append(d, p.Next(t0.Add(a)))
	}
	return d
}

func TestPacer(t *testing.T) {
	ms := time.Millisecond
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		mode    PaceMode
		x       float64
		maxWait time.Duration
		ats     []time.Duration
		want    []time.Duration
		capped  uint64
		skipped time.Duration
		first   uint64
	}{
		{"full speed", FullSpeed, 0, time.Second, []time.Duration{0, day, 2 * day}, []time.Duration{0, 0, 0}, 0, 0, 0},
		{"rate 3/s: from the count", FixedRate, 3, time.Second, []time.Duration{0, 0, 0, 0}, []time.Duration{0, 333333333, 666666666, time.Second}, 0, 0, 0},
		{"rate 0.5/s: every wait cut", FixedRate, 0.5, time.Second, []time.Duration{0, 0, 0}, []time.Duration{0, time.Second, 2 * time.Second}, 2, 2 * time.Second, 2},
		{"speed 2", CaptureTiming, 2, time.Second, []time.Duration{0, 30 * ms, 90 * ms}, []time.Duration{0, 15 * ms, 45 * ms}, 0, 0, 0},
		// A gap of 2^32 s (a capture whose timestamps wrapped) and one back in time.
		{"speed 1, gaps cut", CaptureTiming, 1, time.Second, []time.Duration{0, 10 * ms, 1 << 32 * time.Second, 1<<32*time.Second + 5*ms, 5 * ms, 20 * ms},
			[]time.Duration{0, 10 * ms, 1010 * ms, 1015 * ms, 1015 * ms, 1030 * ms}, 1, 1<<32*time.Second - 10*ms - time.Second, 3},
		// A tiny speed: the gap divided by it overflows a Duration, and is cut all the same.
		{"speed 1e-300", CaptureTiming, 1e-300, 50 * ms, []time.Duration{0, ms, 2 * ms}, []time.Duration{0, 50 * ms, 100 * ms}, 2, math.MaxInt64, 2},
	} {
		p, err := NewPacer(tc.mode, tc.x, tc.maxWait)
		if err != nil {
			t.Fatal(err)
		}
		got := dues(p, tc.ats...)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: due %v, want %v", tc.name, got, tc.want)
				break
			}
		}
		if p.Capped != tc.capped || p.Skipped != tc.skipped || p.FirstCapped != tc.first {
			t.Errorf("%s: capped %d skipped %s first %d, want %d %s %d", tc.name, p.Capped, p.Skipped, p.FirstCapped, tc.capped, tc.skipped, tc.first)
		}
	}
}
