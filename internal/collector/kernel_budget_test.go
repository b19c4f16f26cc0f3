package collector

import (
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/xdp"
)

// TestKernelBudget: with detect.kernel, the detector's memory budget counts the kernel's
// tables as the XDP program's maps are sized (the tables the collector asks package xdp
// for), outside the Go heap; without it, not at all.
func TestKernelBudget(t *testing.T) {
	for _, c := range []struct{ flows, keys, shards int }{{1, 1, 1}, {1000, 300, 4}, {65536, 4096, 8}, {1 << 20, 1 << 16, 16}} {
		cfg := detect.DefaultConfig()
		cfg.MaxFlows, cfg.MaxKeys, cfg.Shards = c.flows, c.keys, c.shards
		if n := countKernel(cfg.Budget(1)); n != 0 {
			t.Errorf("%+v without detect.kernel: %d kernel items", c, n)
		}
		cfg.Kernel = true
		flows, keys := xdp.Detect{MaxFlows: detect.Capacity(cfg.MaxFlows, cfg.Shards), MaxKeys: detect.Capacity(cfg.MaxKeys, cfg.Shards)}.TableBytes()
		got := map[string]int64{}
		for _, it := range cfg.Budget(1) {
			if it.Component == "detect" && strings.HasPrefix(it.Part, "kernel ") {
				if !it.Outside {
					t.Errorf("%+v: %s counted in the Go heap", c, it.Part)
				}
				got[it.Part] = it.Memory
			}
		}
		if got["kernel flow table"] != int64(flows) || got["kernel switch-key table"] != int64(keys) || got["kernel event ring"] != 4<<20 {
			t.Errorf("%+v: budget %v, want flows %d, keys %d, ring %d", c, got, flows, keys, 4<<20)
		}
	}
}

func countKernel(b budget.Budget) int {
	n := 0
	for _, it := range b {
		if it.Component == "detect" && strings.HasPrefix(it.Part, "kernel ") {
			n++
		}
	}
	return n
}
