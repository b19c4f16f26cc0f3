package dtasim

import (
	"fmt"
	"math"

	"github.com/intake-int/intake/internal/sim/plot"
)

// DART Fig. 5 (§5.3): the probability that a query returns a wrong value (an overwriting
// key with the same checksum), against storage size, for 8- and 16-bit checksums; the paper
// found none with 32-bit ones. The paper inserts 10⁸ keys at various storage sizes; here
// WrongKeys keys go into stores of WrongSlotsPerKey·WrongKeys slots, the same load factors,
// and every key is queried (SimKW) next to eq. 4 averaged over the ages queried.

// WrongKeys is the keys of each run of the wrong figure: 10⁸ scaled down 48× (2²¹), so that
// the 18 runs take seconds.
const WrongKeys = 1 << 21

// WrongSlotsPerKey are the storage sizes of the wrong figure, slots per key (the inverse of
// the load factor): 2²¹ keys into 2¹⁹ to 2²⁴ slots.
var WrongSlotsPerKey = []float64{0.25, 0.5, 1, 2, 4, 8}

// WrongBits are the checksum widths of the wrong figure.
var WrongBits = []int{8, 16, 32}

// fullScaleKeys is the key count the papers' runs use (DART §5.2-5.3: 10⁸).
const fullScaleKeys = 100e6

// WrongPoint is one run of the wrong figure.
type WrongPoint struct {
	Bits         int     `json:"bits"`
	Slots        int     `json:"slots"`
	Keys         int     `json:"keys"`
	SlotsPerKey  float64 `json:"slots_per_key"`
	FullScaleGiB float64 `json:"full_scale_gib"` // 10⁸ keys at this many slots a key, 24-byte slots
	Queries      int     `json:"queries"`
	Wrong        int     `json:"wrong"`          // wrong answers observed
	WrongRate    float64 `json:"wrong_rate"`     // Wrong / Queries
	Expected     float64 `json:"expected_wrong"` // eq. 4 summed over the ages queried
	ExpectedRate float64 `json:"expected_rate"`  // Expected / Queries
}

// kwWrongSum is eq. 4 summed over the ages SimKW queries when it queries every key: key i
// (0 oldest) has keys-1-i keys written after it.
func kwWrongSum(n, keys, slots, bits int) float64 {
	s := 0.0
	for age := range keys {
		s += KWWrong(n, float64(age)/float64(slots), bits)
	}
	return s
}

// WrongFigure is DART Fig. 5: for each checksum width in WrongBits and storage size in
// WrongSlotsPerKey, keys (a power of two) are inserted with redundancy n, 20-byte values (a
// 5-hop path, as DART Fig. 4), into a Key-Write store on store (SimConfig.Store) and every
// one is queried; the wrong answers are counted next to eq. 4's expectation. each, when
// set, gets every point as it is measured.
//
// The chart's y axis is log₁₀ of the wrong-answer probability (the rates span ten orders of
// magnitude); a width without a wrong answer at a size (32 bits at every one) has no
// simulated point there. Its x axis is the storage the same load factor takes at full scale:
// 10⁸ keys of 24-byte slots.
func WrongFigure(keys, n int, store string, progress Progress, each func(WrongPoint)) ([]WrongPoint, *plot.Chart, error) {
	var pts []WrongPoint
	var sims, anas []plot.Series
	for bi, b := range WrongBits {
		sim := plot.Series{Name: fmt.Sprintf("%d-bit checksums", b), Points: true}
		// The analysis in the colour of its width's points, drawn first, without a legend entry.
		ana := plot.Series{Name: fmt.Sprintf("%d-bit, analysis (eq. 4)", b), Dashed: true, Like: len(WrongBits) + bi + 1}
		for _, spk := range WrongSlotsPerKey {
			slots := int(spk * float64(keys))
			r, err := SimKW(SimConfig{Slots: slots, Keys: keys, N: n, Bits: b, ValueBytes: 20, Buckets: 1, MaxQueries: keys, Seed: uint64(11 + bi), Store: store,
				Progress: progress.of(fmt.Sprintf("%d-bit, %g slots a key", b, spk))})
			if err != nil {
				return nil, nil, err
			}
			p := WrongPoint{Bits: b, Slots: slots, Keys: keys, SlotsPerKey: spk, FullScaleGiB: fullScaleKeys * spk * 24 / (1 << 30),
				Queries: r.Queries, Wrong: int(math.Round(r.Wrong * float64(r.Queries))), Expected: kwWrongSum(n, keys, slots, b)}
			p.WrongRate, p.ExpectedRate = float64(p.Wrong)/float64(p.Queries), p.Expected/float64(p.Queries)
			pts = append(pts, p)
			if p.Wrong > 0 {
				sim.X, sim.Y = append(sim.X, p.FullScaleGiB), append(sim.Y, math.Log10(p.WrongRate))
			}
			ana.X, ana.Y = append(ana.X, p.FullScaleGiB), append(ana.Y, math.Log10(p.ExpectedRate))
			if each != nil {
				each(p)
			}
		}
		if len(sim.X) == 0 {
			sim.Name += " (no wrong answer seen)"
		}
		sims, anas = append(sims, sim), append(anas, ana)
	}
	series := append(anas, sims...) // the measured points drawn over the analysis' markers
	return pts, &plot.Chart{
		Title: "Key-Write wrong answers vs storage size (DART Fig. 5)",
		Subtitle: fmt.Sprintf("%d keys (10⁸ scaled down at equal load factor), N=%d, 20-byte values, every key queried, %g-%g slots a key; "+
			"x: the storage 10⁸ keys take at that load in 24-byte slots; markers: simulated (none where no wrong answer was seen: 32 bits everywhere); dashed, in the same colour: eq. 4 averaged over the ages queried",
			keys, n, WrongSlotsPerKey[0], WrongSlotsPerKey[len(WrongSlotsPerKey)-1]),
		X:      plot.Axis{Label: "storage for 10⁸ keys (GiB, 24-byte slots)", Min: 0, Max: 20},
		Y:      plot.Axis{Label: "log₁₀ P(wrong answer)", Min: -12, Max: -2},
		Series: series,
	}, nil
}
