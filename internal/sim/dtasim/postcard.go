package dtasim

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/sim/plot"
)

// DTA Fig. 14 (§6.6): postcard aggregation at the translator against the number of
// intermediate flows and the size of the translator's cache. The postcards go through
// package dta's own PostcardCache (the translator's Add for a DTA postcard report) over a
// Postcarding store in anonymous memory; only the interleaving is synthetic.
//
// The interleaving: flows come in generations of I+1; a generation's postcards arrive hop by
// hop, round robin over its flows (hop 1 of every flow, then hop 2 of every flow, ...), so
// that between two postcards of one flow exactly one postcard of each of I other flows
// arrives: I intermediate flows. A path counts as aggregated only when its entry was written
// with all B postcards (the cache's Complete count); an early emission, a partial entry
// written because another flow took its cache line, is a failure (DTA footnote 5). The cache
// is direct mapped, so a flow fails exactly when one of the I others maps to its line: the
// analysis is (1 - 1/C)^I for a cache of C entries.

// PostcardFlows is the least number of flows a point of the postcard figure aggregates.
const PostcardFlows = 1 << 17

// PostcardHops is B, the path length of DTA §6.6.
const PostcardHops = 5

// PostcardCaches are the cache sizes (entries) of the postcard figure: 2¹⁰ to 2¹⁶ (the
// prototype's 32,768 = 2¹⁵ among them).
var PostcardCaches = []int{1 << 10, 1 << 12, 1 << 14, 1 << 15, 1 << 16}

// PostcardInterleavings are the intermediate-flow counts of the postcard figure: 1 to ~3·10⁵,
// about two a decade.
var PostcardInterleavings = []int{1, 3, 10, 32, 100, 316, 1000, 3162, 10000, 31623, 100000, 316228}

// PostcardPoint is one run of the postcard figure.
type PostcardPoint struct {
	Cache        int     `json:"cache"`
	Intermediate int     `json:"intermediate_flows"`
	Flows        int     `json:"flows"`
	Complete     uint64  `json:"complete"` // paths written with all B postcards
	Early        uint64  `json:"early"`    // partial entries written early (a flow may have several)
	Success      float64 `json:"success"`  // Complete / Flows
	Expected     float64 `json:"analysis"` // (1 - 1/C)^I
}

// PostcardAnalysis is the chance a flow's B postcards aggregate in a direct-mapped cache of
// cache entries when inter other flows are in progress: none of them takes its line.
func PostcardAnalysis(cache, inter int) float64 {
	return math.Exp(float64(inter) * math.Log1p(-1/float64(cache)))
}

// SimPostcard aggregates at least minFlows flows (whole generations of inter+1) through a
// translator cache of cache entries, and returns the counts.
func SimPostcard(cache, inter, minFlows int, seed uint64) (PostcardPoint, error) {
	c, done, err := newPostcardCache(cache, seed)
	if err != nil {
		return PostcardPoint{}, err
	}
	defer done()
	gen := inter + 1
	gens := max(1, (minFlows+gen-1)/gen)
	aggregate(c, gen, 0, gens, seed)
	pt := PostcardPoint{Cache: cache, Intermediate: inter, Flows: gens * gen, Complete: c.Complete.Load(), Early: c.Early.Load(), Expected: PostcardAnalysis(cache, inter)}
	pt.Success = float64(pt.Complete) / float64(pt.Flows)
	return pt, nil
}

// newPostcardCache is a translator cache of cache entries over a Postcarding store of the
// default geometry (5 hops, N = 2, 32-bit slots) in anonymous memory, 2¹⁶ chunks: the store
// only receives the chunks written, its size does not change aggregation. done closes it.
func newPostcardCache(cache int, seed uint64) (c *dta.PostcardCache, done func(), err error) {
	cfg := dta.DefaultConfig().Postcard
	cfg.Cache, cfg.Chunks = cache, 1<<16
	r, err := dta.AnonRegion(dta.PostcardHeader(cfg, seed))
	if err != nil {
		return nil, nil, err
	}
	p, err := dta.NewPostcard(r)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return p.NewCache(cache), func() { r.Close() }, nil
}

// aggregate adds the postcards of generations from to to (exclusive) of gen flows each to
// c: a generation's hop 1 of every flow, then hop 2 of every flow, and so on. Flow f's key
// is 8 bytes from f and seed; its hop h reports switch id f mod 1000 · 5 + h.
func aggregate(c *dta.PostcardCache, gen, from, to int, seed uint64) {
	var key [8]byte
	for g := from; g < to; g++ {
		for hop := 1; hop <= PostcardHops; hop++ {
			for f := g * gen; f < (g+1)*gen; f++ {
				binary.LittleEndian.PutUint64(key[:], mix64(uint64(f)^seed))
				c.Add(key[:], hop, uint32(f%1000*PostcardHops+hop), 0)
			}
		}
	}
}

// PostcardFigure is DTA Fig. 14: aggregation success against intermediate flows
// (PostcardInterleavings) for each cache size (PostcardCaches), at least minFlows flows a
// point. each, when set, gets every point as it is measured.
//
// The paper's figure is not described beyond its caption and §6.6; its axes here are a
// choice: x is log₁₀ of the intermediate flows, y the share of paths aggregated whole.
func PostcardFigure(minFlows int, each func(PostcardPoint)) ([]PostcardPoint, *plot.Chart, error) {
	var pts []PostcardPoint
	var sims, anas []plot.Series
	for i, cache := range PostcardCaches {
		sim := plot.Series{Name: fmt.Sprintf("cache %d entries", cache), Points: true}
		// The analysis in the colour of its cache's points, drawn first, without a legend entry.
		ana := plot.Series{Name: fmt.Sprintf("cache %d, (1-1/C)^I", cache), Dashed: true, Like: len(PostcardCaches) + i + 1}
		for _, inter := range PostcardInterleavings {
			p, err := SimPostcard(cache, inter, minFlows, uint64(i+1))
			if err != nil {
				return nil, nil, err
			}
			pts = append(pts, p)
			x := math.Log10(float64(inter))
			sim.X, sim.Y = append(sim.X, x), append(sim.Y, p.Success)
			ana.X, ana.Y = append(ana.X, x), append(ana.Y, p.Expected)
			if each != nil {
				each(p)
			}
		}
		sims, anas = append(sims, sim), append(anas, ana)
	}
	series := append(anas, sims...)
	return pts, &plot.Chart{
		Title: "Postcard aggregation vs intermediate flows and cache size (DTA Fig. 14)",
		Subtitle: fmt.Sprintf("package dta's translator cache (direct mapped) and Postcarding store, 5-hop paths, at least %d flows a point; "+
			"flows in generations of I+1, postcards round robin hop by hop, so that I other flows' postcards arrive between two of one flow's; "+
			"success: paths written with all 5 postcards (early emissions are failures); markers: simulated, dashed in the same colour: (1-1/C)^I", minFlows),
		X:      plot.Axis{Label: "log₁₀ intermediate flows I", Min: 0, Max: 5.5},
		Y:      plot.Axis{Label: "paths aggregated whole", Min: 0, Max: 1, Percent: true},
		Series: series,
	}, nil
}
