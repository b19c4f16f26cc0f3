package dtasim

import (
	"errors"
	"fmt"

	"github.com/intake-int/intake/internal/sim/plot"
)

// Progress returns the progress callback of the run it names (SimConfig.Progress), or nil.
type Progress func(label string) func(done, total int)

func (p Progress) of(label string) func(done, total int) {
	if p == nil {
		return nil
	}
	return p(label)
}

// RunChart plots one run: query success by key age, simulated and the analysis.
func RunChart(r SimResult) *plot.Chart {
	sim := plot.Series{Name: "simulated"}
	bound := plot.Series{Name: "analysis", Dashed: true}
	for _, b := range r.Buckets {
		a := (b.AlphaFrom + b.AlphaTo) / 2
		sim.X, sim.Y = append(sim.X, a), append(sim.Y, b.Success)
		bound.X, bound.Y = append(bound.X, a), append(bound.Y, b.Bound)
	}
	c := r.Config
	return &plot.Chart{
		Title:  fmt.Sprintf("Key-Write N=%d, b=%d, M=%d, K=%d", c.N, c.Bits, c.Slots, c.Keys),
		X:      plot.Axis{Label: "key age (later inserts / slots)", Min: 0, Max: r.Load},
		Y:      plot.Axis{Label: "query success", Min: 0, Max: 1, Percent: true},
		Series: []plot.Series{sim, bound},
	}
}

// LoadPoint is one point of the load figure.
type LoadPoint struct {
	N        int     `json:"n"`
	Load     float64 `json:"load_factor"`
	Success  float64 `json:"success"`
	Expected float64 `json:"bound_success"`
}

// Loads are the load factors (keys / slots) of the load figure.
var Loads = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1, 1.25, 1.5, 1.75, 2}

// LoadFigure is DART Fig. 3 / DTA Fig. 12: the average query success against the load factor
// for N = 1-4, every key queried, in a store of slots slots with bits-bit checksums and
// valueBytes-byte values, on store (SimConfig.Store). each, when set, gets every point as it
// is measured. The chart shades each load's interval in the colour of the best N there, as
// DART Fig. 3 does.
func LoadFigure(slots, bits, valueBytes int, store string, progress Progress, each func(LoadPoint)) ([]LoadPoint, *plot.Chart, error) {
	var pts []LoadPoint
	var series []plot.Series
	best := make([]int, len(Loads))
	bestV := make([]float64, len(Loads))
	for n := 1; n <= 4; n++ {
		s := plot.Series{Name: fmt.Sprintf("N=%d", n)}
		for i, l := range Loads {
			r, err := SimKW(SimConfig{Slots: slots, Keys: int(l * float64(slots)), N: n, Bits: bits, ValueBytes: valueBytes, Buckets: 1, Seed: uint64(n), Store: store,
				Progress: progress.of(fmt.Sprintf("N=%d load %.2f", n, l))})
			if err != nil {
				return nil, nil, err
			}
			p := LoadPoint{N: n, Load: l, Success: r.Success, Expected: r.Expected}
			pts = append(pts, p)
			s.X, s.Y = append(s.X, l), append(s.Y, r.Success)
			if r.Success > bestV[i] {
				best[i], bestV[i] = n, r.Success
			}
			if each != nil {
				each(p)
			}
		}
		series = append(series, s)
	}
	var bands []plot.Band
	for i := range Loads {
		lo := 0.0
		if i > 0 {
			lo = (Loads[i-1] + Loads[i]) / 2
		}
		hi := Loads[i]
		if i+1 < len(Loads) {
			hi = (Loads[i] + Loads[i+1]) / 2
		}
		bands = append(bands, plot.Band{From: lo, To: hi, Series: best[i] - 1})
	}
	return pts, &plot.Chart{
		Title:    "Key-Write average query success vs load factor (shade: best N)",
		Subtitle: fmt.Sprintf("M = %d slots, %d-bit checksums, %d-byte values, every key queried; load factor = keys / slots; the background: the N with the highest success there", slots, bits, valueBytes),
		X:        plot.Axis{Label: "load factor (keys / slots)", Min: 0, Max: Loads[len(Loads)-1]},
		Y:        plot.Axis{Label: "average query success", Min: 0, Max: 1, Percent: true},
		Series:   series,
		Bands:    bands,
	}, nil
}

