package dtasim

import "testing"

// TestSimKWProgressEnds: SimKW's last progress call is (total, total), whatever the number
// of operations: a bar reaches 100 %. Before, the calls came every 2^20 operations only: a
// run of 1.5 × 2^20 operations ended its bar at 67 %, and this one had none.
func TestSimKWProgressEnds(t *testing.T) {
	var calls, last [2]int
	_, err := SimKW(SimConfig{Slots: 1 << 12, Keys: 3000, N: 2, Bits: 32, ValueBytes: 4, MaxQueries: 500, Seed: 1,
		Progress: func(done, total int) { calls[0]++; last = [2]int{done, total} }})
	if err != nil {
		t.Fatal(err)
	}
	if total := 3000 + 3000/6; last != [2]int{total, total} {
		t.Errorf("%d calls, the last (%d, %d), want (%d, %d)", calls[0], last[0], last[1], total, total)
	}
}
