package flowcache

import (
	"runtime"
	"testing"

	"github.com/intake-int/intake/internal/budget"
)

// TestBudget: the budget is what New allocates, and the geometries that blew up at start
// (rings touching 126 GB, 2^24 rows of 64 buckets) are counted in full, not wrapped around.
func TestBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Rows, cfg.RingEntries, cfg.Histograms.MaxSwitches = 256, 64, 16
	f := New(cfg, Deps{Workers: 3})
	var rings int64
	for _, r := range f.rings.rings {
		rings += int64(len(r.mem)) * 8
	}
	var hist int64 = int64(len(f.hist.slots)) * 8
	for _, s := range f.hist.shards {
		hist += int64(len(s)) * 8
	}
	b := cfg.Budget(3)
	want := map[string]int64{"table": int64(len(f.t.mem)) * 8, "rings": rings, "histograms": hist}
	for _, it := range b {
		if it.Memory != want[it.Part] {
			t.Errorf("%s: budget %d, allocated %d", it.Part, it.Memory, want[it.Part])
		}
	}
	if len(b) != 3 {
		t.Errorf("%d items", len(b))
	}

	big := DefaultConfig()
	big.Rings, big.RingEntries, big.MaxHops = MaxRings, MaxRingEntries, 32
	if got := big.Budget(2)[1].Memory; got != 64*(1<<20)*(16+80+56*32) {
		t.Errorf("64 rings of 2^20 records of 32 hops: %s", budget.Bytes(got))
	}
	big = DefaultConfig()
	big.Rows, big.Buckets = MaxRows, MaxBuckets
	if got := big.Budget(2)[0].Memory; got != int64(MaxRows)*int64(rowWords(MaxBuckets, 5))*8 || got < 300<<30 {
		t.Errorf("2^24 rows of 64 buckets: %s", budget.Bytes(got))
	}
	k := DefaultConfig()
	k.Kernel = true
	kb := k.Budget(2)
	if len(kb) != 6 || kb[3].Part != "kernel table" || kb[3].Memory != kb[0].Memory || kb[4].Memory != 8<<20 ||
		kb[5].Memory != int64(runtime.NumCPU())*1025*3*64*8 {
		t.Errorf("flowcache.kernel: %+v", kb)
	}
	off := DefaultConfig()
	off.Enabled = false
	if b := off.Budget(2); b != nil {
		t.Errorf("disabled: %v", b)
	}
}
