package dtasim

import (
	"reflect"
	"testing"

	"github.com/intake-int/intake/internal/dta"
)

// TestCompactMatchesStore: the compact model answers every query exactly as package dta's
// store does (status, votes, candidates, value), for keys inserted and never inserted, over
// redundancies 1-8, checksums narrow enough that foreign and empty slots match (2 and 8 bits)
// and 32 bits, one-word and multi-word slots, loads up to 2.
func TestCompactMatchesStore(t *testing.T) {
	cases, wrong, empty, ambiguous := 0, 0, 0, 0
	for _, slots := range []int{1 << 6, 1 << 10} {
		for _, n := range []int{1, 2, 3, 4, 8} {
			for _, b := range []int{2, 8, 32} {
				for _, vb := range []int{1, 4, 20} {
					for _, load := range []float64{0.3, 1, 2} {
						c := SimConfig{Slots: slots, Keys: int(load * float64(slots)), N: n, Bits: b, ValueBytes: vb, Seed: uint64(slots*n + b)}
						w, e, a := compareStores(t, c)
						cases, wrong, empty, ambiguous = cases+1, wrong+w, empty+e, ambiguous+a
					}
				}
			}
		}
	}
	// The comparison covers every outcome, not only the easy one.
	if wrong == 0 || empty == 0 || ambiguous == 0 {
		t.Errorf("%d cases: %d wrong, %d not found, %d ambiguous answers: an outcome is never compared", cases, wrong, empty, ambiguous)
	}
}

func compareStores(t *testing.T, c SimConfig) (wrong, empty, ambiguous int) {
	t.Helper()
	rc := c
	rc.Store = StoreReal
	real, err := newKWSim(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer real.close()
	model, err := newKWSim(c)
	if err != nil {
		t.Fatal(err)
	}
	defer model.close()
	if real.size() != model.size() {
		t.Fatalf("%+v: size %d, model %d", c, real.size(), model.size())
	}
	for i := range c.Keys {
		real.insert(i)
		model.insert(i)
	}
	var ids []int
	for i := range c.Keys + c.Slots/2 { // the last Slots/2 were never inserted
		ids = append(ids, i)
	}
	var ro, mo [queryGroup]dta.KWResult
	for len(ids) > 0 {
		g := min(len(ids), queryGroup)
		real.query(ids[:g], ro[:g])
		model.query(ids[:g], mo[:g])
		for j := range g {
			if ro[j] != mo[j] {
				t.Fatalf("%+v key %d: store %+v, model %+v", c, ids[j], ro[j], mo[j])
			}
			v := simValue(c.Seed, ids[j], c.ValueBytes)
			switch {
			case ro[j].Status == dta.NotFound:
				empty++
			case ro[j].Status == dta.Ambiguous:
				ambiguous++
			case ids[j] >= c.Keys || string(ro[j].Bytes()) != string(v[:c.ValueBytes]):
				wrong++
			}
		}
		ids = ids[g:]
	}
	return
}

// A whole run gives the same result on either store.
func TestSimKWStores(t *testing.T) {
	c := SimConfig{Slots: 1 << 12, Keys: 6000, N: 2, Bits: 8, ValueBytes: 20, Buckets: 10, Seed: 5}
	m, err := SimKW(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Store = StoreReal
	r, err := SimKW(c)
	if err != nil {
		t.Fatal(err)
	}
	r.Config.Store = ""
	if !reflect.DeepEqual(r, m) || r.Wrong == 0 {
		t.Errorf("real %+v\nmodel %+v", r, m)
	}
	if _, err := SimKW(SimConfig{Slots: 64, Keys: 1, N: 1, Bits: 8, ValueBytes: 4, Store: "disk"}); err == nil || err.Error() != `sim: store "disk": allowed are compact and real` {
		t.Errorf("store disk: %v", err)
	}
}
