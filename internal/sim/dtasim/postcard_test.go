package dtasim

import (
	"fmt"
	"testing"
)

// The translator's cache aggregates a flow's 5 postcards exactly when none of the I
// intermediate flows takes its line: the rate follows (1-1/C)^I within sampling error.
func TestSimPostcard(t *testing.T) {
	for _, c := range []struct{ cache, inter int }{{1 << 15, 1}, {1 << 10, 1000}, {1 << 10, 100}, {1 << 12, 10000}} {
		p, err := SimPostcard(c.cache, c.inter, 40000, 3)
		if err != nil {
			t.Fatal(err)
		}
		gen := c.inter + 1
		if p.Flows%gen != 0 || p.Flows < 40000 || p.Flows >= 40000+gen {
			t.Errorf("%+v: flows %d not whole generations of %d", c, p.Flows, gen)
		}
		if d := p.Success - p.Expected; d*d > 16*StdErr(p.Expected, p.Flows)*StdErr(p.Expected, p.Flows)+1e-12 {
			t.Errorf("%+v: success %.4f, analysis %.4f (±%.4f)", c, p.Success, p.Expected, StdErr(p.Expected, p.Flows))
		}
	}
	// Exact ends: one flow at a time always aggregates; two flows on a one-entry cache take
	// the line from each other at every postcard and never do.
	if p, err := SimPostcard(1<<10, 0, 1000, 1); err != nil || p.Complete != 1000 || p.Early != 0 || p.Success != 1 || p.Expected != 1 {
		t.Errorf("no interleaving: %+v %v", p, err)
	}
	if p, err := SimPostcard(1, 1, 1000, 1); err != nil || p.Complete != 0 || p.Success != 0 || p.Expected != 0 || p.Early < 1000*5-1 {
		t.Errorf("one entry, two flows: %+v %v", p, err)
	}
}

// BenchmarkPostcardAggregation is the translator cache's rate in software, one core: each
// op is one flow's 5 postcards through PostcardCache.Add (DTA §6.6's interleaving, cache
// 2¹⁵ entries as the prototype's), chunks written to a store in anonymous memory. It reports
// whole paths and postcards a second of wall clock.
func BenchmarkPostcardAggregation(b *testing.B) {
	for _, inter := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprintf("intermediate=%d", inter), func(b *testing.B) {
			c, done, err := newPostcardCache(1<<15, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer done()
			gen := inter + 1
			gens := (b.N + gen - 1) / gen
			b.ReportAllocs()
			b.ResetTimer()
			aggregate(c, gen, 0, gens, 1)
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(c.Complete.Load())/s, "paths/s")
			b.ReportMetric(float64(gens*gen*PostcardHops)/s, "postcards/s")
		})
	}
}
