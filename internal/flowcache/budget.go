package flowcache

import (
	"fmt"
	"runtime"

	"github.com/intake-int/intake/internal/budget"
	"github.com/intake-int/intake/record"
)

// hugeMin is the smallest table allocWords maps (table_unix.go) rather than takes from the
// Go heap.
const hugeMin = 4 << 20

// Budget is the memory the flow cache takes with workers receive workers: the table (one
// allocation, counted in full although only the rows that hold flows become resident), the
// eviction rings and the histograms (docs/config.md, "Budget").
func (c *Config) Budget(workers int) budget.Budget {
	if !c.Enabled {
		return nil
	}
	rowBytes := int64(rowWords(c.Buckets, c.MaxHops)) * 8
	slotBytes := int64(2+bucketWords(c.MaxHops)) * 8
	n := 2
	for n < 2*c.Histograms.MaxSwitches {
		n <<= 1
	}
	shards := int64(min(max(workers, 1), maxHistShards))
	perShard := budget.Mul(int64(c.Histograms.MaxSwitches)*int64(record.NumMetrics)+1, int64(c.Histograms.Bins), 8)
	b := budget.Budget{
		{Component: "flowcache", Part: "table", Memory: budget.Mul(int64(c.Rows), rowBytes), Outside: c.Rows*int(rowBytes) >= hugeMin, // mapped (allocWords)
			Note: fmt.Sprintf("%d rows × %d B (%d buckets, %d hops)", c.Rows, rowBytes, c.Buckets, c.MaxHops)},
		{Component: "flowcache", Part: "rings", Memory: budget.Mul(int64(c.Rings), int64(c.RingEntries), slotBytes),
			Note: fmt.Sprintf("%d rings × %d records × %d B", c.Rings, c.RingEntries, slotBytes)},
		{Component: "flowcache", Part: "histograms", Memory: budget.Add(budget.Mul(shards, perShard), int64(n)*8),
			Note: fmt.Sprintf("%d shards × %d switches × %d bins", shards, c.Histograms.MaxSwitches, c.Histograms.Bins)},
	}
	if !c.Kernel {
		return b
	}
	// flowcache.kernel: the program's table, ring and histograms (per CPU) are BPF memory,
	// beside the cache's own (which keeps the reports the program does not parse).
	cpus := int64(runtime.NumCPU())
	return append(b,
		budget.Item{Outside: true, Component: "flowcache", Part: "kernel table", Memory: budget.Mul(int64(c.Rows), rowBytes),
			Note: fmt.Sprintf("BPF array of %d rows × %d B", c.Rows, rowBytes)},
		budget.Item{Outside: true, Component: "flowcache", Part: "kernel ring", Memory: int64(c.KernelRing()),
			Note: fmt.Sprintf("BPF ring buffer for %d records", c.Rings*c.RingEntries)},
		budget.Item{Outside: true, Component: "flowcache", Part: "kernel histograms", Memory: budget.Mul(cpus, int64(c.Histograms.MaxSwitches+1)*int64(record.NumMetrics), int64(c.Histograms.Bins)*8),
			Note: fmt.Sprintf("%d CPUs × %d switches × %d bins", cpus, c.Histograms.MaxSwitches, c.Histograms.Bins)})
}

// KernelRing is the size in bytes of the kernel's eviction ring (flowcache.kernel): a BPF
// ring buffer (a power of two) with room for as many records as the rings hold.
func (c *Config) KernelRing() int {
	need := int64(c.Rings) * int64(c.RingEntries) * int64(16+bucketWords(c.MaxHops)*8) // 8-byte header and the reason
	n := int64(4096)
	for n < need {
		n <<= 1
	}
	return int(n)
}
