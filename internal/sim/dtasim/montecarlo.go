package dtasim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/intake-int/intake/internal/dta"
)

// The Monte Carlo behind `intake sim dta` (DART §5.1-5.2, DTA §6.5.2-6.5.3): K distinct keys
// are inserted, oldest first, into a Key-Write store of M slots, then queried; each answer is
// success (the inserted value), empty (not found or ambiguous) or wrong, tallied by key age
// (later inserts / M = α). The store is either the collector's own (dta.AnonRegion: anonymous
// memory, package dta's code) or, by default, its compact model, which answers every query
// as the real one does in a sixth of the memory (compact.go).

// SimConfig is one Monte Carlo run.
type SimConfig struct {
	Slots      int    `json:"slots"`
	Keys       int    `json:"keys"`
	N          int    `json:"n"`
	Bits       int    `json:"bits"`
	ValueBytes int    `json:"value_bytes"`
	Buckets    int    `json:"buckets"`
	MaxQueries int    `json:"max_queries"` // query every key up to this many, else an even sample
	Seed       uint64 `json:"seed"`
	// Store is the store written: StoreCompact ("", the default) or StoreReal (compact.go).
	Store string `json:"store,omitempty"`
	// Progress, when set, is called now and then with the operations done and the total.
	Progress func(done, total int) `json:"-"`
}

// SimBucket is one age range.
type SimBucket struct {
	AlphaFrom float64 `json:"alpha_from"`
	AlphaTo   float64 `json:"alpha_to"`
	Queries   int     `json:"queries"`
	Success   float64 `json:"success"`
	Empty     float64 `json:"empty"`
	Wrong     float64 `json:"wrong"`
	// Bound is the analysis at the bucket's mean α: 1 - eqs.(1-3) - eq.(4).
	Bound      float64 `json:"bound_success"`
	BoundEmpty float64 `json:"bound_empty"`
}

// SimResult is a run's outcome: averages over all queried keys, the buckets, and the oldest
// bucket.
type SimResult struct {
	Config   SimConfig   `json:"config"`
	Load     float64     `json:"load_factor"`
	Bytes    int         `json:"store_bytes"`
	Queries  int         `json:"queries"`
	Success  float64     `json:"success"`
	Empty    float64     `json:"empty"`
	Wrong    float64     `json:"wrong"`
	Expected float64     `json:"bound_success"` // the analysis averaged over the ages queried
	Oldest   SimBucket   `json:"oldest"`
	Buckets  []SimBucket `json:"buckets"`
}

// mix64 is the splitmix64 finalizer, a bijection with full avalanche: the keys it makes from
// distinct indices are distinct. (It is the mixer of dta's hash too, but the two need not
// agree: the keys only have to be distinct and look random.)
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

func simKey(seed uint64, i int) (k [8]byte) {
	binary.LittleEndian.PutUint64(k[:], mix64(uint64(i)^seed))
	return
}

func simValue(seed uint64, i int, w int) (v [32]byte) {
	for j := 0; j < w; j += 8 {
		binary.LittleEndian.PutUint64(v[j:], mix64(uint64(i)*0x2545F4914F6CDD1D+uint64(j)+seed+1))
	}
	return
}

func pow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// SimKW runs one Monte Carlo.
func SimKW(c SimConfig) (SimResult, error) {
	if !pow2(c.Slots) || c.Keys < 1 || c.N < 1 || c.N > 8 || c.Bits < 1 || c.Bits > 32 || c.ValueBytes < 1 || c.ValueBytes > 32 {
		return SimResult{}, fmt.Errorf("sim: slots must be a power of two, keys ≥ 1, n 1-8, bits 1-32, value bytes 1-32")
	}
	if c.Buckets < 1 {
		c.Buckets = 20
	}
	if c.MaxQueries < 1 {
		c.MaxQueries = 10_000_000
	}
	if c.Store != "" && c.Store != StoreCompact && c.Store != StoreReal {
		return SimResult{}, fmt.Errorf("sim: store %q: allowed are compact and real", c.Store)
	}
	s, err := newKWSim(c)
	if err != nil {
		return SimResult{}, err
	}
	defer s.close()
	step := max(1, (c.Keys+c.MaxQueries-1)/c.MaxQueries)
	total := c.Keys + c.Keys/step
	done := 0
	tick := func() {
		done++
		if c.Progress != nil && done&(1<<20-1) == 0 {
			c.Progress(done, total)
		}
	}
	for i := 0; i < c.Keys; i++ {
		s.insert(i)
		tick()
	}
	res := SimResult{Config: c, Load: float64(c.Keys) / float64(c.Slots), Bytes: s.size()}
	type acc struct {
		q, ok, empty, wrong int
		alphaSum            float64
	}
	bs := make([]acc, c.Buckets)
	M := float64(c.Slots)
	// Queries go a group at a time, which keeps their cache misses in flight together.
	var ids [queryGroup]int
	var out [queryGroup]dta.KWResult
	for i := 0; i < c.Keys; {
		g := 0
		for ; g < queryGroup && i < c.Keys; i += step {
			ids[g] = i
			g++
		}
		s.query(ids[:g], out[:g])
		for j := range g {
			i := ids[j]
			v := simValue(c.Seed, i, c.ValueBytes)
			age := c.Keys - 1 - i
			b := &bs[min(c.Buckets-1, age*c.Buckets/c.Keys)]
			a := &out[j]
			b.q++
			b.alphaSum += float64(age) / M
			res.Expected += KWSuccess(c.N, float64(age)/M, c.Bits)
			switch {
			case a.Status != dta.Found:
				b.empty++
			case bytes.Equal(a.Bytes(), v[:c.ValueBytes]):
				b.ok++
			default:
				b.wrong++
			}
			tick()
		}
	}
	if c.Progress != nil { // the ticks above report every 2^20 operations: say the end
		c.Progress(total, total)
	}
	var q, ok, empty, wrong int
	for i, b := range bs {
		sb := SimBucket{AlphaFrom: float64(i*c.Keys/c.Buckets) / M, AlphaTo: float64((i+1)*c.Keys/c.Buckets) / M, Queries: b.q}
		if b.q > 0 {
			sb.Success, sb.Empty, sb.Wrong = float64(b.ok)/float64(b.q), float64(b.empty)/float64(b.q), float64(b.wrong)/float64(b.q)
			mean := b.alphaSum / float64(b.q)
			sb.Bound, sb.BoundEmpty = KWSuccess(c.N, mean, c.Bits), KWEmpty(c.N, mean, c.Bits)
		}
		res.Buckets = append(res.Buckets, sb)
		q, ok, empty, wrong = q+b.q, ok+b.ok, empty+b.empty, wrong+b.wrong
	}
	res.Queries = q
	res.Success, res.Empty, res.Wrong = float64(ok)/float64(q), float64(empty)/float64(q), float64(wrong)/float64(q)
	res.Expected /= float64(q)
	res.Oldest = res.Buckets[len(res.Buckets)-1]
	return res, nil
}

// StdErr is the sampling standard error of a rate p measured over n trials.
func StdErr(p float64, n int) float64 { return math.Sqrt(p * (1 - p) / float64(max(n, 1))) }
