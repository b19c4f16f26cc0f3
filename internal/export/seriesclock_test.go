package export

import (
	"fmt"
	"testing"
)

// TestSeriesClock: a series' points come out at strictly increasing times (a point not
// later than the last is moved one unit after it), other series are not moved, and series
// idle beyond the horizon are forgotten when the map is pruned while live ones are kept.
func TestSeriesClock(t *testing.T) {
	c := NewSeriesClock(1e6) // milliseconds: the horizon is 60,000
	a, b := []byte("a"), []byte("b")
	for i, want := range []int64{10, 11, 12, 20, 21} {
		in := []int64{10, 10, 10, 20, 15}[i]
		if got := c.At(a, in); got != want {
			t.Fatalf("point %d of a at %d: written at %d, want %d", i, in, got, want)
		}
	}
	if got := c.At(b, 10); got != 10 {
		t.Fatalf("b at 10: written at %d, a's points must not move it", got)
	}
	// Fill the map to its prune size with series written at 100,000 (beyond the horizon of
	// a and b, at 21 and 10), keeping b alive at 90,000.
	c.At(b, 90000)
	for i := 0; len(c.last) < c.pruneAt-1; i++ {
		c.At([]byte(fmt.Sprint("s", i)), 100000)
	}
	n := len(c.last)
	c.At([]byte("last"), 100000) // reaches pruneAt: prune
	if _, ok := c.last[c.hash(a)]; ok {
		t.Error("a, idle beyond the horizon, was kept")
	}
	if _, ok := c.last[c.hash(b)]; !ok || len(c.last) != n {
		t.Errorf("after the prune %d series (b kept: %v), want %d", len(c.last), ok, n)
	}
	if got := c.At(a, 5); got != 5 {
		t.Errorf("a, forgotten, at 5: written at %d", got)
	}
}