// AgingResult is the aging figure's outcome for one storage size.
type AgingResult struct {
	Label  string    `json:"label"`
	Scaled bool      `json:"scaled"`
	Result SimResult `json:"result"`
}

// ErrScale is AgingFigure's answer to a scale that does not keep the slot count a power of
// two.
var ErrScale = errors.New("slots (2^27 × scale) must stay a power of two")

// AgingFigure is DART Fig. 4 / DTA Fig. 13: 100 M 5-hop paths (20-byte values, 32-bit
// checksums, 24-byte slots) into 3 GiB = 2^27 slots with redundancy n, and into 30 GiB,
// scaled down 10× at equal load factor (10 M paths into 2^27 slots), with N = 2 and N = 4;
// success by key age in 100 buckets, 5 M queries sampled evenly by age, on store
// (SimConfig.Store). scale shrinks the whole figure (keys and slots) at equal load factor.
// each, when set, gets every result as it is measured.
//
// The chart's x axis is what DTA §6.5.3 counts in: the paths reported after the queried one,
// at full scale (a scaled run's key age is the same fraction of its keys, at the same load
// factor, so the same success). The papers' own points are laid over it: DTA's at 10⁷ and
// 10⁸ later paths, and DART's oldest keys (§5.2).
func AgingFigure(scale float64, n int, store string, progress Progress, each func(AgingResult)) ([]AgingResult, *plot.Chart, error) {
	keys := int(100e6 * scale)
	slots3 := int(float64(1<<27) * scale)
	if !pow2(slots3) {
		return nil, nil, ErrScale
	}
	runs := []struct {
		label   string
		keys, m int
		n       int
		scaled  bool
	}{
		{"3 GiB N=2", keys, slots3, n, scale != 1},
		{"30 GiB N=2 (keys /10 at equal load)", keys / 10, slots3, n, true},
		{"30 GiB N=4 (keys /10 at equal load)", keys / 10, slots3, 4, true},
	}
	var out []AgingResult
	var series []plot.Series
	for _, rn := range runs {
		r, err := SimKW(SimConfig{Slots: rn.m, Keys: rn.keys, N: rn.n, Bits: 32, ValueBytes: 20, Buckets: 100, MaxQueries: 5_000_000, Seed: 7, Store: store, Progress: progress.of(rn.label)})
		if err != nil {
			return nil, nil, err
		}
		a := AgingResult{Label: rn.label, Scaled: rn.scaled, Result: r}
		out = append(out, a)
		s := plot.Series{Name: rn.label}
		for i, b := range r.Buckets { // the bucket's middle, in millions of later paths of 10⁸
			s.X, s.Y = append(s.X, (float64(i)+0.5)*100/float64(len(r.Buckets))), append(s.Y, b.Success)
		}
		series = append(series, s)
		if each != nil {
			each(a)
		}
	}
	series = append(series,
		plot.Series{Name: "paper: DTA §6.5.3, 3 GiB", X: []float64{10, 100}, Y: []float64{0.993, 0.445}, Points: true},
		plot.Series{Name: "paper: DART §5.2, 3 GB, oldest", X: []float64{100}, Y: []float64{0.390}, Points: true},
		plot.Series{Name: "paper: DTA §6.5.3, 30 GiB", X: []float64{10, 100}, Y: []float64{0.9999, 0.982}, Points: true})
	// The 30 GiB runs (and the paper's 30 GiB points) again below, on an axis fitted to
	// them: on the full one they are a line at 100%.
	for _, i := range []int{1, 2, 5} {
		z := series[i]
		z.Panel, z.Like = 1, i+1
		series = append(series, z)
	}
	return out, &plot.Chart{
		Title: "Key-Write aging: 5-hop path traces, 32-bit checksums",
		Subtitle: fmt.Sprintf("10⁸ paths of 20 bytes (24-byte slots) into 3 GiB = 2²⁷ slots, N=%d; 30 GiB: 10⁷ paths into 2²⁷ slots, the same load factor as 10⁸ into 30 GiB; "+
			"success in 100 age buckets, 5·10⁶ queries; markers without a line: the papers' values", n),
		X:      plot.Axis{Label: "paths reported after the queried one (millions, full scale)", Min: 0, Max: 100},
		Y:      plot.Axis{Label: "query success", Min: 0, Max: 1, Percent: true},
		Panels: []plot.Axis{{Label: "30 GiB, zoomed", Percent: true}},
		Series: series,
	}, nil
}
